// Why: the address decides the page: #/signin, #/queues, #/queues/<id>/<tab>; without a key it
// is sign-in, and the key is checked (GET /v1/key) once before the first page.

import { h } from './dom.js';
import { state } from './session.js';
import { api } from './api.js';
import { showError, clearAlert, say } from './notices.js';
import { newPage, showPage, updateWho } from './page.js';
import { renderSignIn } from './signin.js';
import { renderQueueList } from './queue-list.js';
import { renderQueuePage } from './queue-page.js';

export async function route() {
  const seq = ++state.routeSeq;
  const hash = location.hash || '#/queues';
  const queueMatch = /^#\/queues\/([0-9a-fA-F-]{32,36})(?:\/([a-z]+))?$/.exec(hash);
  const queueId = queueMatch ? queueMatch[1].toLowerCase() : null;
  if (queueMatch && state.page && state.page.queueId === queueId && state.page.showTab) {
    state.page.showTab(queueMatch[2], false);
    return;
  }
  clearAlert();
  say(state.flash || '');
  state.flash = null;
  if (!state.key) {
    if (hash !== '#/signin') state.afterSignIn = hash;
    renderSignIn();
    return;
  }
  if (!state.me) {
    newPage({});
    showPage(h('p', { class: 'muted' }, 'Checking the key…'));
    try {
      state.me = (await api('GET', '/v1/key')).result;
    } catch (err) {
      if (seq === state.routeSeq) {
        showError(err);
        if (!err.handled) showPage(h('p', {}, h('button', { type: 'button', onclick: () => route() }, 'Try again')));
      }
      return;
    }
    if (seq !== state.routeSeq) return;
  }
  updateWho();
  if (queueMatch) renderQueuePage(queueId, queueMatch[2]);
  else if (hash === '#/queues') renderQueueList();
  else location.replace('#/queues');
}
