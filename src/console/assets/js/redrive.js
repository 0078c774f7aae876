// Why: the Redrive tab of a dead-letter queue: start a redrive at a rate, follow its progress,
// cancel it, and see the earlier ones.

import { h, fill, field, guarded } from './dom.js';
import { reasonFor } from './session.js';
import { api, queuePath, deadLetterOf } from './api.js';
import { showError, clearAlert, say } from './notices.js';
import { timeEl, plural } from './format.js';
import { parseWhole } from './rules.js';

const REDRIVE_POLL_MS = 2000;

export function renderRedrive(panel, ctx, scope) {
  const q = ctx.q;
  const sources = ctx.list.filter((o) => {
    const dl = deadLetterOf(o);
    return dl && dl.queue_id === q.id;
  });
  const byId = new Map(ctx.list.map((o) => [o.id, o]));
  const destination = h('select', { class: 'wide', testid: 'redrive-destination' },
    h('option', { value: '' }, 'Each message back to the queue it came from'),
    ctx.list.filter((o) => o.id !== q.id && o.type === q.type).map((o) => h('option', { value: o.id }, o.name)));
  const rate = h('input', { type: 'number', inputmode: 'numeric', min: '1', max: '500', placeholder: 'no limit', testid: 'redrive-rate' });
  const start = h('button', { type: 'submit', testid: 'redrive-start' }, 'Start redrive');
  const taskBox = h('div', { class: 'task', testid: 'redrive-task', 'aria-live': 'polite' });
  const history = h('div', { testid: 'redrive-history' });
  const form = h('form', { novalidate: true, testid: 'redrive-form' },
    h('div', { class: 'grid' },
      field('Move the messages to', destination),
      field('Messages a second', rate, '1–500; empty: as fast as it goes')),
    h('div', { class: 'actions' }, guarded(start, reasonFor(q, 'manage_queues'))));
  let polling = false;
  let watched = null; // the status last seen of the task this page started or found running
  const nameOf = (id) => (id ? (byId.get(id) ? byId.get(id).name : id) : 'each message’s source queue');
  function showTasks(tasks) {
    const task = tasks[0];
    if (!task) {
      fill(taskBox, h('p', { class: 'muted' }, 'No redrive has run on this queue yet.'));
    } else {
      const active = task.status === 'running' || task.status === 'cancelling';
      const progress = h('progress', { max: String(task.to_move || 1), testid: 'redrive-progress' });
      if (task.to_move !== null && task.to_move !== undefined) progress.value = Math.min(task.moved, task.to_move);
      if (task.to_move === 0) progress.value = progress.max = 1;
      const cancel = h('button', { type: 'button', class: 'danger', testid: 'redrive-cancel' }, 'Cancel redrive');
      cancel.addEventListener('click', async () => {
        clearAlert();
        cancel.disabled = true;
        try {
          const answer = await api('POST', queuePath(q.id, '/redrive/cancel'));
          say(`Redrive ${answer.result.status}.`);
          load();
        } catch (err) {
          showError(err);
          cancel.disabled = false;
        }
      });
      fill(taskBox,
        h('h3', {}, 'Latest redrive'),
        h('p', {}, 'Status ', h('strong', { class: `badge status-${task.status}`, testid: 'redrive-status' }, task.status)),
        h('div', { class: 'progress-row' }, progress,
          h('span', { testid: 'redrive-moved' }, task.to_move === null || task.to_move === undefined
            ? `${task.moved} moved`
            : `${task.moved} of ${task.to_move} moved`)),
        h('p', { class: 'small' },
          `Rate: ${task.max_messages_per_second ? `${plural(task.max_messages_per_second, 'message')} a second` : 'no limit'} · `,
          `to ${nameOf(task.destination_queue_id)} · started `, timeEl(task.started_at)),
        task.failure ? h('p', { class: 'note error', testid: 'redrive-failure' }, `Failed: ${task.failure}`) : null,
        task.status === 'running' ? guarded(cancel, reasonFor(q, 'manage_queues')) : null);
      if (active) start.disabled = true;
      else if (!reasonFor(q, 'manage_queues')) start.disabled = false;
    }
    fill(history, tasks.length > 1 ? h('details', {}, h('summary', {}, `Earlier redrives (${tasks.length - 1})`),
      h('div', { class: 'table-wrap' }, h('table', {},
        h('thead', {}, h('tr', {}, ['Started', 'Status', 'Moved', 'Rate', 'To'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, tasks.slice(1).map((t) => h('tr', {},
          h('td', {}, timeEl(t.started_at)), h('td', {}, t.status),
          h('td', {}, t.to_move === null || t.to_move === undefined ? String(t.moved) : `${t.moved} / ${t.to_move}`),
          h('td', {}, t.max_messages_per_second ? `${t.max_messages_per_second}/s` : 'no limit'),
          h('td', {}, nameOf(t.destination_queue_id)))))))) : null);
  }
  async function load() {
    try {
      const data = await api('GET', queuePath(q.id, '/redrive'));
      if (!scope.alive) return;
      showTasks(data.tasks);
      const latest = data.tasks[0];
      const active = latest && (latest.status === 'running' || latest.status === 'cancelling');
      if (latest && watched && !active && watched !== latest.status) say(`Redrive ${latest.status}: ${latest.moved} moved.`);
      watched = active ? latest.status : null;
      if (active && !polling) {
        polling = true;
        scope.after(REDRIVE_POLL_MS, () => {
          polling = false;
          load();
        });
      }
      if (!active) ctx.refreshQueue();
    } catch (err) {
      if (scope.alive) showError(err);
    }
  }
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearAlert();
    const request = {};
    try {
      if (destination.value) request.destination_queue_id = destination.value;
      if (rate.value.trim() !== '') request.max_messages_per_second = parseWhole(rate.value, 'the rate', 1, 500);
    } catch (err) {
      showError(err);
      return;
    }
    start.disabled = true;
    try {
      const created = await api('POST', queuePath(q.id, '/redrive'), request);
      say('Redrive started.');
      watched = 'running'; // the next look tells when it ends, even if it already has
      showTasks([created.result]);
      load();
    } catch (err) {
      showError(err);
      start.disabled = false;
    }
  });
  fill(panel,
    h('h2', {}, 'Redrive'),
    h('p', {}, 'This queue is the dead-letter queue of ',
      sources.map((o, i) => [i ? ', ' : '', h('a', { href: `#/queues/${o.id}` }, o.name)]),
      '. A redrive moves its messages back, to the queue each came from or to one you pick.'),
    form,
    taskBox,
    history);
  load();
}
