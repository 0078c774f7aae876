// Why: the console's one way to the gateway: each call of the basaltic API goes through api()
// with the key in the Authorization header, and every failure becomes one error with its text.

import { state } from './session.js';
import { signOut } from './page.js';

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** A mistake in a form, caught before any request. */
export class InputError extends Error {}

export function describe(err) {
  if (err instanceof ApiError) return `${err.code}: ${err.message}`;
  if (err instanceof InputError) return `invalid_input: ${err.message}`;
  if (err instanceof TypeError) return `network_error: the gateway did not answer (${err.message})`;
  return String((err && err.message) || err);
}

/** One call of the basaltic API with the key; answers the JSON (null for 204), throws ApiError. */
export async function api(method, path, body, key = state.key) {
  const { text, status } = await call(method, path, body, key, 'application/json');
  if (status === 204) return null;
  try {
    return text ? JSON.parse(text) : null;
  } catch (_) {
    return null;
  }
}

/** One call answered as text (an export's JSON lines) with its headers; throws ApiError. */
export async function apiText(method, path, key = state.key) {
  return call(method, path, undefined, key, 'application/x-ndjson, application/json');
}

async function call(method, path, body, key, accept) {
  const headers = { Authorization: `Bearer ${key}`, Accept: accept };
  const init = { method, headers, cache: 'no-store', credentials: 'omit', redirect: 'error' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const text = response.status === 204 ? '' : await response.text();
  if (!response.ok) {
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch (_) {
      data = null;
    }
    const e = (data && data.error) || {};
    const err = new ApiError(response.status, e.code || `http_${response.status}`,
      e.message || response.statusText || 'the gateway gave no reason');
    if (response.status === 401 && key === state.key) {
      err.handled = true;
      signOut(describe(err));
    }
    throw err;
  }
  return { text, status: response.status, headers: response.headers };
}

export const queuePath = (id, rest = '') => `/v1/queues/${encodeURIComponent(id)}${rest}`;

export function deadLetterOf(queue) {
  return (queue.settings && queue.settings.dead_letter_queue) || null;
}
