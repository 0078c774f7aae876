// Why: the signed-in key and what the console knows while it is open, in one place: the key is
// kept in this tab's sessionStorage only (never localStorage, a cookie or the URL).

const KEY_STORAGE = 'sqsgw.console.key';

export const state = {
  key: sessionStorage.getItem(KEY_STORAGE),
  me: null, // GET /v1/key's result
  queues: null, // the last queue list
  page: null, // the page shown: { scope, queueId?, showTab? }
  signInMessage: null, // why the user is back at sign-in
  flash: null, // a status to show on the next page (what the action that led there did)
  afterSignIn: null, // where to go once signed in
  routeSeq: 0,
};

/** Keeps a key that GET /v1/key accepted, for this tab only. */
export function keepKey(key) {
  state.key = key;
  sessionStorage.setItem(KEY_STORAGE, key);
}

/** Forgets the key, sessionStorage included. */
export function forgetKey() {
  sessionStorage.removeItem(KEY_STORAGE);
  state.key = null;
}

export function globalCan(permission) {
  const grants = (state.me && state.me.grants && state.me.grants['*']) || [];
  return grants.includes('*') || grants.includes(permission);
}

function can(queue, permission) {
  const granted = queue.permissions || [];
  return granted.includes('*') || granted.includes(permission);
}

const needs = (permission) => `needs the ${permission} permission`;
export const reasonFor = (queue, permission) => (can(queue, permission) ? null : needs(permission));
