// Why: the Messages tab inspects without a lease (receive counts unchanged), ten a page; its
// message card is also the Receive tab's.

import { h, fill } from './dom.js';
import { api, queuePath } from './api.js';
import { showError, clearAlert } from './notices.js';
import { prettyBody, timeEl, plural } from './format.js';

export const STATES = { visible: 'visible', in_flight: 'in flight', delayed: 'delayed' };

function attributesTable(attributes) {
  const names = Object.keys(attributes || {});
  if (!names.length) return h('p', { class: 'muted small', testid: 'msg-attributes' }, 'No attributes.');
  return h('div', { class: 'table-wrap' }, h('table', { class: 'attrs', testid: 'msg-attributes' },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Attribute'), h('th', { scope: 'col' }, 'Type'), h('th', { scope: 'col' }, 'Value'))),
    h('tbody', {}, names.map((name) => {
      const a = attributes[name];
      const binary = String(a.type).startsWith('Binary');
      return h('tr', { testid: 'msg-attribute' },
        h('th', { scope: 'row' }, name),
        h('td', {}, a.type),
        h('td', {}, h('code', { class: 'value' }, a.value), binary ? h('span', { class: 'muted small' }, ' (base64)') : null));
    }))));
}

export function messageCard(m, extra) {
  const body = prettyBody(m.body);
  const stateLabel = STATES[m.state];
  const leaseLabel = m.state === 'delayed' ? 'visible at ' : 'lease ends ';
  return h('article', { class: 'msg', testid: 'message', 'data-message-id': m.message_id },
    h('div', { class: 'msg-head' },
      h('code', { class: 'id', testid: 'msg-id' }, m.message_id),
      stateLabel ? h('span', { class: `badge state-${m.state}`, testid: 'msg-state' }, stateLabel) : null,
      h('span', {}, 'receive count ', h('strong', { testid: 'msg-receive-count' }, String(m.receive_count))),
      'sent_at' in m ? h('span', {}, 'sent ', timeEl(m.sent_at)) : null,
      m.visible_at && m.state !== 'visible' ? h('span', { testid: 'msg-visible-at' }, leaseLabel, timeEl(m.visible_at)) : null),
    h('div', { class: 'body-label muted small' }, body.json ? 'Body (JSON, pretty-printed)' : 'Body'),
    h('pre', { class: 'body', testid: 'msg-body', tabindex: '0' }, body.text),
    attributesTable(m.attributes),
    extra);
}

export function renderMessages(panel, ctx, scope) {
  const q = ctx.q;
  const list = h('div', { class: 'msgs', testid: 'messages-list' });
  const prev = h('button', { type: 'button', class: 'secondary', testid: 'messages-prev' }, '← Previous');
  const next = h('button', { type: 'button', class: 'secondary', testid: 'messages-next' }, 'Next →');
  const reload = h('button', { type: 'button', class: 'secondary', testid: 'messages-reload' }, 'Inspect again');
  const pageLabel = h('span', { class: 'muted', testid: 'messages-page', tabindex: '-1' }, 'Page 1');
  const pageInfo = h('span', { class: 'muted small', testid: 'messages-info', 'aria-live': 'polite' });
  const cursors = [null]; // cursors[i]: the `after` of page i
  let page = 0;
  let nextCursor = null;
  async function load() {
    const after = cursors[page];
    const query = `?max_messages=10${after ? `&after=${encodeURIComponent(after)}` : ''}`;
    const hadFocus = [prev, next, reload].includes(document.activeElement) ? document.activeElement : null;
    prev.disabled = next.disabled = reload.disabled = true;
    try {
      const data = await api('GET', queuePath(q.id, `/messages${query}`));
      if (!scope.alive) return;
      nextCursor = data.next || null;
      pageLabel.textContent = `Page ${page + 1}`;
      pageInfo.textContent = `${plural(data.messages.length, 'message')} on this page${nextCursor ? ', more after it' : ''}`;
      fill(list, ...(data.messages.length
        ? data.messages.map((m) => messageCard(m))
        : [h('p', { class: 'muted', testid: 'messages-empty' }, page ? 'No more messages.' : 'No messages in this queue.')]));
    } catch (err) {
      if (!scope.alive) return;
      showError(err);
      nextCursor = null;
      if (err.status === 501) {
        fill(list, h('div', { class: 'note unsupported', testid: 'messages-unsupported' },
          h('p', {}, h('strong', {}, `${err.code}: `), err.message),
          h('p', {}, 'This backend cannot read messages without taking a lease, so the console does not ' +
            'pretend to: to look at a message here, use the Receive tab, which takes a lease and counts a receive.')));
      }
    } finally {
      if (scope.alive) {
        prev.disabled = page === 0;
        next.disabled = !nextCursor;
        reload.disabled = false;
        if (hadFocus && hadFocus.disabled) (prev.disabled ? (next.disabled ? pageLabel : next) : prev).focus();
        else if (hadFocus) hadFocus.focus();
      }
    }
  }
  next.addEventListener('click', () => {
    if (!nextCursor) return;
    clearAlert();
    cursors.length = page + 1;
    cursors.push(nextCursor);
    page += 1;
    load();
  });
  prev.addEventListener('click', () => {
    if (page === 0) return;
    clearAlert();
    page -= 1;
    load();
  });
  reload.addEventListener('click', () => {
    clearAlert();
    load();
  });
  fill(panel,
    h('h2', {}, 'Messages'),
    h('p', { class: 'note', testid: 'inspect-note' }, h('strong', {}, 'Inspecting is not processing: '),
      'messages stay where they are, receive counts do not change. Ten messages a page.'),
    h('div', { class: 'actions' }, prev, pageLabel, next, reload, pageInfo),
    list);
  load();
}
