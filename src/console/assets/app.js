/**
 * The sqs-gateway web console: a build-free browser client of the gateway's basaltic HTTP API
 * (same origin), served from assets embedded in the binary at /console. This is its entry
 * module (index.html loads it with type="module"): it wires the page up and starts the router;
 * what each page does is in ./js/, one module a concern, loaded by the browser as they are.
 *
 * Why it exists: to let someone holding a basaltic key look at queues and their depth, send,
 * inspect, receive by hand, watch metrics, purge and redrive without a command line. It has no
 * back door: every action is one call of the public API (js/api.js) made with the key the user
 * signed in with, so the key's grants decide what the page can do, as for any other client.
 *
 * Rules every module keeps (the page is served with a strict Content-Security-Policy):
 * - the DOM is built with createElement/textContent only (js/dom.js), never innerHTML: bodies,
 *   attributes and names from the API always show as text and never run;
 * - the key lives in sessionStorage only (js/session.js) and leaves the page only in the
 *   Authorization header;
 * - receipt handles stay in memory (closures) and are shown at most as their first 8 characters;
 * - imports are relative ('./js/x.js'), one statement a line: the gateway serves each module
 *   from a table its tests check against these lines (src/server/console.rs).
 */

import { $ } from './js/dom.js';
import { state } from './js/session.js';
import { routeWith, signOut } from './js/page.js';
import { route } from './js/router.js';

routeWith(route);
$('sign-out').addEventListener('click', () => {
  state.flash = 'Signed out: the key is forgotten.';
  signOut(null);
});
window.addEventListener('hashchange', route);
document.addEventListener('visibilitychange', () => {
  if (!document.hidden && state.page) for (const fn of state.page.scope.visible) fn();
});
route();
