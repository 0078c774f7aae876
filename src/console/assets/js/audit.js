// Why: the queue's audit trail (GET /v1/queues/{id}/subscription-audit, manage_queues): its push
// subscriptions' changes and its pauses, newest first, a page at a time (More asks for the page
// `before` the last one's `next`); times in the console's chosen zone.

import { h, fill } from './dom.js';
import { reasonFor } from './session.js';
import { api, queuePath, describe } from './api.js';
import { clearAlert } from './notices.js';
import { fmtWhen } from './clock.js';

/** Entries a page. */
const PAGE = 20;

/** What each action of the trail is called on the page. */
const ACTIONS = {
  delivery_paused: 'delivery paused',
  delivery_resumed: 'delivery resumed',
  created: 'created',
  updated: 'updated',
  secret_rotated: 'secret rotated',
  deleted: 'deleted',
  deleted_with_queue: 'deleted with the queue',
  disabled_by_endpoint: 'disabled by its endpoint (410 Gone)',
};

/**
 * The trail's section for queue ctx.q, built into `section`; ctx.reloadAudit reloads it from its
 * newest entry while it is shown (the pause control calls it).
 */
export function renderAudit(section, ctx, scope) {
  const q = ctx.q;
  const titleId = 'audit-title';
  const reason = reasonFor(q, 'manage_queues');
  const heading = h('h2', { id: titleId }, 'Audit trail');
  if (reason) {
    fill(section, heading, h('p', { class: 'note', testid: 'audit-unavailable' },
      `The audit trail ${reason}, which this key does not hold on this queue.`));
    return;
  }
  const tbody = h('tbody', { testid: 'audit-rows' });
  const table = h('table', { class: 'audit', testid: 'audit-table', 'aria-labelledby': titleId },
    h('thead', {}, h('tr', {}, ['When', 'Actor', 'Action', 'Subscription', 'Detail'].map((name) => h('th', { scope: 'col' }, name)))),
    tbody);
  const wrap = h('div', { class: 'table-wrap', role: 'region', 'aria-label': 'Audit trail entries', tabindex: '0' }, table);
  const empty = h('p', { class: 'muted', testid: 'audit-none', hidden: true }, 'Nothing yet: no subscription made through the API has changed, and delivery was never paused.');
  const error = h('p', { class: 'note error', testid: 'audit-error', hidden: true });
  const shown = h('span', { class: 'muted small', testid: 'audit-count', 'aria-live': 'polite' });
  const more = h('button', { type: 'button', class: 'secondary', testid: 'audit-more', hidden: true }, 'More');
  const reload = h('button', { type: 'button', class: 'secondary', testid: 'audit-reload' }, 'Reload');
  let next = null;
  let count = 0;
  let seq = 0; // a load's number: only the latest one's answer is shown
  async function load(before) {
    const mine = ++seq;
    const query = `?limit=${PAGE}${before ? `&before=${encodeURIComponent(before)}` : ''}`;
    more.disabled = true;
    try {
      const data = await api('GET', queuePath(q.id, `/subscription-audit${query}`));
      if (!scope.alive || mine !== seq) return;
      const entries = data.entries || [];
      if (!before) {
        fill(tbody);
        count = 0;
      }
      tbody.append(...entries.map(entryRow));
      count += entries.length;
      next = data.next === undefined || data.next === null ? null : data.next;
      error.hidden = true;
      empty.hidden = count > 0;
      wrap.hidden = count === 0;
      more.hidden = next === null;
      shown.textContent = count ? `${count} shown, newest first${next === null ? '' : '; More shows older ones'}` : '';
    } catch (err) {
      if (!scope.alive || mine !== seq) return;
      error.hidden = false;
      error.textContent = describe(err);
    } finally {
      more.disabled = false;
    }
  }
  more.addEventListener('click', () => load(next));
  reload.addEventListener('click', () => { clearAlert(); load(null); });
  ctx.reloadAudit = () => load(null);
  scope.onEnd(() => {
    if (ctx.reloadAudit) ctx.reloadAudit = null;
  });
  wrap.hidden = true;
  fill(section, heading,
    h('p', { class: 'muted small' }, 'Who changed this queue’s push subscriptions made through the API, and who paused or resumed its delivery.'),
    error, empty, wrap,
    h('div', { class: 'actions' }, more, reload, shown));
  load(null);
}

function entryRow(entry) {
  return h('tr', { testid: 'audit-entry', 'data-action': entry.action },
    h('td', {}, h('time', { datetime: entry.at, title: entry.at }, fmtWhen(entry.at))),
    h('td', {}, h('code', {}, entry.actor)),
    h('td', {}, ACTIONS[entry.action] || entry.action),
    h('td', {}, entry.subscription === null || entry.subscription === undefined ? 'queue' : h('code', {}, entry.subscription)),
    h('td', { class: 'detail' }, entry.detail || '—'));
}
