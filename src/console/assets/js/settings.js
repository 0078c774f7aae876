// Why: the Settings tab: the queue's settings as the API gives them, the form that changes them,
// the queue's audit trail, and its danger zone (purge and delete, each confirmed by typing the
// queue's name).

import { h, fill, guarded } from './dom.js';
import { state, reasonFor } from './session.js';
import { api, queuePath } from './api.js';
import { say } from './notices.js';
import { navigate } from './page.js';
import { fmtAge, timeEl, plural } from './format.js';
import { settingsForm } from './settings-edit.js';
import { confirmByName } from './confirm.js';
import { renderAudit } from './audit.js';

export function renderSettings(panel, ctx, scope) {
  const q = ctx.q;
  const st = q.settings;
  const dl = st.dead_letter_queue;
  const dlq = dl && dl.queue_id ? ctx.list.find((o) => o.id === dl.queue_id) : null;
  const row = (label, value) => [h('dt', {}, label), h('dd', {}, value)];
  const purge = h('button', { type: 'button', class: 'danger', testid: 'purge' }, 'Purge messages');
  const remove = h('button', { type: 'button', class: 'danger', testid: 'delete-queue' }, 'Delete queue');
  purge.addEventListener('click', () => confirmByName({
    opener: purge,
    title: `Purge ${q.name}?`,
    text: 'Every message of this queue is deleted, in flight included (their receipts become stale). This cannot be undone.',
    name: q.name,
    verb: 'Purge',
    action: async () => {
      await api('POST', queuePath(q.id, '/purge'));
      say(`Purged ${q.name}.`);
      ctx.refreshQueue();
    },
  }));
  remove.addEventListener('click', () => confirmByName({
    opener: remove,
    title: `Delete ${q.name}?`,
    text: 'The queue and all its messages are deleted. This cannot be undone.',
    name: q.name,
    verb: 'Delete queue',
    action: async () => {
      await api('DELETE', queuePath(q.id));
      state.flash = `Deleted queue ${q.name}.`;
      navigate('#/queues');
    },
  }));
  const audit = h('section', { class: 'audit', testid: 'audit', 'aria-labelledby': 'audit-title' });
  renderAudit(audit, ctx, scope);
  fill(panel,
    h('h2', {}, 'Settings'),
    h('dl', { class: 'settings', testid: 'settings-list' },
      row('Type', q.type === 'fifo' ? 'FIFO' : 'standard'),
      row('Delay', `${st.delay_seconds} s`),
      row('Receive wait', `${st.receive_wait_time_seconds} s`),
      row('Visibility timeout', `${st.visibility_timeout_seconds} s`),
      row('Largest message', `${st.max_message_bytes} bytes`),
      row('Retention', fmtAge(st.retention_seconds)),
      row('Dead-letter queue', dl
        ? [dlq ? h('a', { href: `#/queues/${dlq.id}` }, dlq.name) : (dl.queue_id || 'not a basaltic queue'), ` after ${plural(dl.max_receive_count, 'receive')}`]
        : 'none'),
      q.type === 'fifo' ? row('Content-based deduplication', st.content_based_deduplication ? 'on' : 'off') : null,
      row('Created', timeEl(q.created_at)),
      row('This key may', (q.permissions || []).join(', ') || 'nothing')),
    settingsForm(ctx, (saved, changed) => {
      ctx.q = { ...saved, counts: ctx.q.counts };
      ctx.list = ctx.list.map((o) => (o.id === saved.id ? ctx.q : o));
      renderSettings(panel, ctx, scope);
      say(`Saved ${plural(changed.length, 'setting')} of ${saved.name}: ${changed.join(', ')}.`);
      const again = panel.querySelector('[data-testid="settings-save"]');
      if (again) again.focus();
    }),
    audit,
    h('h2', {}, 'Danger zone'),
    h('div', { class: 'danger-zone' },
      h('p', {}, guarded(purge, reasonFor(q, 'purge'))),
      h('p', {}, guarded(remove, reasonFor(q, 'manage_queues')))));
}
