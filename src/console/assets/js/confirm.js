// Why: a destructive action (purge, delete) runs only once the thing's name is typed in a modal
// dialog that Enter and Escape work in and that gives focus back when it closes.

import { uid, h, field } from './dom.js';
import { showError, clearAlert } from './notices.js';

/** A confirmation that stays disabled until the name (the queue's, unless `what` says) is typed. */
export function confirmByName({ opener, title, text, name, verb, action, what = 'queue’s name' }) {
  const titleId = uid('dialog');
  const input = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', testid: 'confirm-input' });
  const ok = h('button', { type: 'submit', class: 'danger', disabled: true, testid: 'confirm-button' }, verb);
  const cancel = h('button', { type: 'button', class: 'secondary', testid: 'confirm-cancel' }, 'Cancel');
  const form = h('form', { novalidate: true },
    h('h2', { id: titleId }, title),
    h('p', {}, text),
    field(`Type the ${what}, ${name}, to confirm`, input),
    h('div', { class: 'actions' }, ok, cancel));
  const dialog = h('dialog', { class: 'confirm', testid: 'confirm-dialog', 'aria-labelledby': titleId }, form);
  input.addEventListener('input', () => {
    ok.disabled = input.value !== name;
  });
  cancel.addEventListener('click', () => dialog.close());
  dialog.addEventListener('close', () => {
    dialog.remove();
    if (opener && opener.isConnected) opener.focus();
  });
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (input.value !== name) return;
    clearAlert();
    ok.disabled = true;
    try {
      await action();
      dialog.close();
    } catch (err) {
      dialog.close();
      showError(err);
    }
  });
  document.body.append(dialog);
  dialog.showModal();
  input.focus();
}
