// Why: the console's modal dialogs (new subscription, rotation, a secret shown once) share one
// shape: labelled by their title, closed by Escape or their buttons, removed from the page when
// closed (nothing they showed stays in the DOM), and focus goes back to what opened them (or to
// `fallback` when that is gone or disabled meanwhile).

import { uid, h } from './dom.js';

/** Opens a modal dialog; build(close) answers its content. Answers { dialog, close, error }. */
export function openDialog({ opener, fallback, title, testid, build, onClose }) {
  const titleId = uid('dialog');
  const error = h('p', { class: 'alert', role: 'alert', testid: 'dialog-error' });
  const dialog = h('dialog', { class: 'confirm', testid, 'aria-labelledby': titleId });
  const close = () => {
    if (dialog.open) dialog.close();
  };
  dialog.append(h('h2', { id: titleId }, title), error, build(close));
  dialog.addEventListener('close', () => {
    dialog.remove();
    if (onClose) onClose();
    // A dialog that opened another (a form, then its secret) leaves focus to that one.
    if (document.querySelector('dialog[open]')) return;
    if (opener && opener.isConnected && !opener.disabled) opener.focus();
    else if (fallback && fallback.isConnected) fallback.focus();
  });
  document.body.append(dialog);
  dialog.showModal();
  const first = dialog.querySelector('input, select, textarea, button:not([disabled])');
  if (first) first.focus();
  return { dialog, close, error };
}
