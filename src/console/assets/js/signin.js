// Why: the sign-in page: a basaltic key checked with GET /v1/key, then kept in this tab only.

import { $, h, fill, field } from './dom.js';
import { state, keepKey } from './session.js';
import { api, InputError } from './api.js';
import { showError, clearAlert } from './notices.js';
import { newPage, navigate, main, updateWho } from './page.js';

export function renderSignIn() {
  newPage({});
  updateWho();
  const input = h('input', { type: 'password', name: 'key', autocomplete: 'off', spellcheck: 'false', testid: 'signin-key' });
  const submit = h('button', { type: 'submit', testid: 'signin-submit' }, 'Sign in');
  const form = h('form', { class: 'card signin', testid: 'signin-form', novalidate: true, 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title', tabindex: '-1' }, 'Sign in'),
    h('p', {}, 'Sign in with a basaltic API key. The console keeps it in this browser tab only ' +
      '(sessionStorage, gone when the tab closes) and sends it only to this gateway’s API; what you can ' +
      'do here is what the key may do.'),
    h('p', { class: 'hint', testid: 'signin-where' }, 'A zero-config gateway keeps one with every permission ' +
      'in sqs-gateway-data/basaltic-key; others are made with ' +
      'sqs-gateway new-basaltic-key. The consumer API key the gateway prints on its first start is an ezgh ' +
      'key, not a basaltic one.'),
    field('API key', input),
    h('div', { class: 'actions' }, submit));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearAlert();
    const key = input.value.trim();
    if (!key) {
      showError(new InputError('enter a key'));
      input.focus();
      return;
    }
    submit.disabled = true;
    try {
      const me = await api('GET', '/v1/key', undefined, key);
      keepKey(key);
      state.me = me.result;
      input.value = '';
      const next = state.afterSignIn && state.afterSignIn !== '#/signin' ? state.afterSignIn : '#/queues';
      state.afterSignIn = null;
      navigate(next);
    } catch (err) {
      showError(err);
      submit.disabled = false;
      input.focus();
      input.select();
    }
  });
  fill(main(), form);
  if (state.signInMessage) {
    $('alert').textContent = state.signInMessage;
    state.signInMessage = null;
  }
  input.focus();
}
