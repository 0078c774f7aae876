// Why: the Messages tab finds messages without a lease (receive counts unchanged): the server's
// filters, ten matches a page in a compact table, one message whole in a detail pane; the rows
// selected (or every match) are exported or moved. The message card is the Receive tab's.

import { h, fill, field, guarded, uid } from './dom.js';
import { reasonFor } from './session.js';
import { api, queuePath } from './api.js';
import { showError, clearAlert, say } from './notices.js';
import { prettyBody, timeEl, plural, utf8Length } from './format.js';
import { fmtWhen } from './clock.js';
import { exportLine, exportName, download, exportAll, EXPORT_MAX_LINES } from './export.js';
import { openMoveDialog, destinationsFor, MOVE_BATCH } from './move.js';

export const STATES = { visible: 'visible', in_flight: 'in flight', delayed: 'delayed' };

export function attributesTable(attributes) {
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

const FILTERS = [
  { name: 'contains', label: 'Text in the body', hint: 'any case', placeholder: 'timeout' },
  { name: 'message_id', label: 'Message id starts with', placeholder: '3f2a…' },
  { name: 'attribute', label: 'Attribute', hint: 'name, or name=value', placeholder: 'event=order.paid' },
  { name: 'where', label: 'Expression (JSON body)', hint: 'e.g. .total > 100, .note == "URGENT"', placeholder: '.order.total > 100' },
];
const PAGE_SIZE = 10;
const PREVIEW_CHARS = 80;

/** The filters as query parameters (each `&name=value`), the empty ones left out. */
export function filterQuery(filters) {
  return Object.entries(filters).filter(([, v]) => v !== '').map(([k, v]) => `&${k}=${encodeURIComponent(v)}`).join('');
}

export const shortId = (id) => (id.length > 10 ? `${id.slice(0, 8)}…` : id);

export function fmtSize(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1048576) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1048576).toFixed(1)} MiB`;
}

/** A body on one line: whitespace runs as one space, cut at PREVIEW_CHARS. */
export function preview(body) {
  const line = String(body).replace(/\s+/g, ' ').trim();
  return line.length > PREVIEW_CHARS ? `${line.slice(0, PREVIEW_CHARS)}…` : line;
}

function unsupportedNote(err) {
  return h('div', { class: 'note unsupported', testid: 'messages-unsupported' },
    h('p', {}, h('strong', {}, `${err.code}: `), err.message),
    h('p', {}, 'This backend cannot read messages without taking a lease, so the console does not ' +
      'pretend to: to look at a message here, use the Receive tab, which takes a lease and counts a receive.'));
}

export function renderMessages(panel, ctx, scope) {
  const q = ctx.q;
  const manageReason = reasonFor(q, 'manage_queues');
  const inputs = Object.fromEntries(FILTERS.map((f) => [f.name, h('input', {
    type: 'text', autocomplete: 'off', spellcheck: 'false', placeholder: f.placeholder, testid: `find-${f.name}`,
  })]));
  const apply = h('button', { type: 'submit', testid: 'find-apply' }, 'Apply');
  const clear = h('button', { type: 'button', class: 'secondary', testid: 'find-clear' }, 'Clear');
  const findForm = h('form', { novalidate: true, class: 'find', role: 'search', 'aria-label': 'Find messages', testid: 'find-form' },
    h('div', { class: 'grid' }, FILTERS.map((f) => field(f.label, inputs[f.name], f.hint))),
    h('div', { class: 'actions' }, apply, clear));

  const prev = h('button', { type: 'button', class: 'secondary', testid: 'messages-prev' }, '← Previous');
  const next = h('button', { type: 'button', class: 'secondary', testid: 'messages-next' }, 'Next →');
  const keep = h('button', { type: 'button', hidden: true, testid: 'find-keep-searching' }, 'Keep searching');
  const reload = h('button', { type: 'button', class: 'secondary', testid: 'messages-reload' }, 'Inspect again');
  const pageLabel = h('span', { class: 'muted', testid: 'messages-page', tabindex: '-1' }, 'Page 1');
  const pageInfo = h('span', { class: 'small', testid: 'messages-info', 'aria-live': 'polite' });

  const selectAll = h('input', { type: 'checkbox', 'aria-label': 'Select every message on this page', testid: 'select-all' });
  const selCount = h('span', { class: 'small', testid: 'selection-count', 'aria-live': 'polite' }, '0 selected');
  const exportSelected = h('button', { type: 'button', class: 'secondary', disabled: true, testid: 'export-selected' }, 'Export selected');
  const exportAllButton = h('button', { type: 'button', class: 'secondary', testid: 'export-all' }, 'Export all matching');
  const exportStop = h('button', { type: 'button', class: 'danger', hidden: true, testid: 'export-stop' }, 'Stop');
  const exportStatus = h('span', { class: 'small', testid: 'export-status', 'aria-live': 'polite' });
  const moveSelected = h('button', { type: 'button', class: 'secondary', disabled: true, testid: 'move-selected' }, 'Move selected…');
  const moveAll = h('button', { type: 'button', class: 'secondary', testid: 'move-all' }, 'Move all matching…');
  const inspectReason = reasonFor(q, 'inspect');
  if (inspectReason) exportAllButton.disabled = true;
  if (manageReason) moveAll.disabled = true;

  const rows = h('tbody', { testid: 'messages-list' });
  const tableWrap = h('div', { class: 'table-wrap msg-table-wrap', role: 'region', 'aria-label': 'Messages found', tabindex: '0', testid: 'messages-table-wrap' },
    h('table', { class: 'msg-table', testid: 'messages-table' },
      h('caption', { class: 'sr-only' }, 'Messages found; Enter on a row shows it whole'),
      h('thead', {}, h('tr', {},
        h('th', { scope: 'col', class: 'check' }, selectAll),
        ['ID', 'Sent', 'Receives', 'State', 'Size', 'Body'].map((c) => h('th', { scope: 'col' }, c)))),
      rows));
  const detail = h('aside', { class: 'msg-detail', hidden: true, testid: 'message-detail', 'aria-label': 'Message' });
  const layout = h('div', { class: 'find-layout' }, tableWrap, detail);

  let applied = {};
  const cursors = [null]; // cursors[i]: the `after` of page i
  const seen = new Map(); // page → { matches, scanned }
  const selection = new Map(); // message_id → the message as inspected
  let page = 0;
  let nextCursor = null;
  let shown = [];
  let openId = null;
  let detailView = 'pretty';
  let exporting = false;
  let exportStopping = false;

  function showSelection() {
    const n = selection.size;
    selCount.textContent = `${n} selected`;
    exportSelected.disabled = n === 0;
    moveSelected.disabled = n === 0 || Boolean(manageReason);
    const onPage = shown.filter((m) => selection.has(m.message_id)).length;
    selectAll.checked = shown.length > 0 && onPage === shown.length;
    selectAll.indeterminate = onPage > 0 && onPage < shown.length;
    selectAll.disabled = shown.length === 0;
  }

  function showInfo() {
    let matches = 0;
    let scanned = 0;
    for (const p of seen.values()) {
      matches += p.matches;
      scanned += p.scanned;
    }
    const filtered = Object.keys(applied).length > 0;
    pageInfo.textContent = `${matches.toLocaleString('en')} ${filtered ? 'matching' : 'shown'} · ` +
      `${scanned.toLocaleString('en')} examined${nextCursor ? ' · more after this page' : ' · end of the queue'}`;
  }

  function rowFor(m) {
    const box = h('input', { type: 'checkbox', 'aria-label': `Select message ${m.message_id}`, testid: 'row-select', checked: selection.has(m.message_id) });
    box.addEventListener('change', () => {
      if (box.checked) selection.set(m.message_id, m);
      else selection.delete(m.message_id);
      showSelection();
    });
    const size = utf8Length(m.body);
    const tr = h('tr', { class: 'msg-row', tabindex: '0', testid: 'message-row', 'data-message-id': m.message_id, 'aria-current': openId === m.message_id ? 'true' : null },
      h('td', { class: 'check' }, box),
      h('td', {}, h('code', { class: 'short-id', title: m.message_id, testid: 'row-id' }, shortId(m.message_id))),
      h('td', { class: 'nowrap' }, m.sent_at ? h('time', { datetime: m.sent_at, title: m.sent_at }, fmtWhen(m.sent_at)) : '—'),
      h('td', { class: 'num', testid: 'row-receive-count' }, String(m.receive_count)),
      h('td', {}, STATES[m.state] ? h('span', { class: `badge state-${m.state}`, testid: 'row-state' }, STATES[m.state]) : m.state),
      h('td', { class: 'num', testid: 'row-size', title: `${size} bytes` }, fmtSize(size)),
      h('td', { class: 'preview', testid: 'row-preview' }, preview(m.body)));
    tr.addEventListener('click', (event) => {
      if (event.target === box || event.target.closest('td.check')) return;
      openDetail(m, tr);
    });
    tr.addEventListener('keydown', (event) => {
      if (event.target !== tr) return;
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        openDetail(m, tr);
      } else if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
        const to = event.key === 'ArrowDown' ? tr.nextElementSibling : tr.previousElementSibling;
        if (to && to.matches('tr.msg-row')) {
          event.preventDefault();
          to.focus();
        }
      }
    });
    return tr;
  }

  function closeDetail() {
    const row = openId && rows.querySelector(`tr[data-message-id="${CSS.escape(openId)}"]`);
    openId = null;
    detail.hidden = true;
    fill(detail);
    layout.classList.remove('with-detail');
    for (const tr of rows.querySelectorAll('tr[aria-current]')) tr.removeAttribute('aria-current');
    if (row) row.focus();
  }

  function openDetail(m, tr, focus = true) {
    openId = m.message_id;
    for (const other of rows.querySelectorAll('tr[aria-current]')) other.removeAttribute('aria-current');
    if (tr) tr.setAttribute('aria-current', 'true');
    const body = prettyBody(m.body);
    const titleId = uid('detail');
    const heading = h('h3', { id: titleId, tabindex: '-1', testid: 'detail-title' }, 'Message ', h('code', { class: 'id', testid: 'detail-id' }, m.message_id));
    const pre = h('pre', { class: 'body', tabindex: '0', testid: 'detail-body', 'aria-label': 'Body' });
    const pretty = h('button', { type: 'button', class: 'secondary small', testid: 'detail-pretty' }, 'Pretty');
    const raw = h('button', { type: 'button', class: 'secondary small', testid: 'detail-raw' }, 'Raw');
    const closeButton = h('button', { type: 'button', class: 'secondary small', testid: 'detail-close' }, 'Close');
    const showBody = () => {
      pre.textContent = detailView === 'pretty' ? body.text : m.body;
      pretty.setAttribute('aria-pressed', String(detailView === 'pretty'));
      raw.setAttribute('aria-pressed', String(detailView === 'raw'));
    };
    pretty.addEventListener('click', () => { detailView = 'pretty'; showBody(); });
    raw.addEventListener('click', () => { detailView = 'raw'; showBody(); });
    closeButton.addEventListener('click', closeDetail);
    const fact = (label, value, testid) => [h('dt', {}, label), h('dd', { testid }, value)];
    const size = utf8Length(m.body);
    fill(detail,
      h('div', { class: 'bar' }, heading, closeButton),
      h('div', { class: 'actions', role: 'group', 'aria-label': 'Body view' }, pretty, raw,
        h('span', { class: 'muted small' }, body.json ? 'JSON: pretty is indented' : 'not JSON: pretty is the raw text')),
      pre,
      attributesTable(m.attributes),
      h('dl', { class: 'settings small', testid: 'detail-fields' },
        fact('Message id', h('code', { class: 'id' }, m.message_id), 'detail-message-id'),
        fact('Position', h('code', {}, String(m.position)), 'detail-position'),
        fact('State', STATES[m.state] || m.state, 'detail-state'),
        fact('Receive count', String(m.receive_count), 'detail-receive-count'),
        fact('Sent', m.sent_at ? fmtWhen(m.sent_at) : '—', 'detail-sent'),
        fact({ visible: 'Visible since', in_flight: 'Lease ends', delayed: 'Visible at' }[m.state] || 'Visible at', m.visible_at ? fmtWhen(m.visible_at) : '—', 'detail-visible-at'),
        fact('Size', `${size.toLocaleString('en')} bytes`, 'detail-size')));
    detail.setAttribute('aria-labelledby', titleId);
    detail.hidden = false;
    layout.classList.add('with-detail');
    showBody();
    if (focus) heading.focus();
  }
  detail.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') {
      event.preventDefault();
      closeDetail();
    }
  });

  async function load() {
    const after = cursors[page];
    const query = `?max_messages=${PAGE_SIZE}${after ? `&after=${encodeURIComponent(after)}` : ''}${filterQuery(applied)}`;
    const controls = [prev, next, keep, reload, apply, clear];
    const hadFocus = controls.includes(document.activeElement) ? document.activeElement : null;
    for (const c of controls) c.disabled = true;
    try {
      const data = await api('GET', queuePath(q.id, `/messages${query}`));
      if (!scope.alive) return;
      nextCursor = data.next || null;
      seen.set(page, { matches: data.messages.length, scanned: data.scanned || 0 });
      shown = data.messages;
      pageLabel.textContent = `Page ${page + 1}`;
      showInfo();
      keep.hidden = !(data.messages.length === 0 && nextCursor);
      fill(rows, ...(data.messages.length
        ? data.messages.map(rowFor)
        : [h('tr', {}, h('td', { colspan: '7', class: 'empty', testid: 'messages-empty' }, nextCursor
          ? 'No match among the messages examined for this page: keep searching to read on.'
          : (page ? 'No more matching messages.' : (Object.keys(applied).length ? 'No message matches.' : 'No messages in this queue.'))))]));
      const still = openId && data.messages.find((m) => m.message_id === openId);
      if (still) openDetail(still, rows.querySelector(`tr[data-message-id="${CSS.escape(openId)}"]`), false);
      else if (openId) closeDetail();
      showSelection();
    } catch (err) {
      if (!scope.alive) return;
      showError(err);
      nextCursor = null;
      if (err.status === 501) {
        fill(panel, h('h2', {}, 'Messages'), unsupportedNote(err));
        return;
      }
    } finally {
      if (scope.alive) {
        prev.disabled = page === 0;
        next.disabled = !nextCursor;
        keep.disabled = !nextCursor;
        reload.disabled = apply.disabled = clear.disabled = false;
        if (hadFocus && (hadFocus.disabled || hadFocus.hidden)) (prev.disabled ? (next.disabled ? pageLabel : next) : prev).focus();
        else if (hadFocus) hadFocus.focus();
      }
    }
  }
  function restart() {
    cursors.length = 1;
    page = 0;
    seen.clear();
    selection.clear();
    if (openId) closeDetail();
    load();
  }
  function forward() {
    if (!nextCursor) return;
    clearAlert();
    cursors.length = page + 1;
    cursors.push(nextCursor);
    page += 1;
    load();
  }
  next.addEventListener('click', forward);
  keep.addEventListener('click', forward);
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
  findForm.addEventListener('submit', (event) => {
    event.preventDefault();
    clearAlert();
    applied = Object.fromEntries(FILTERS.map((f) => [f.name, inputs[f.name].value.trim()]).filter(([, v]) => v !== ''));
    restart();
  });
  clear.addEventListener('click', () => {
    clearAlert();
    for (const f of FILTERS) inputs[f.name].value = '';
    applied = {};
    restart();
  });
  selectAll.addEventListener('change', () => {
    for (const m of shown) {
      if (selectAll.checked) selection.set(m.message_id, m);
      else selection.delete(m.message_id);
    }
    for (const box of rows.querySelectorAll('input[type=checkbox]')) box.checked = selectAll.checked;
    showSelection();
  });

  exportSelected.addEventListener('click', () => {
    clearAlert();
    const lines = [...selection.values()].map(exportLine);
    download(exportName(q.name, 'selected'), `${lines.join('\n')}\n`);
    exportStatus.textContent = `Exported ${plural(lines.length, 'selected message')}.`;
    say(exportStatus.textContent);
  });
  exportStop.addEventListener('click', () => {
    exportStopping = true;
    exportStop.disabled = true;
  });
  exportAllButton.addEventListener('click', async () => {
    if (exporting) return;
    clearAlert();
    exporting = true;
    exportStopping = false;
    exportAllButton.disabled = true;
    exportStop.hidden = false;
    exportStop.disabled = false;
    exportStatus.textContent = 'Exporting…';
    try {
      const done = await exportAll(q.id, filterQuery(applied), {
        shouldStop: () => exportStopping || !scope.alive,
        onProgress: ({ lines, scanned }) => {
          exportStatus.textContent = `Exporting: ${plural(lines, 'line')} · ${scanned.toLocaleString('en')} examined…`;
        },
      });
      if (!scope.alive) return;
      download(exportName(q.name, Object.keys(applied).length ? 'matching' : 'all'), done.lines.length ? `${done.lines.join('\n')}\n` : '');
      let text = `Exported ${plural(done.lines.length, 'message')} (${done.scanned.toLocaleString('en')} examined)`;
      if (done.capped) text += `: stopped at the console's cap of ${EXPORT_MAX_LINES.toLocaleString('en')} lines`;
      else if (!done.complete) text += ': stopped before the end of the queue';
      exportStatus.textContent = `${text}.`;
      say(exportStatus.textContent);
    } catch (err) {
      if (!scope.alive) return;
      showError(err);
      exportStatus.textContent = '';
    } finally {
      exporting = false;
      if (scope.alive) {
        exportAllButton.disabled = Boolean(inspectReason);
        exportStop.hidden = true;
      }
    }
  });

  const afterMove = () => {
    if (!scope.alive) return;
    selection.clear();
    ctx.refreshQueue();
    load();
  };
  moveSelected.addEventListener('click', () => {
    clearAlert();
    const chosen = [...selection.values()];
    openMoveDialog({
      opener: moveSelected,
      fallback: tableWrap,
      ctx,
      title: `Move ${plural(chosen.length, 'selected message')}`,
      what: plural(chosen.length, 'selected message'),
      total: chosen.length,
      batches: async function* batches() {
        for (let i = 0; i < chosen.length; i += MOVE_BATCH) yield chosen.slice(i, i + MOVE_BATCH);
      },
      onDone: afterMove,
    });
  });
  moveAll.addEventListener('click', () => {
    clearAlert();
    const filters = filterQuery(applied);
    const filtered = Object.keys(applied).length > 0;
    openMoveDialog({
      opener: moveAll,
      fallback: tableWrap,
      ctx,
      title: filtered ? 'Move every matching message' : 'Move every message',
      what: filtered ? 'every message the filters keep' : 'every message in the queue',
      total: null,
      // Reads the matches page by page (the filters as applied) and hands them on 100 at a time.
      batches: async function* batches(shouldStop) {
        let after = null;
        let batch = [];
        do {
          const data = await api('GET', queuePath(q.id, `/messages?max_messages=${PAGE_SIZE}&scan=10000${after ? `&after=${encodeURIComponent(after)}` : ''}${filters}`));
          batch.push(...data.messages);
          after = data.next || null;
          if (batch.length >= MOVE_BATCH || !after) {
            yield batch.splice(0, MOVE_BATCH);
          }
        } while (after && !shouldStop());
        if (batch.length && !shouldStop()) yield batch;
      },
      onDone: afterMove,
    });
  });

  const noDestination = destinationsFor(ctx).length === 0;
  fill(panel,
    h('h2', {}, 'Messages'),
    h('p', { class: 'note', testid: 'inspect-note' }, h('strong', {}, 'Inspecting is not processing: '),
      'messages stay where they are, receive counts do not change. Ten matches a page; the gateway applies the filters.'),
    findForm,
    h('div', { class: 'actions pager' }, prev, pageLabel, next, keep, reload, pageInfo),
    h('div', { class: 'actions selection', testid: 'selection-bar' },
      selCount,
      guarded(exportSelected, inspectReason),
      guarded(exportAllButton, inspectReason),
      exportStop,
      guarded(moveSelected, manageReason),
      guarded(moveAll, manageReason),
      !manageReason && noDestination ? h('span', { class: 'muted small' }, `no other ${q.type === 'fifo' ? 'FIFO' : 'standard'} queue to move to`) : null,
      exportStatus),
    layout);
  load();
}
