// Why: the queue list, the console's home: every queue the key can see with its counts, its
// dead-letter queue and whether its delivery is paused, from one request, refreshed while the
// page is visible; filtered and sorted in the page (the choice kept across refreshes).

import { h, fill, field, guarded } from './dom.js';
import { state, globalCan } from './session.js';
import { api, deadLetterOf } from './api.js';
import { showError, clearAlert, say } from './notices.js';
import { every, coalesced } from './scope.js';
import { newPage, showPage } from './page.js';
import { fmtCount, fmtAge, plural } from './format.js';
import { createQueueForm } from './create-queue.js';
import { pausedMarker } from './pause.js';

/** How often counts refresh while shown: the list, and a queue's page. */
export const LIST_REFRESH_MS = 10000;

export function renderQueueList() {
  const scope = newPage({});
  const canCreate = globalCan('manage_queues');
  const updated = h('span', { class: 'muted', testid: 'list-updated' });
  const refresh = h('button', { type: 'button', class: 'secondary', testid: 'refresh-queues' }, 'Refresh');
  const newButton = h('button', { type: 'button', testid: 'new-queue', 'aria-expanded': 'false', 'aria-controls': 'create-queue' }, 'New queue');
  const createBox = h('div', { id: 'create-queue', class: 'card', hidden: true });
  const tbody = h('tbody', { testid: 'queue-rows' });
  const filter = h('input', { type: 'search', autocomplete: 'off', spellcheck: 'false', testid: 'queue-filter', placeholder: 'name or id' });
  const shownCount = h('span', { class: 'muted small', testid: 'queue-count', 'aria-live': 'polite' });
  const sort = { col: 'name', descending: false };
  const heads = COLUMNS.map((column) => {
    const button = h('button', { type: 'button', class: 'sort', testid: `sort-${column.id}` }, column.label,
      h('span', { class: 'sort-mark', 'aria-hidden': 'true' }));
    const th = h('th', { scope: 'col', 'data-col': column.id }, button);
    button.addEventListener('click', () => {
      sort.descending = sort.col === column.id ? !sort.descending : false;
      sort.col = column.id;
      render();
    });
    return { column, th, button };
  });
  const table = h('table', { class: 'queues', testid: 'queue-table' },
    h('caption', { class: 'sr-only' }, 'Queues this key can see, with their message counts; the column buttons sort'),
    h('thead', {}, h('tr', {}, heads.map((head) => head.th))),
    tbody);
  let queues = null;
  function render() {
    for (const { column, th, button } of heads) {
      const sorted = column.id === sort.col;
      if (sorted) th.setAttribute('aria-sort', sort.descending ? 'descending' : 'ascending');
      else th.removeAttribute('aria-sort');
      button.lastChild.textContent = sorted ? (sort.descending ? ' ▼' : ' ▲') : '';
    }
    if (!queues) return;
    const words = filter.value.trim().toLowerCase();
    const shown = queues.filter((q) => !words || q.name.toLowerCase().includes(words) || q.id.includes(words));
    const column = COLUMNS.find((c) => c.id === sort.col);
    const byId = new Map(queues.map((q) => [q.id, q]));
    shown.sort((a, b) => compare(column.value(a, byId), column.value(b, byId), sort.descending) || compare(a.name, b.name, false));
    fillQueueRows(tbody, shown, queues, words);
    shownCount.textContent = words ? `${shown.length} of ${plural(queues.length, 'queue')} match` : plural(queues.length, 'queue');
  }
  filter.addEventListener('input', render);

  let lastLoad = 0;
  let created = []; // queues made here that the list may not show yet (the sqs backend's lists lag)
  const load = coalesced(scope, async () => {
    table.setAttribute('aria-busy', 'true');
    try {
      const data = await api('GET', '/v1/queues?include=counts');
      if (!scope.alive) return;
      const listed = new Set(data.queues.map((q) => q.id));
      created = created.filter((q) => !listed.has(q.id));
      if (created.length) {
        data.queues.push(...created);
        data.queues.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        scope.after(1000, load);
      }
      state.queues = data.queues;
      queues = data.queues;
      lastLoad = Date.now();
      render();
      updated.textContent = `updated ${new Date().toLocaleTimeString()}`;
    } catch (err) {
      if (scope.alive) showError(err);
    } finally {
      table.removeAttribute('aria-busy');
    }
  });
  refresh.addEventListener('click', () => {
    clearAlert();
    load();
  });
  every(scope, LIST_REFRESH_MS, () => {
    if (Date.now() - lastLoad >= LIST_REFRESH_MS - 500) load();
  });
  scope.onVisible(() => {
    if (Date.now() - lastLoad >= LIST_REFRESH_MS) load();
  });

  newButton.addEventListener('click', () => {
    const open = createBox.hidden;
    createBox.hidden = !open;
    newButton.setAttribute('aria-expanded', String(open));
    if (open) {
      fill(createBox, createQueueForm((queue) => {
        created.push(queue);
        createBox.hidden = true;
        newButton.setAttribute('aria-expanded', 'false');
        say(`Created queue ${queue.name} (${queue.id}).`);
        load();
        newButton.focus();
      }, () => {
        createBox.hidden = true;
        newButton.setAttribute('aria-expanded', 'false');
        newButton.focus();
      }));
      createBox.querySelector('input').focus();
    } else {
      fill(createBox);
    }
  });

  showPage(h('section', { class: 'page' },
    h('div', { class: 'bar' },
      h('h1', { tabindex: '-1' }, 'Queues'),
      h('div', { class: 'actions' }, refresh, updated,
        guarded(newButton, canCreate ? null : 'needs the manage_queues permission on every queue (*)'))),
    createBox,
    h('div', { class: 'actions list-tools' }, field('Filter by name or id', filter), shownCount),
    h('div', { class: 'table-wrap', role: 'region', 'aria-label': 'Queue table', tabindex: '0' }, table),
    h('p', { class: 'muted small' }, 'Counts refresh every 10 s while this page is visible; “—” means the backend could not count just now.')));
  render();
  load();
}

const countOf = (name) => (q) => (q.counts ? q.counts[name] : null);
const deadLetterQueue = (q, byId) => {
  const dl = deadLetterOf(q);
  return dl && dl.queue_id ? byId.get(dl.queue_id) || null : null;
};

/** The list's columns: what each sorts by (null: unknown, always last). */
const COLUMNS = [
  { id: 'name', label: 'Name', value: (q) => q.name },
  { id: 'type', label: 'Type', value: (q) => q.type },
  { id: 'visible', label: 'Visible', value: countOf('visible') },
  { id: 'in_flight', label: 'In flight', value: countOf('in_flight') },
  { id: 'delayed', label: 'Delayed', value: countOf('delayed') },
  { id: 'oldest', label: 'Oldest age', value: countOf('oldest_message_age_seconds') },
  { id: 'dlq', label: 'Dead-letter queue', value: (q, byId) => { const d = deadLetterQueue(q, byId); return d ? d.name : null; } },
  { id: 'dlq-depth', label: 'DLQ depth', value: (q, byId) => { const d = deadLetterQueue(q, byId); return d && d.counts ? d.counts.visible : null; } },
  { id: 'id', label: 'ID', value: (q) => q.id },
];

/** Orders two column values: unknown (null) last either way, text by the browser's collation. */
function compare(a, b, descending) {
  const unknownA = a === null || a === undefined;
  const unknownB = b === null || b === undefined;
  if (unknownA || unknownB) return unknownA === unknownB ? 0 : unknownA ? 1 : -1;
  const order = typeof a === 'number' && typeof b === 'number' ? a - b : String(a).localeCompare(String(b));
  return descending ? -order : order;
}

function fillQueueRows(tbody, queues, all, words) {
  if (!queues.length) {
    fill(tbody, h('tr', {}, h('td', { colspan: '9', class: 'empty', testid: 'queue-none' },
      words ? `No queue’s name or id holds “${words}”.` : 'No queues this key can see yet.')));
    return;
  }
  const byId = new Map(all.map((q) => [q.id, q]));
  const deadLetterIds = new Set(all.map((q) => deadLetterOf(q)).filter((d) => d && d.queue_id).map((d) => d.queue_id));
  const count = (col, value, counts, fmt = fmtCount) => h('td', {
    'data-col': col,
    class: 'num',
    title: counts ? null : 'the backend could not count just now',
  }, counts ? fmt(value) : '—');
  fill(tbody, ...queues.map((q) => {
    const c = q.counts || null;
    const dl = deadLetterOf(q);
    const dlq = dl && dl.queue_id ? byId.get(dl.queue_id) : null;
    let dlCell = '—';
    if (dl && !dl.queue_id) dlCell = h('span', { class: 'muted' }, 'not a basaltic queue');
    else if (dl && dlq) {
      dlCell = [h('a', { href: `#/queues/${dlq.id}` }, dlq.name),
        h('span', { class: 'muted small' }, ` after ${dl.max_receive_count} receive${dl.max_receive_count === 1 ? '' : 's'}`)];
    }
    else if (dl) dlCell = h('code', { title: dl.queue_id }, `${dl.queue_id.slice(0, 8)}…`);
    const depth = dlq ? (dlq.counts ? fmtCount(dlq.counts.visible) : '—') : '—';
    return h('tr', { testid: 'queue-row', 'data-queue-id': q.id, 'data-queue-name': q.name },
      h('th', { scope: 'row', 'data-col': 'name' },
        h('a', { href: `#/queues/${q.id}`, testid: 'queue-link' }, q.name),
        deadLetterIds.has(q.id) ? h('span', { class: 'badge', title: 'a dead-letter queue of another queue' }, 'DLQ') : null,
        pausedMarker(q)),
      h('td', { 'data-col': 'type' }, q.type),
      count('visible', c && c.visible, c),
      count('in_flight', c && c.in_flight, c),
      count('delayed', c && c.delayed, c),
      count('oldest', c && c.oldest_message_age_seconds, c, fmtAge),
      h('td', { 'data-col': 'dlq' }, dlCell),
      h('td', { 'data-col': 'dlq-depth', class: 'num' }, depth),
      h('td', { 'data-col': 'id' }, h('code', { class: 'id' }, q.id)));
  }));
}
