// Why: the push subscriptions that consume a queue, their state and delivery log (no bodies, no
// secrets), shown on its Metrics tab.

import { h, fill } from './dom.js';
import { api, queuePath, describe } from './api.js';
import { timeEl } from './format.js';

/** The queue's push subscriptions and their latest attempts: one request (on opening and Reload). */
export async function loadSubscriptions(q, box, scope) {
  const title = h('h3', {}, 'Push subscriptions');
  try {
    const data = await api('GET', queuePath(q.id, '/subscriptions'));
    if (!scope.alive) return;
    const list = data.subscriptions || [];
    fill(box, title, list.length
      ? list.map(subscriptionCard)
      : h('p', { class: 'muted small', testid: 'subscriptions-none' }, 'No push subscription consumes this queue.'));
  } catch (err) {
    if (scope.alive) fill(box, title, h('p', { class: 'muted small' }, describe(err)));
  }
}

/** One subscription: where it posts, its state, attempts by outcome and its delivery log. */
function subscriptionCard(sub) {
  const outcomes = Object.entries(sub.outcomes || {}).map(([name, count]) => `${name.replace('_', ' ')} ${count}`);
  const log = sub.log || [];
  return h('div', { class: 'card', testid: 'subscription' },
    h('p', {},
      h('strong', {}, sub.name), ' posts to ', h('code', {}, sub.endpoint),
      h('span', { class: `badge push-${sub.state}`, testid: 'subscription-state' }, sub.state.replace('_', ' '))),
    sub.disabled_because ? h('p', { class: 'note error' }, `Disabled: ${sub.disabled_because}.`) : null,
    h('p', { class: 'small', testid: 'subscription-summary' },
      `In flight ${sub.in_flight} (window ${sub.window} of ${sub.max_concurrency}); failures in a row ${sub.failures_in_a_row}; `,
      outcomes.length ? outcomes.join(', ') : 'no attempts yet', '.'),
    log.length ? h('div', { class: 'table-wrap' }, h('table', { testid: 'subscription-log' },
      h('caption', { class: 'muted small' }, 'Latest attempts, newest first (no bodies, no secrets)'),
      h('thead', {}, h('tr', {}, ['When', 'Message', 'Attempt', 'Outcome', 'Status', 'Latency'].map((name) =>
        h('th', { scope: 'col' }, name)))),
      h('tbody', {}, log.map((attempt) => h('tr', { testid: 'subscription-attempt' },
        h('td', {}, timeEl(attempt.at)),
        h('td', {}, h('code', {}, attempt.message_id)),
        h('td', {}, String(attempt.attempt)),
        h('td', {}, attempt.outcome.replace('_', ' ')),
        h('td', {}, attempt.status === null ? '—' : String(attempt.status)),
        h('td', {}, `${attempt.latency_ms} ms`)))))) : null);
}
