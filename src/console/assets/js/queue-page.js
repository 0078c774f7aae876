// Why: a queue's page: its counts (refreshed), whether its delivery is paused (with the control
// that pauses and resumes it) and its tabs, which follow the address and the arrow keys; each
// tab's content comes from its own module.

import { h, fill } from './dom.js';
import { state, reasonFor } from './session.js';
import { api, queuePath, deadLetterOf } from './api.js';
import { showError, clearAlert, clearNotices } from './notices.js';
import { Scope, every, coalesced } from './scope.js';
import { newPage, showPage } from './page.js';
import { fmtCount, fmtAge } from './format.js';
import { LIST_REFRESH_MS } from './queue-list.js';
import { renderSend } from './send.js';
import { renderMessages } from './messages.js';
import { renderReceive } from './receive.js';
import { renderMetrics } from './metrics.js';
import { renderRedrive } from './redrive.js';
import { renderSettings } from './settings.js';
import { renderSubscriptions } from './subscriptions.js';
import { pauseControls } from './pause.js';

/** The queue page's tabs: what each needs, and when it shows at all. */
const TABS = [
  { id: 'send', label: 'Send', needs: 'send', render: renderSend },
  { id: 'messages', label: 'Messages', needs: 'inspect', render: renderMessages },
  { id: 'receive', label: 'Receive', needs: 'receive', render: renderReceive },
  { id: 'metrics', label: 'Metrics', needs: 'read_metrics', render: renderMetrics },
  { id: 'subscriptions', label: 'Subscriptions', needs: 'read_metrics', render: renderSubscriptions },
  { id: 'redrive', label: 'Redrive', needs: 'manage_queues', render: renderRedrive, onlyDeadLetter: true },
  { id: 'settings', label: 'Settings', needs: null, render: renderSettings },
];

export async function renderQueuePage(id, tabName) {
  const scope = newPage({ queueId: id });
  showPage(h('p', { class: 'muted' }, 'Loading the queue…'));
  let list;
  try {
    list = (await api('GET', '/v1/queues?include=counts')).queues;
    if (!list.some((q) => q.id === id)) {
      // Not listed: ask for it, so the API says why (404 queue_not_found).
      list = list.concat([(await api('GET', queuePath(id, '?include=counts'))).result]);
    }
  } catch (err) {
    if (scope.alive) {
      showError(err);
      showPage(h('p', {}, h('a', { href: '#/queues' }, '← All queues')));
    }
    return;
  }
  if (!scope.alive) return;
  state.queues = list;
  // What the tabs share: the queue (refreshed), the list it came with, and how to refresh it.
  const ctx = { q: list.find((q) => q.id === id), list, refreshQueue: null, reloadAudit: null };
  const q = ctx.q;
  const countEls = {
    visible: h('dd', { testid: 'count-visible' }),
    in_flight: h('dd', { testid: 'count-in-flight' }),
    delayed: h('dd', { testid: 'count-delayed' }),
    oldest: h('dd', { testid: 'count-oldest' }),
  };
  function showCounts() {
    const c = ctx.q.counts;
    countEls.visible.textContent = c ? fmtCount(c.visible) : '—';
    countEls.in_flight.textContent = c ? fmtCount(c.in_flight) : '—';
    countEls.delayed.textContent = c ? fmtCount(c.delayed) : '—';
    countEls.oldest.textContent = c ? fmtAge(c.oldest_message_age_seconds) : '—';
  }
  const refreshQueue = coalesced(scope, async () => {
    try {
      const fresh = (await api('GET', queuePath(id, '?include=counts'))).result;
      if (scope.alive) {
        ctx.q = fresh;
        showCounts();
        pausing.update();
      }
    } catch (err) {
      if (scope.alive) showError(err);
    }
  });
  ctx.refreshQueue = refreshQueue;
  const pausing = pauseControls(ctx, (queue) => {
    ctx.list = ctx.list.map((o) => (o.id === queue.id ? queue : o));
    if (ctx.reloadAudit) ctx.reloadAudit();
  });
  showCounts();
  every(scope, LIST_REFRESH_MS, refreshQueue);

  const isDeadLetter = list.some((o) => {
    const dl = deadLetterOf(o);
    return dl && dl.queue_id === id;
  });
  const tabs = TABS.filter((t) => !t.onlyDeadLetter || isDeadLetter).map((t) => {
    const reason = t.needs ? reasonFor(q, t.needs) : null;
    const button = h('button', {
      type: 'button', role: 'tab', id: `tab-${t.id}`, 'aria-controls': 'tab-panel', 'aria-selected': 'false',
      tabindex: '-1', testid: `tab-${t.id}`,
    }, h('span', { class: 'tab-label' }, t.label));
    if (reason) {
      button.disabled = true;
      button.setAttribute('aria-disabled', 'true');
      button.append(h('span', { class: 'tab-reason', testid: `tab-reason-${t.id}` }, reason));
    }
    button.addEventListener('click', () => selectTab(t.id, true));
    return { ...t, reason, button };
  });
  const tablist = h('div', { role: 'tablist', 'aria-label': `Queue ${q.name}`, class: 'tabs', testid: 'tabs' }, tabs.map((t) => t.button));
  const panel = h('section', { role: 'tabpanel', id: 'tab-panel', class: 'panel', tabindex: '0', testid: 'tab-panel' });
  tablist.addEventListener('keydown', (event) => {
    const usable = tabs.filter((t) => !t.reason);
    const at = usable.findIndex((t) => t.button === document.activeElement);
    if (at < 0) return;
    let to = null;
    if (event.key === 'ArrowRight' || event.key === 'ArrowDown') to = (at + 1) % usable.length;
    else if (event.key === 'ArrowLeft' || event.key === 'ArrowUp') to = (at - 1 + usable.length) % usable.length;
    else if (event.key === 'Home') to = 0;
    else if (event.key === 'End') to = usable.length - 1;
    if (to === null) return;
    event.preventDefault();
    selectTab(usable[to].id, true);
  });

  let tabScope = null;
  let current = null;
  scope.onEnd(() => tabScope && tabScope.end());
  function showTab(name, focus) {
    let tab = tabs.find((t) => t.id === name);
    if (!tab) {
      tab = tabs.find((t) => !t.reason) || tabs[tabs.length - 1];
      history.replaceState(null, '', `#/queues/${id}/${tab.id}`);
    }
    if (current === tab.id) {
      if (focus) tab.button.focus();
      return;
    }
    // What the lines said was about the tab left (the first tab keeps what the router showed).
    if (current) clearNotices();
    current = tab.id;
    if (tabScope) tabScope.end();
    tabScope = new Scope();
    for (const t of tabs) {
      const selected = t === tab;
      t.button.setAttribute('aria-selected', String(selected));
      t.button.tabIndex = selected ? 0 : -1;
    }
    panel.setAttribute('aria-labelledby', tab.button.id);
    fill(panel);
    if (tab.reason) {
      fill(panel, h('p', { class: 'note', testid: 'tab-unavailable' },
        `${tab.label} ${tab.reason}, which this key does not hold on this queue.`));
    } else {
      tab.render(panel, ctx, tabScope);
    }
    if (focus) tab.button.focus();
  }
  function selectTab(name, focus) {
    const hash = `#/queues/${id}/${name}`;
    if (location.hash !== hash) history.pushState(null, '', hash);
    showTab(name, focus);
  }
  state.page.showTab = showTab;

  const refresh = h('button', { type: 'button', class: 'secondary', testid: 'refresh-queue', onclick: () => { clearAlert(); refreshQueue(); } }, 'Refresh');
  const label = (text, dd) => [h('dt', {}, text), dd];
  showPage(h('section', { class: 'page' },
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/queues' }, 'Queues'), ' / ', h('span', {}, q.name)),
    h('div', { class: 'bar' },
      h('h1', { tabindex: '-1', testid: 'queue-name' }, q.name, ' ', h('span', { class: 'badge' }, q.type === 'fifo' ? 'FIFO' : 'standard')),
      h('div', { class: 'actions' }, pausing.control, refresh)),
    h('p', { class: 'muted small' }, 'ID ', h('code', { testid: 'queue-id' }, q.id)),
    pausing.banner,
    h('dl', { class: 'counts', testid: 'queue-counts' },
      label('Visible', countEls.visible), label('In flight', countEls.in_flight),
      label('Delayed', countEls.delayed), label('Oldest', countEls.oldest)),
    tablist,
    panel));
  showTab(tabName, false);
}
