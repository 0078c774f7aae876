// Why: the page's two message lines (#alert for errors, #status for what an action did), set in
// one place so every page words its errors the same way.

import { $ } from './dom.js';
import { describe } from './api.js';

export function showError(err) {
  if (err && err.handled) return;
  $('status').textContent = '';
  $('alert').textContent = describe(err);
}

export function clearAlert() {
  $('alert').textContent = '';
}

/** Clears both lines: what they said was about the page or tab just left. */
export function clearNotices() {
  $('alert').textContent = '';
  $('status').textContent = '';
}

export function say(text) {
  $('status').textContent = text;
}
