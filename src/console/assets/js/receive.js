// Why: the Receive tab: receiving by hand takes a lease and counts a receive, then Delete, Extend
// or Release; each receipt handle stays in its card's closure and shows as 8 characters at most.

import { h, fill, field, guarded } from './dom.js';
import { reasonFor } from './session.js';
import { api, queuePath, ApiError } from './api.js';
import { showError, clearAlert, say } from './notices.js';
import { timeEl, plural } from './format.js';
import { parseWhole } from './rules.js';
import { STATES, messageCard } from './messages.js';

export function renderReceive(panel, ctx) {
  const q = ctx.q;
  const max = h('input', { type: 'number', inputmode: 'numeric', min: '1', max: '10', value: '1', testid: 'recv-max' });
  const wait = h('input', { type: 'number', inputmode: 'numeric', min: '0', max: '20', value: '0', testid: 'recv-wait' });
  const lease = h('input', { type: 'number', inputmode: 'numeric', min: '0', max: '43200', value: '30', testid: 'recv-visibility' });
  const submit = h('button', { type: 'submit', testid: 'recv-submit' }, 'Receive');
  const list = h('div', { class: 'msgs', testid: 'received-list' });
  const form = h('form', { novalidate: true, testid: 'receive-form' },
    h('div', { class: 'grid' },
      field('Messages (1–10)', max),
      field('Wait (seconds, 0–20)', wait),
      field('Visibility timeout (seconds)', lease, '0–43200: how long the lease lasts; 0 makes them visible again at once')),
    h('div', { class: 'actions' }, guarded(submit, reasonFor(q, 'receive'))));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearAlert();
    let request;
    try {
      request = {
        max_messages: parseWhole(max.value, 'messages', 1, 10),
        wait_time_seconds: parseWhole(wait.value, 'the wait', 0, 20),
        visibility_timeout_seconds: parseWhole(lease.value, 'the visibility timeout', 0, 43200),
      };
    } catch (err) {
      showError(err);
      return;
    }
    submit.disabled = true;
    submit.textContent = request.wait_time_seconds ? `Receiving (up to ${request.wait_time_seconds} s)…` : 'Receiving…';
    try {
      const data = await api('POST', queuePath(q.id, '/messages/receive'), request);
      fill(list, ...(data.messages.length
        ? data.messages.map((m) => receivedCard(m, ctx))
        : [h('p', { class: 'muted', testid: 'received-empty' }, 'No message was received.')]));
      say(`Received ${plural(data.messages.length, 'message')}.`);
      ctx.refreshQueue();
    } catch (err) {
      showError(err);
    } finally {
      submit.disabled = false;
      submit.textContent = 'Receive';
    }
  });
  fill(panel,
    h('h2', {}, 'Receive by hand'),
    h('p', { class: 'note warn', testid: 'receive-note' }, h('strong', {}, 'For debugging by hand: '),
      'receiving takes a lease on each message and counts a receive, as a consumer’s would; a message received ' +
      'more often than its queue’s dead-letter limit moves to the dead-letter queue. Delete what you handled, or release it.'),
    form,
    list);
}

/** A received message with its actions. Its receipt handle stays in this closure only. */
function receivedCard(message, ctx) {
  const q = ctx.q;
  let handle = message.receipt_handle;
  const shown = { ...message };
  delete shown.receipt_handle;
  shown.state = 'in_flight';
  const seconds = h('input', { type: 'number', inputmode: 'numeric', min: '0', max: '43200', value: '60', class: 'short', testid: 'extend-seconds' });
  const del = h('button', { type: 'button', class: 'danger', testid: 'msg-delete' }, 'Delete');
  const extend = h('button', { type: 'button', class: 'secondary', testid: 'msg-extend' }, 'Extend');
  const release = h('button', { type: 'button', class: 'secondary', testid: 'msg-release' }, 'Release');
  const outcome = h('span', { class: 'outcome', testid: 'msg-outcome', 'aria-live': 'polite' });
  const deleteReason = reasonFor(q, 'delete');
  const visibilityReason = reasonFor(q, 'change_visibility');
  const card = messageCard(shown, h('div', { class: 'receipt-actions' },
    h('p', { class: 'small' }, 'Receipt ', h('code', { testid: 'msg-receipt', title: 'receipt handles are credentials: only the start is shown' },
      `${handle.slice(0, 8)}…`)),
    h('div', { class: 'actions' },
      guarded(del, deleteReason),
      field('Lease (seconds)', seconds),
      guarded(extend, visibilityReason),
      guarded(release, visibilityReason),
      outcome)));
  const leaseEl = () => card.querySelector('[data-testid=msg-visible-at]');
  function setLease(secondsFromNow) {
    const el = leaseEl();
    if (el) fill(el, 'lease ends ', timeEl(new Date(Date.now() + secondsFromNow * 1000).toISOString()));
  }
  async function act(button, work) {
    clearAlert();
    if (!handle) return;
    button.disabled = true;
    try {
      await work();
    } catch (err) {
      showError(err);
      outcome.textContent = err instanceof ApiError ? `failed: ${err.code}` : 'failed';
    } finally {
      if (handle && !(button === del ? deleteReason : visibilityReason) && !button.dataset.done) button.disabled = false;
    }
  }
  del.addEventListener('click', () => act(del, async () => {
    await api('DELETE', queuePath(q.id, `/messages?receipt_handle=${encodeURIComponent(handle)}`));
    handle = null;
    del.disabled = extend.disabled = release.disabled = seconds.disabled = true;
    card.classList.add('done');
    outcome.textContent = 'Deleted.';
    ctx.refreshQueue();
  }));
  extend.addEventListener('click', () => act(extend, async () => {
    let value;
    try {
      value = parseWhole(seconds.value, 'the lease', 0, 43200);
    } catch (err) {
      showError(err);
      return;
    }
    await api('POST', queuePath(q.id, '/messages/visibility'), { receipt_handle: handle, visibility_timeout_seconds: value });
    setLease(value);
    outcome.textContent = value ? `Lease extended: visible again in ${value} s.` : 'Released.';
    ctx.refreshQueue();
  }));
  release.addEventListener('click', () => act(release, async () => {
    await api('POST', queuePath(q.id, '/messages/visibility'), { receipt_handle: handle, visibility_timeout_seconds: 0 });
    // After a release the receipt can no longer extend (it still deletes until the next receive).
    extend.dataset.done = release.dataset.done = 'true';
    extend.disabled = release.disabled = seconds.disabled = true;
    setLease(0);
    const badge = card.querySelector('[data-testid=msg-state]');
    if (badge) {
      badge.textContent = STATES.visible;
      badge.className = 'badge state-visible';
    }
    outcome.textContent = 'Released: visible again now.';
    ctx.refreshQueue();
  }));
  return card;
}
