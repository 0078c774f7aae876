// Why: the New queue form of the queue list: name, type, every setting in the API's ranges and a
// dead-letter queue, checked before the one POST /v1/queues.

import { uid, h, fill, field } from './dom.js';
import { state } from './session.js';
import { api, InputError } from './api.js';
import { showError, clearAlert } from './notices.js';
import { parseWhole, SETTINGS } from './rules.js';

export function createQueueForm(onCreated, onCancel) {
  const queues = state.queues || [];
  const name = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', maxlength: '57', testid: 'create-name' });
  const type = h('select', { testid: 'create-type' },
    h('option', { value: 'standard' }, 'standard'), h('option', { value: 'fifo' }, 'FIFO'));
  const inputs = {};
  const settingFields = SETTINGS.map((setting) => {
    inputs[setting.key] = h('input', {
      type: 'number', inputmode: 'numeric', min: String(setting.min), max: String(setting.max),
      placeholder: 'default', testid: `create-${setting.key}`,
    });
    return field(setting.label, inputs[setting.key], `${setting.min}–${setting.max}`);
  });
  const dlq = h('select', { class: 'wide', testid: 'create-dlq' });
  const maxReceives = h('input', { type: 'number', inputmode: 'numeric', min: '1', max: '1000', placeholder: '5', disabled: true, testid: 'create-max-receive-count' });
  const dedup = h('input', { type: 'checkbox', id: uid('f'), testid: 'create-content-dedup' });
  const dedupField = h('div', { class: 'field check', hidden: true }, dedup,
    h('label', { for: dedup.id }, 'Content-based deduplication (FIFO)'));
  function fillDeadLetters() {
    const current = dlq.value;
    fill(dlq, h('option', { value: '' }, 'none'),
      queues.filter((q) => q.type === type.value).map((q) => h('option', { value: q.id }, q.name)));
    dlq.value = [...dlq.options].some((o) => o.value === current) ? current : '';
    maxReceives.disabled = !dlq.value;
  }
  fillDeadLetters();
  type.addEventListener('change', () => {
    fillDeadLetters();
    dedupField.hidden = type.value !== 'fifo';
  });
  dlq.addEventListener('change', () => {
    maxReceives.disabled = !dlq.value;
  });
  const submit = h('button', { type: 'submit', testid: 'create-submit' }, 'Create queue');
  const cancel = h('button', { type: 'button', class: 'secondary', onclick: onCancel }, 'Cancel');
  const form = h('form', { novalidate: true, testid: 'create-form', 'aria-labelledby': 'create-title' },
    h('h2', { id: 'create-title' }, 'New queue'),
    h('div', { class: 'grid' },
      field('Name', name, '1–57 letters, digits and -'),
      field('Type', type)),
    h('fieldset', {}, h('legend', {}, 'Settings (empty: the gateway’s default)'),
      h('div', { class: 'grid' }, settingFields)),
    h('fieldset', {}, h('legend', {}, 'Dead-letter queue'),
      h('div', { class: 'grid' },
        field('Move messages to', dlq, 'a listed queue of the same type'),
        field('After this many receives', maxReceives, '1–1000, default 5')),
      dedupField),
    h('div', { class: 'actions' }, submit, cancel));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearAlert();
    let body;
    try {
      if (!/^[A-Za-z0-9-]{1,57}$/.test(name.value)) throw new InputError('a queue name is 1 to 57 letters, digits and -');
      const settings = {};
      for (const setting of SETTINGS) {
        const raw = inputs[setting.key].value;
        if (raw.trim() !== '') settings[setting.key] = parseWhole(raw, setting.label, setting.min, setting.max);
      }
      if (dlq.value) {
        settings.dead_letter_queue = {
          queue_id: dlq.value,
          max_receive_count: maxReceives.value.trim() === '' ? 5 : parseWhole(maxReceives.value, 'the receive limit', 1, 1000),
        };
      }
      if (type.value === 'fifo' && dedup.checked) settings.content_based_deduplication = true;
      body = { name: name.value, type: type.value, settings };
    } catch (err) {
      showError(err);
      return;
    }
    submit.disabled = true;
    try {
      const created = await api('POST', '/v1/queues', body);
      onCreated(created.result);
    } catch (err) {
      showError(err);
      submit.disabled = false;
    }
  });
  return form;
}
