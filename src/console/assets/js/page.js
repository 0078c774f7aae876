// Why: what every page shares: replacing the page (its scope ended), moving focus, navigating,
// the signed-in name in the header and signing out. The router registers itself here, so pages
// can navigate without importing it (no import cycle).

import { $, fill } from './dom.js';
import { state, forgetKey } from './session.js';
import { forgetZone } from './clock.js';
import { Scope } from './scope.js';

let router = () => {};

/** Registers what shows the page the address names (the router, once, at start). */
export function routeWith(fn) {
  router = fn;
}

/** Shows the page the address names again. */
const reroute = () => router();

export function newPage(extra) {
  if (state.page) state.page.scope.end();
  state.page = { scope: new Scope(), ...extra };
  return state.page.scope;
}

export function navigate(hash) {
  if (location.hash === hash) reroute();
  else location.hash = hash;
}

export const main = () => $('main');

export function showPage(...nodes) {
  fill(main(), ...nodes);
  // Focus was on something the new page replaced: move it to the new page's heading.
  const heading = main().querySelector('h1');
  if (heading && (!document.activeElement || document.activeElement === document.body)) {
    heading.focus({ preventScroll: true });
  }
}

export function updateWho() {
  const signedIn = Boolean(state.key && state.me);
  $('who').hidden = !signedIn;
  $('who-name').textContent = signedIn ? state.me.name || state.me.id : '';
}

/** Forgets the key and the console's choices (sessionStorage included) and shows sign-in, with why when there is a reason. */
export function signOut(reason) {
  forgetKey();
  forgetZone();
  state.me = null;
  state.queues = null;
  if (reason) {
    state.signInMessage = reason;
    if (location.hash !== '#/signin') state.afterSignIn = location.hash;
  }
  updateWho();
  if (location.hash === '#/signin') reroute();
  else location.hash = '#/signin';
}
