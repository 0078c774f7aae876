// Why: the Messages tab's move: messages named by id and position go to another queue of the
// same type through POST …/messages/move, at most 100 a request, with a result per message; the
// API moves each one in one step, so a stop (or a closed page) never loses or doubles one.

import { h, field } from './dom.js';
import { api, queuePath, describe } from './api.js';
import { openDialog } from './dialog.js';
import { say } from './notices.js';
import { plural } from './format.js';

export const MOVE_BATCH = 100;
const OUTCOMES = { moved: 'moved', in_flight: 'in flight', not_found: 'not found' };

const mayReceiveSends = (queue) => {
  const granted = queue.permissions || [];
  return granted.includes('*') || granted.includes('send');
};

/** The queues a move may go to: the same type, not this one, and ones the key may send to. */
export function destinationsFor(ctx) {
  return ctx.list.filter((o) => o.id !== ctx.q.id && o.type === ctx.q.type && mayReceiveSends(o));
}

/**
 * Opens the move dialog. batches(shouldStop) is an async generator of arrays of
 * { message_id, position } (at most MOVE_BATCH each); total is their number when known.
 */
export function openMoveDialog({ opener, fallback, ctx, title, what, total, batches, onDone }) {
  const q = ctx.q;
  const choices = destinationsFor(ctx);
  const destination = h('select', { class: 'wide', required: true, testid: 'move-destination' },
    h('option', { value: '' }, 'Choose a queue…'),
    choices.map((o) => h('option', { value: o.id }, o.name)));
  const start = h('button', { type: 'submit', disabled: true, testid: 'move-start' }, 'Move');
  const stop = h('button', { type: 'button', class: 'danger', hidden: true, testid: 'move-stop' }, 'Stop');
  const closeButton = h('button', { type: 'button', class: 'secondary', testid: 'move-close' }, 'Close');
  const progress = h('progress', { max: String(total || 1), value: '0', hidden: true, testid: 'move-progress' });
  const summary = h('p', { class: 'result', role: 'status', 'aria-live': 'polite', testid: 'move-summary' });
  const rows = h('tbody', { testid: 'move-results' });
  const results = h('div', { class: 'table-wrap import-results', hidden: true, role: 'region', 'aria-label': 'Move results', tabindex: '0' },
    h('table', {},
      h('caption', { class: 'sr-only' }, 'One result per message'),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Message'), h('th', { scope: 'col' }, 'Result'))),
      rows));
  let running = false;
  let stopping = false;
  destination.addEventListener('change', () => {
    start.disabled = running || !destination.value;
  });
  stop.addEventListener('click', () => {
    stopping = true;
    stop.disabled = true;
    summary.textContent = 'Stopping after the request under way…';
  });
  const { dialog, close, error } = openDialog({
    opener,
    fallback,
    title,
    testid: 'move-dialog',
    onClose: () => {
      stopping = true;
    },
    build: (closeIt) => {
      closeButton.addEventListener('click', closeIt);
      const form = h('form', { novalidate: true, testid: 'move-form' },
        h('p', {}, `Moves ${what} out of ${q.name} into the queue you choose (of the same type). `,
          'A moved message keeps its id, body and attributes and starts again there: received 0 times, visible now.'),
        h('p', { class: 'note', testid: 'move-safety' }, h('strong', {}, 'Nothing is lost if you stop: '),
          'each message moves in one step, so a stopped move (or a closed page) leaves every message in one of the two queues, once.'),
        choices.length
          ? field('Destination', destination)
          : h('p', { class: 'note warn', testid: 'move-no-destination' },
            `No other ${q.type === 'fifo' ? 'FIFO' : 'standard'} queue this key may send to.`),
        h('div', { class: 'actions' }, start, stop, closeButton, progress),
        summary,
        results);
      form.addEventListener('submit', (event) => {
        event.preventDefault();
        if (!running && destination.value) run();
      });
      return form;
    },
  });
  const counts = { moved: 0, in_flight: 0, not_found: 0 };
  const result = (id, outcome, text) => rows.append(h('tr', { testid: 'move-result', 'data-message-id': id, 'data-outcome': outcome },
    h('td', {}, h('code', { class: 'id' }, id)), h('td', {}, OUTCOMES[outcome] || outcome, text ? h('span', { class: 'muted small' }, ` (${text})`) : null)));
  function tell(done, destName) {
    const parts = [`${plural(counts.moved, 'message')} moved to ${destName}`];
    if (counts.in_flight) parts.push(`${counts.in_flight} in flight (left here)`);
    if (counts.not_found) parts.push(`${counts.not_found} not found`);
    return `${parts.join(', ')}${done ? '.' : '…'}`;
  }
  async function run() {
    const destId = destination.value;
    const destName = (choices.find((o) => o.id === destId) || { name: destId }).name;
    running = true;
    error.textContent = '';
    start.disabled = destination.disabled = true;
    stop.hidden = false;
    progress.hidden = false;
    if (!total) progress.removeAttribute('value');
    results.hidden = false;
    let handled = 0;
    let failure = null;
    try {
      for await (const batch of batches(() => stopping)) {
        if (stopping) break;
        if (!batch.length) continue;
        const answer = await api('POST', queuePath(q.id, '/messages/move'), {
          destination_queue_id: destId,
          messages: batch.map((m) => ({ message_id: m.message_id, position: m.position })),
        });
        for (const m of answer.moved || []) {
          counts.moved += 1;
          result(m.message_id, 'moved');
        }
        for (const f of answer.failed || []) {
          counts[f.code] = (counts[f.code] || 0) + 1;
          result(f.message_id, f.code, f.message);
        }
        handled += batch.length;
        if (total) progress.value = handled;
        if (!stopping) summary.textContent = tell(false, destName);
      }
    } catch (err) {
      failure = describe(err);
      if (dialog.open) error.textContent = failure;
    }
    running = false;
    stop.hidden = true;
    progress.hidden = true;
    let text = tell(true, destName);
    if (stopping && !failure) text += ' Stopped: the messages not moved are still in this queue.';
    if (failure) text += ` Stopped by ${failure}; the messages not moved are still in this queue.`;
    summary.textContent = text;
    summary.classList.toggle('error', Boolean(failure || counts.in_flight || counts.not_found));
    say(text);
    closeButton.focus();
    if (onDone) onDone(counts);
  }
  return { dialog, close };
}
