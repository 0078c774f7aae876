// Why: the Settings tab's edit form: every setting PATCH /v1/queues/{id} takes, sent as the
// changes only; the API checks the ranges, so a refusal shows in the API's own words.

import { uid, h, field, guarded } from './dom.js';
import { reasonFor } from './session.js';
import { api, queuePath, InputError, deadLetterOf } from './api.js';
import { showError, clearAlert } from './notices.js';
import { SETTINGS, whole } from './rules.js';

const DEFAULT_RECEIVES = 5;
/** The chooser's value for a dead-letter queue that is not a basaltic queue: kept as it is. */
const KEEP = 'keep';

/** The edit form of ctx.q; onSaved(queue, changed) runs with the API's answer and the keys sent. */
export function settingsForm(ctx, onSaved) {
  const q = ctx.q;
  const st = q.settings;
  const reason = reasonFor(q, 'manage_queues');
  const inputs = {};
  const numberFields = SETTINGS.map((setting) => {
    inputs[setting.key] = h('input', {
      type: 'number', inputmode: 'numeric', min: String(setting.min), max: String(setting.max),
      value: st[setting.key] === undefined || st[setting.key] === null ? '' : String(st[setting.key]),
      testid: `edit-${setting.key}`,
    });
    return field(setting.label, inputs[setting.key], `${setting.min}–${setting.max}`);
  });
  const dl = deadLetterOf(q);
  const candidates = ctx.list.filter((o) => o.id !== q.id && o.type === q.type);
  // "none" sends `"dead_letter_queue": null` when the queue has one (PATCH takes it away).
  const dlq = h('select', { class: 'wide', testid: 'edit-dlq' },
    h('option', { value: '' }, 'none'),
    dl && !dl.queue_id ? h('option', { value: KEEP }, 'the current one (not a basaltic queue)') : null,
    candidates.map((o) => h('option', { value: o.id }, o.name)),
    dl && dl.queue_id && !candidates.some((o) => o.id === dl.queue_id) ? h('option', { value: dl.queue_id }, dl.queue_id) : null);
  dlq.value = dl ? dl.queue_id || KEEP : '';
  const maxReceives = h('input', {
    type: 'number', inputmode: 'numeric', min: '1', max: '1000', placeholder: String(DEFAULT_RECEIVES),
    value: dl ? String(dl.max_receive_count) : '', testid: 'edit-max-receive-count', disabled: !dlq.value || dlq.value === KEEP,
  });
  dlq.addEventListener('change', () => {
    maxReceives.disabled = !dlq.value || dlq.value === KEEP;
  });
  const fifo = q.type === 'fifo';
  const dedup = h('input', { type: 'checkbox', id: uid('f'), testid: 'edit-content-dedup', checked: Boolean(st.content_based_deduplication) });
  const submit = h('button', { type: 'submit', testid: 'settings-save' }, 'Save settings');
  const fields = h('fieldset', { class: 'plain', disabled: Boolean(reason), testid: 'settings-fields' },
    h('legend', { class: 'sr-only' }, 'Settings to change'),
    h('div', { class: 'grid' }, numberFields),
    h('fieldset', {}, h('legend', {}, 'Dead-letter queue'),
      h('div', { class: 'grid' },
        field('Move messages to', dlq, dl
          ? 'a listed queue of the same type, or none to take the dead-letter queue away'
          : 'a listed queue of the same type'),
        field('After this many receives', maxReceives, '1–1000, default 5'))),
    fifo ? h('div', { class: 'field check' }, dedup, h('label', { for: dedup.id }, 'Content-based deduplication')) : null);
  const form = h('form', { novalidate: true, testid: 'settings-form', 'aria-labelledby': 'settings-edit-title' },
    h('h3', { id: 'settings-edit-title' }, 'Change settings'),
    fields,
    h('div', { class: 'actions' }, guarded(submit, reason)));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (reason) return;
    clearAlert();
    const settings = {};
    try {
      for (const setting of SETTINGS) {
        const value = whole(inputs[setting.key].value, setting.label);
        if (value !== st[setting.key]) settings[setting.key] = value;
      }
      if (!dlq.value) {
        if (dl) settings.dead_letter_queue = null;
      } else if (dlq.value !== KEEP) {
        const count = maxReceives.value.trim() === '' ? DEFAULT_RECEIVES : whole(maxReceives.value, 'the receive limit');
        if (!dl || dl.queue_id !== dlq.value || dl.max_receive_count !== count) {
          settings.dead_letter_queue = { queue_id: dlq.value, max_receive_count: count };
        }
      }
      if (fifo && dedup.checked !== Boolean(st.content_based_deduplication)) settings.content_based_deduplication = dedup.checked;
    } catch (err) {
      showError(err);
      return;
    }
    const changed = Object.keys(settings);
    if (!changed.length) {
      showError(new InputError('nothing to save: no setting differs from the queue’s'));
      return;
    }
    submit.disabled = true;
    try {
      const answer = await api('PATCH', queuePath(q.id), { settings });
      onSaved(answer.result, changed);
    } catch (err) {
      showError(err);
      submit.disabled = false;
    }
  });
  return form;
}
