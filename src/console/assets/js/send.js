// Why: the Send tab: a body, typed attributes and the queue type's own fields (delay, or a FIFO
// queue's group and deduplication ids), checked as the API would before the request; below it,
// the import of a JSON-lines file.

import { h, fill, field, guarded } from './dom.js';
import { reasonFor } from './session.js';
import { api, queuePath, InputError } from './api.js';
import { showError, clearAlert, say } from './notices.js';
import { parseWhole, checkAttributes } from './rules.js';
import { importForm } from './import.js';

const MAX_ATTRIBUTES = 20;

export function renderSend(panel, ctx, scope) {
  const q = ctx.q;
  const fifo = q.type === 'fifo';
  const body = h('textarea', { rows: '6', spellcheck: 'false', testid: 'send-body' });
  const rowsBox = h('div', { class: 'attr-rows', testid: 'attr-rows' });
  const rows = [];
  const addButton = h('button', { type: 'button', class: 'secondary', testid: 'add-attribute' }, 'Add attribute');
  const attrCount = h('span', { class: 'muted small', 'aria-live': 'polite' });
  function renumber() {
    rows.forEach((row, i) => {
      row.legend.textContent = `Attribute ${i + 1}`;
      row.remove.setAttribute('aria-label', `Remove attribute ${i + 1}`);
    });
    addButton.disabled = rows.length >= MAX_ATTRIBUTES;
    attrCount.textContent = rows.length >= MAX_ATTRIBUTES ? `${MAX_ATTRIBUTES} attributes: the most a message carries` : `${rows.length} of ${MAX_ATTRIBUTES} attributes`;
  }
  function addRow() {
    if (rows.length >= MAX_ATTRIBUTES) return;
    const row = {
      name: h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', testid: 'attr-name' }),
      type: h('select', { testid: 'attr-type' }, ['String', 'Number', 'Binary'].map((t) => h('option', { value: t }, t))),
      value: h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', testid: 'attr-value' }),
      legend: h('legend', {}),
      remove: h('button', { type: 'button', class: 'secondary small', testid: 'attr-remove' }, 'Remove'),
    };
    row.el = h('fieldset', { class: 'attr-row', testid: 'attr-row' }, row.legend,
      field('Name', row.name), field('Type', row.type), field('Value', row.value, null), row.remove);
    row.type.addEventListener('change', () => {
      row.value.placeholder = row.type.value === 'Binary' ? 'base64' : '';
    });
    row.remove.addEventListener('click', () => {
      rows.splice(rows.indexOf(row), 1);
      row.el.remove();
      renumber();
      addButton.focus();
    });
    rows.push(row);
    rowsBox.append(row.el);
    renumber();
    row.name.focus();
  }
  addButton.addEventListener('click', addRow);
  renumber();

  const delay = h('input', { type: 'number', inputmode: 'numeric', min: '0', max: '900', placeholder: String(q.settings.delay_seconds), testid: 'send-delay' });
  const group = h('input', { type: 'text', autocomplete: 'off', testid: 'send-group-id' });
  const dedup = h('input', { type: 'text', autocomplete: 'off', testid: 'send-dedup-id' });
  const contentDedup = Boolean(q.settings.content_based_deduplication);
  const submit = h('button', { type: 'submit', testid: 'send-submit' }, 'Send');
  const result = h('p', { class: 'result', hidden: true, testid: 'send-result' });
  const form = h('form', { novalidate: true, testid: 'send-form' },
    field('Body', body),
    h('fieldset', {}, h('legend', {}, 'Attributes'), rowsBox, h('div', { class: 'actions' }, addButton, attrCount)),
    fifo
      ? h('div', { class: 'grid' },
        field('Group id (required)', group),
        field(contentDedup ? 'Deduplication id (optional)' : 'Deduplication id (required)', dedup,
          contentDedup ? 'this queue deduplicates by content when none is given' : 'this queue does not deduplicate by content'))
      : h('div', { class: 'grid' }, field('Delay (seconds)', delay, `0–900; empty: the queue’s ${q.settings.delay_seconds} s`)),
    h('div', { class: 'actions' }, guarded(submit, reasonFor(q, 'send'))),
    result);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearAlert();
    let request;
    try {
      request = { body: body.value };
      if (rows.length) request.attributes = checkAttributes(rows);
      if (fifo) {
        if (!group.value) throw new InputError('a FIFO queue needs a group id');
        request.group_id = group.value;
        if (dedup.value) request.deduplication_id = dedup.value;
        else if (!contentDedup) throw new InputError('this FIFO queue needs a deduplication id (it does not deduplicate by content)');
      } else if (delay.value.trim() !== '') {
        request.delay_seconds = parseWhole(delay.value, 'the delay', 0, 900);
      }
    } catch (err) {
      showError(err);
      return;
    }
    submit.disabled = true;
    try {
      const sent = await api('POST', queuePath(q.id, '/messages'), request);
      fill(result, 'Sent. Message id: ', h('code', { testid: 'sent-message-id' }, sent.result.message_id));
      result.hidden = false;
      say(`Sent message ${sent.result.message_id}.`);
      ctx.refreshQueue();
    } catch (err) {
      showError(err);
    } finally {
      submit.disabled = false;
    }
  });
  fill(panel, h('h2', {}, 'Send a message'), form, importForm(ctx, scope));
}
