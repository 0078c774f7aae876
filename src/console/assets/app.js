/**
 * The sqs-gateway web console: a build-free browser client of the gateway's basaltic HTTP API
 * (same origin), served from assets embedded in the binary at /console.
 *
 * Why it exists: to let someone holding a basaltic key look at queues and their depth, send,
 * inspect, receive by hand, watch metrics, purge and redrive without a command line. It has no
 * back door: every action below is one call of the public API made with the key the user signed
 * in with, so the key's grants decide what the page can do, as for any other client.
 *
 * Rules this file keeps (the page is served with a strict Content-Security-Policy):
 * - the DOM is built with createElement/textContent only, never innerHTML: bodies, attributes
 *   and names from the API always show as text and never run;
 * - the key lives in sessionStorage only and leaves the page only in the Authorization header;
 * - receipt handles stay in memory (closures) and are shown at most as their first 8 characters.
 */
'use strict';

const KEY_STORAGE = 'sqsgw.console.key';
const LIST_REFRESH_MS = 10000;
const REDRIVE_POLL_MS = 2000;
const MAX_ATTRIBUTES = 20;

/** The settings the create form offers, with the API's ranges. */
const SETTINGS = [
  { key: 'delay_seconds', label: 'Delay (seconds)', min: 0, max: 900 },
  { key: 'receive_wait_time_seconds', label: 'Receive wait (seconds)', min: 0, max: 20 },
  { key: 'visibility_timeout_seconds', label: 'Visibility timeout (seconds)', min: 0, max: 43200 },
  { key: 'max_message_bytes', label: 'Largest message (bytes)', min: 1024, max: 262144 },
  { key: 'retention_seconds', label: 'Retention (seconds)', min: 60, max: 1209600 },
];

/** The queue page's tabs: what each needs, and when it shows at all. */
const TABS = [
  { id: 'send', label: 'Send', needs: 'send', render: renderSend },
  { id: 'messages', label: 'Messages', needs: 'inspect', render: renderMessages },
  { id: 'receive', label: 'Receive', needs: 'receive', render: renderReceive },
  { id: 'metrics', label: 'Metrics', needs: 'read_metrics', render: renderMetrics },
  { id: 'redrive', label: 'Redrive', needs: 'manage_queues', render: renderRedrive, onlyDeadLetter: true },
  { id: 'settings', label: 'Settings', needs: null, render: renderSettings },
];

/** The six charts of the Metrics tab: sample field and title. */
const CHARTS = [
  ['visible', 'Visible'],
  ['in_flight', 'In flight'],
  ['oldest_message_age_seconds', 'Oldest message age (s)'],
  ['sends', 'Sends'],
  ['receives', 'Receives'],
  ['repeated_receives', 'Repeated receives'],
];

const METRIC_RANGES = [
  [900, 'Last 15 minutes'],
  [3600, 'Last hour'],
  [6 * 3600, 'Last 6 hours'],
  [24 * 3600, 'Last 24 hours'],
];

const STATES = { visible: 'visible', in_flight: 'in flight', delayed: 'delayed' };

const state = {
  key: sessionStorage.getItem(KEY_STORAGE),
  me: null, // GET /v1/key's result
  queues: null, // the last queue list
  page: null, // the page shown: { scope, queueId?, showTab? }
  signInMessage: null, // why the user is back at sign-in
  flash: null, // a status to show on the next page (what the action that led there did)
  afterSignIn: null, // where to go once signed in
  routeSeq: 0,
};

// ---------------------------------------------------------------- DOM helpers (no innerHTML)

let idSeq = 0;
const uid = (prefix) => `${prefix}-${++idSeq}`;

/** Builds an element: attrs are attributes (on* are listeners), children are nodes or text. */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'style') throw new Error('no inline styles: use a class');
    if (name === 'class') el.className = value;
    else if (name === 'testid') el.dataset.testid = value;
    else if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else if (['value', 'checked', 'disabled', 'hidden', 'selected'].includes(name)) el[name] = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

/** Builds an SVG element (presentation attributes only, never style). */
function s(tag, attrs, ...children) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'style') throw new Error('no inline styles: use a class');
    el.setAttribute(name === 'testid' ? 'data-testid' : name, String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child !== undefined && child !== null && child !== false) el.append(child);
  }
}

/** Replaces an element's children (arrays flattened, null and false dropped). */
function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A labelled control, with an optional hint it is described by. */
function field(label, control, hint) {
  if (!control.id) control.id = uid('f');
  let hintEl = null;
  if (hint) {
    hintEl = h('span', { class: 'hint', id: `${control.id}-hint` }, hint);
    control.setAttribute('aria-describedby', hintEl.id);
  }
  return h('div', { class: 'field' }, h('label', { for: control.id }, label), control, hintEl);
}

/** A button with why it is disabled next to it, when it is. */
function guarded(button, reason) {
  if (!reason) return button;
  button.disabled = true;
  const why = h('span', { class: 'reason', id: uid('why') }, reason);
  button.setAttribute('aria-describedby', why.id);
  return h('span', { class: 'guarded' }, button, why);
}

const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------- alerts and status

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** A mistake in a form, caught before any request. */
class InputError extends Error {}

function describe(err) {
  if (err instanceof ApiError) return `${err.code}: ${err.message}`;
  if (err instanceof InputError) return `invalid_input: ${err.message}`;
  if (err instanceof TypeError) return `network_error: the gateway did not answer (${err.message})`;
  return String((err && err.message) || err);
}

function showError(err) {
  if (err && err.handled) return;
  $('status').textContent = '';
  $('alert').textContent = describe(err);
}

function clearAlert() {
  $('alert').textContent = '';
}

function say(text) {
  $('status').textContent = text;
}

// ---------------------------------------------------------------- the API

/** One call of the basaltic API with the key; answers the JSON (null for 204), throws ApiError. */
async function api(method, path, body, key = state.key) {
  const headers = { Authorization: `Bearer ${key}`, Accept: 'application/json' };
  const init = { method, headers, cache: 'no-store', credentials: 'omit', redirect: 'error' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  if (response.status === 204) return null;
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch (_) {
    data = null;
  }
  if (!response.ok) {
    const e = (data && data.error) || {};
    const err = new ApiError(response.status, e.code || `http_${response.status}`,
      e.message || response.statusText || 'the gateway gave no reason');
    if (response.status === 401 && key === state.key) {
      err.handled = true;
      signOut(describe(err));
    }
    throw err;
  }
  return data;
}

const queuePath = (id, rest = '') => `/v1/queues/${encodeURIComponent(id)}${rest}`;

// ---------------------------------------------------------------- permissions

function globalCan(permission) {
  const grants = (state.me && state.me.grants && state.me.grants['*']) || [];
  return grants.includes('*') || grants.includes(permission);
}

function can(queue, permission) {
  const granted = queue.permissions || [];
  return granted.includes('*') || granted.includes(permission);
}

const needs = (permission) => `needs the ${permission} permission`;
const reasonFor = (queue, permission) => (can(queue, permission) ? null : needs(permission));

// ---------------------------------------------------------------- formatting

const fmtCount = (n) => (n === null || n === undefined ? '—' : String(n));

function fmtAge(seconds) {
  if (seconds === null || seconds === undefined) return '—';
  const n = Math.floor(seconds);
  if (n < 60) return `${n} s`;
  if (n < 3600) return `${Math.floor(n / 60)} min ${n % 60} s`;
  if (n < 86400) return `${Math.floor(n / 3600)} h ${Math.floor((n % 3600) / 60)} min`;
  return `${Math.floor(n / 86400)} d ${Math.floor((n % 86400) / 3600)} h`;
}

function timeEl(iso) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  const date = new Date(iso);
  return h('time', { datetime: iso, title: iso }, Number.isNaN(date.getTime()) ? iso : date.toLocaleString());
}

const utf8Length = (text) => new TextEncoder().encode(text).length;

/** A body as shown: JSON objects and arrays pretty-printed, anything else as it is. */
function prettyBody(body) {
  try {
    const value = JSON.parse(body);
    if (value !== null && typeof value === 'object') return { text: JSON.stringify(value, null, 2), json: true };
  } catch (_) {
    // not JSON: shown as text
  }
  return { text: body, json: false };
}

function parseWhole(text, label, min, max) {
  const trimmed = String(text).trim();
  if (!/^\d+$/.test(trimmed)) throw new InputError(`${label} must be a whole number from ${min} to ${max}`);
  const n = Number(trimmed);
  if (n < min || n > max) throw new InputError(`${label} must be from ${min} to ${max} (got ${n})`);
  return n;
}

// ---------------------------------------------------------------- attribute rules (as the API's)

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A decimal as SQS takes it: at most 38 significant digits, zero or 10^-128 to 10^126. */
function validNumber(text) {
  const m = /^[+-]?(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!m) return false;
  const whole = m[1];
  const fraction = m[2] || '';
  if (whole.length + fraction.length === 0) return false;
  const exponent = m[3] === undefined ? 0 : Number(m[3]);
  if (!Number.isFinite(exponent) || Math.abs(exponent) >= 1e6) return false;
  const digits = whole + fraction;
  const first = digits.search(/[^0]/);
  if (first < 0) return true; // zero
  const significant = digits.replace(/0+$/, '').length - first;
  if (significant > 38) return false;
  const leading = whole.length - 1 - first + exponent;
  const exactlyMax = leading === 126 && significant === 1 && digits[first] === '1';
  return (leading >= -128 && leading < 126) || exactlyMax;
}

/** Checks the attribute rows as the API would and answers the request's attributes. */
function checkAttributes(rows) {
  const attributes = {};
  rows.forEach((row, index) => {
    const name = row.name.value;
    const type = row.type.value;
    const value = row.value.value;
    const at = `attribute ${index + 1}`;
    const nameBytes = utf8Length(name);
    if (nameBytes < 1 || nameBytes > 256) throw new InputError(`${at}: a name is 1 to 256 bytes of UTF-8 (this one is ${nameBytes})`);
    const lower = name.toLowerCase();
    for (const reserved of ['aws.', 'amazon.', 'sqsgw.']) {
      if (lower.startsWith(reserved)) throw new InputError(`${at}: names starting with "${name.slice(0, reserved.length)}" are reserved`);
    }
    if (Object.prototype.hasOwnProperty.call(attributes, name)) throw new InputError(`${at}: the name "${name}" is given twice`);
    let bytes;
    if (type === 'Binary') {
      if (!BASE64.test(value)) throw new InputError(`${at}: a Binary value is standard base64 (A–Z, a–z, 0–9, +, /, padded with =)`);
      bytes = atob(value).length;
    } else {
      bytes = utf8Length(value);
      if (type === 'Number' && !validNumber(value)) throw new InputError(`${at}: "${value}" is not a number (at most 38 significant digits, 10^-128 to 10^126)`);
    }
    if (bytes < 1 || bytes > 1024) throw new InputError(`${at}: a value is 1 to 1024 bytes${type === 'Binary' ? ' once decoded' : ''} (this one is ${bytes})`);
    attributes[name] = { type, value };
  });
  return attributes;
}

// ---------------------------------------------------------------- pages, timers, routing

/** What a page (or a tab) runs: its timers stop and its late answers are dropped when it ends. */
class Scope {
  constructor() {
    this.alive = true;
    this.timers = new Set();
    this.ends = [];
    this.visible = [];
  }
  after(ms, fn) {
    if (!this.alive) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (this.alive) fn();
    }, ms);
    this.timers.add(timer);
  }
  onEnd(fn) {
    this.ends.push(fn);
  }
  onVisible(fn) {
    this.visible.push(fn);
  }
  end() {
    if (!this.alive) return;
    this.alive = false;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const fn of this.ends) fn();
  }
}

/** Repeats fn every ms while the scope lives, skipping the turns when the page is hidden. */
function every(scope, ms, fn) {
  const turn = () => {
    if (!document.hidden) fn();
    scope.after(ms, turn);
  };
  scope.after(ms, turn);
}

/**
 * Wraps an async refresh so one request runs at a time: a call made meanwhile runs it once more
 * when that one ends (it may have started before the change the caller wants to see).
 */
function coalesced(scope, fn) {
  let running = null;
  let again = false;
  return () => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await fn();
      } while (again && scope.alive);
      running = null;
    })();
    return running;
  };
}

function newPage(extra) {
  if (state.page) state.page.scope.end();
  state.page = { scope: new Scope(), ...extra };
  return state.page.scope;
}

function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

const main = () => $('main');

function showPage(...nodes) {
  fill(main(), ...nodes);
  // Focus was on something the new page replaced: move it to the new page's heading.
  const heading = main().querySelector('h1');
  if (heading && (!document.activeElement || document.activeElement === document.body)) {
    heading.focus({ preventScroll: true });
  }
}

async function route() {
  const seq = ++state.routeSeq;
  const hash = location.hash || '#/queues';
  const queueMatch = /^#\/queues\/([0-9a-fA-F-]{32,36})(?:\/([a-z]+))?$/.exec(hash);
  const queueId = queueMatch ? queueMatch[1].toLowerCase() : null;
  if (queueMatch && state.page && state.page.queueId === queueId && state.page.showTab) {
    state.page.showTab(queueMatch[2], false);
    return;
  }
  clearAlert();
  say(state.flash || '');
  state.flash = null;
  if (!state.key) {
    if (hash !== '#/signin') state.afterSignIn = hash;
    renderSignIn();
    return;
  }
  if (!state.me) {
    newPage({});
    showPage(h('p', { class: 'muted' }, 'Checking the key…'));
    try {
      state.me = (await api('GET', '/v1/key')).result;
    } catch (err) {
      if (seq === state.routeSeq) {
        showError(err);
        if (!err.handled) showPage(h('p', {}, h('button', { type: 'button', onclick: () => route() }, 'Try again')));
      }
      return;
    }
    if (seq !== state.routeSeq) return;
  }
  updateWho();
  if (queueMatch) renderQueuePage(queueId, queueMatch[2]);
  else if (hash === '#/queues') renderQueueList();
  else location.replace('#/queues');
}

function updateWho() {
  const signedIn = Boolean(state.key && state.me);
  $('who').hidden = !signedIn;
  $('who-name').textContent = signedIn ? state.me.name || state.me.id : '';
}

/** Forgets the key (sessionStorage included) and shows sign-in, with why when there is a reason. */
function signOut(reason) {
  sessionStorage.removeItem(KEY_STORAGE);
  state.key = null;
  state.me = null;
  state.queues = null;
  if (reason) {
    state.signInMessage = reason;
    if (location.hash !== '#/signin') state.afterSignIn = location.hash;
  }
  updateWho();
  if (location.hash === '#/signin') route();
  else location.hash = '#/signin';
}

// ---------------------------------------------------------------- sign-in

function renderSignIn() {
  newPage({});
  updateWho();
  const input = h('input', { type: 'password', name: 'key', autocomplete: 'off', spellcheck: 'false', testid: 'signin-key' });
  const submit = h('button', { type: 'submit', testid: 'signin-submit' }, 'Sign in');
  const form = h('form', { class: 'card signin', testid: 'signin-form', novalidate: true, 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title', tabindex: '-1' }, 'Sign in'),
    h('p', {}, 'Sign in with a basaltic API key. The console keeps it in this browser tab only ' +
      '(sessionStorage, gone when the tab closes) and sends it only to this gateway’s API; what you can ' +
      'do here is what the key may do.'),
    h('p', { class: 'hint', testid: 'signin-where' }, 'A zero-config gateway keeps one with every permission ' +
      'in sqs-gateway-data/basaltic-key; others are made with ' +
      'sqs-gateway new-basaltic-key. The consumer API key the gateway prints on its first start is an ezgh ' +
      'key, not a basaltic one.'),
    field('API key', input),
    h('div', { class: 'actions' }, submit));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearAlert();
    const key = input.value.trim();
    if (!key) {
      showError(new InputError('enter a key'));
      input.focus();
      return;
    }
    submit.disabled = true;
    try {
      const me = await api('GET', '/v1/key', undefined, key);
      state.key = key;
      state.me = me.result;
      sessionStorage.setItem(KEY_STORAGE, key);
      input.value = '';
      const next = state.afterSignIn && state.afterSignIn !== '#/signin' ? state.afterSignIn : '#/queues';
      state.afterSignIn = null;
      navigate(next);
    } catch (err) {
      showError(err);
      submit.disabled = false;
      input.focus();
      input.select();
    }
  });
  fill(main(), form);
  if (state.signInMessage) {
    $('alert').textContent = state.signInMessage;
    state.signInMessage = null;
  }
  input.focus();
}

// ---------------------------------------------------------------- the queue list

function deadLetterOf(queue) {
  return (queue.settings && queue.settings.dead_letter_queue) || null;
}

function renderQueueList() {
  const scope = newPage({});
  const canCreate = globalCan('manage_queues');
  const updated = h('span', { class: 'muted', testid: 'list-updated' });
  const refresh = h('button', { type: 'button', class: 'secondary', testid: 'refresh-queues' }, 'Refresh');
  const newButton = h('button', { type: 'button', testid: 'new-queue', 'aria-expanded': 'false', 'aria-controls': 'create-queue' }, 'New queue');
  const createBox = h('div', { id: 'create-queue', class: 'card', hidden: true });
  const tbody = h('tbody', { testid: 'queue-rows' });
  const head = ['Name', 'Type', 'Visible', 'In flight', 'Delayed', 'Oldest age', 'Dead-letter queue', 'DLQ depth', 'ID'];
  const table = h('table', { class: 'queues', testid: 'queue-table' },
    h('caption', { class: 'sr-only' }, 'Queues this key can see, with their message counts'),
    h('thead', {}, h('tr', {}, head.map((label) => h('th', { scope: 'col' }, label)))),
    tbody);

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
      lastLoad = Date.now();
      fillQueueRows(tbody, data.queues);
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
    h('div', { class: 'table-wrap', role: 'region', 'aria-label': 'Queue table', tabindex: '0' }, table),
    h('p', { class: 'muted small' }, 'Counts refresh every 10 s while this page is visible; “—” means the backend could not count just now.')));
  load();
}

function fillQueueRows(tbody, queues) {
  if (!queues.length) {
    fill(tbody, h('tr', {}, h('td', { colspan: '9', class: 'empty' }, 'No queues this key can see yet.')));
    return;
  }
  const byId = new Map(queues.map((q) => [q.id, q]));
  const deadLetterIds = new Set(queues.map((q) => deadLetterOf(q)).filter((d) => d && d.queue_id).map((d) => d.queue_id));
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
        deadLetterIds.has(q.id) ? h('span', { class: 'badge', title: 'a dead-letter queue of another queue' }, 'DLQ') : null),
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

function createQueueForm(onCreated, onCancel) {
  const queues = state.queues || [];
  const name = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', maxlength: '57', testid: 'create-name' });
  const type = h('select', { testid: 'create-type' },
    h('option', { value: 'standard' }, 'standard'), h('option', { value: 'fifo' }, 'FIFO'));
  const inputs = {};
  const settingFields = SETTINGS.map((setting) => {
    inputs[setting.key] = h('input', {
      type: 'number', inputmode: 'numeric', min: String(setting.min), max: String(setting.max),
      placeholder: 'default', testid: `create-${setting.key}`,
    });
    return field(setting.label, inputs[setting.key], `${setting.min}–${setting.max}`);
  });
  const dlq = h('select', { testid: 'create-dlq' });
  const maxReceives = h('input', { type: 'number', inputmode: 'numeric', min: '1', max: '1000', placeholder: '5', disabled: true, testid: 'create-max-receive-count' });
  const dedup = h('input', { type: 'checkbox', id: uid('f'), testid: 'create-content-dedup' });
  const dedupField = h('div', { class: 'field check', hidden: true }, dedup,
    h('label', { for: dedup.id }, 'Content-based deduplication (FIFO)'));
  function fillDeadLetters() {
    const current = dlq.value;
    fill(dlq, h('option', { value: '' }, 'none'),
      queues.filter((q) => q.type === type.value).map((q) => h('option', { value: q.id }, q.name)));
    dlq.value = [...dlq.options].some((o) => o.value === current) ? current : '';
    maxReceives.disabled = !dlq.value;
  }
  fillDeadLetters();
  type.addEventListener('change', () => {
    fillDeadLetters();
    dedupField.hidden = type.value !== 'fifo';
  });
  dlq.addEventListener('change', () => {
    maxReceives.disabled = !dlq.value;
  });
  const submit = h('button', { type: 'submit', testid: 'create-submit' }, 'Create queue');
  const cancel = h('button', { type: 'button', class: 'secondary', onclick: onCancel }, 'Cancel');
  const form = h('form', { novalidate: true, testid: 'create-form', 'aria-labelledby': 'create-title' },
    h('h2', { id: 'create-title' }, 'New queue'),
    h('div', { class: 'grid' },
      field('Name', name, '1–57 letters, digits and -'),
      field('Type', type)),
    h('fieldset', {}, h('legend', {}, 'Settings (empty: the gateway’s default)'),
      h('div', { class: 'grid' }, settingFields)),
    h('fieldset', {}, h('legend', {}, 'Dead-letter queue'),
      h('div', { class: 'grid' },
        field('Move messages to', dlq, 'a listed queue of the same type'),
        field('After this many receives', maxReceives, '1–1000, default 5')),
      dedupField),
    h('div', { class: 'actions' }, submit, cancel));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearAlert();
    let body;
    try {
      if (!/^[A-Za-z0-9-]{1,57}$/.test(name.value)) throw new InputError('a queue name is 1 to 57 letters, digits and -');
      const settings = {};
      for (const setting of SETTINGS) {
        const raw = inputs[setting.key].value;
        if (raw.trim() !== '') settings[setting.key] = parseWhole(raw, setting.label, setting.min, setting.max);
      }
      if (dlq.value) {
        settings.dead_letter_queue = {
          queue_id: dlq.value,
          max_receive_count: maxReceives.value.trim() === '' ? 5 : parseWhole(maxReceives.value, 'the receive limit', 1, 1000),
        };
      }
      if (type.value === 'fifo' && dedup.checked) settings.content_based_deduplication = true;
      body = { name: name.value, type: type.value, settings };
    } catch (err) {
      showError(err);
      return;
    }
    submit.disabled = true;
    try {
      const created = await api('POST', '/v1/queues', body);
      onCreated(created.result);
    } catch (err) {
      showError(err);
      submit.disabled = false;
    }
  });
  return form;
}

// ---------------------------------------------------------------- a queue's page and its tabs

async function renderQueuePage(id, tabName) {
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
  const ctx = { q: list.find((q) => q.id === id), list, refreshQueue: null };
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
      }
    } catch (err) {
      if (scope.alive) showError(err);
    }
  });
  ctx.refreshQueue = refreshQueue;
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
    current = tab.id;
    clearAlert();
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
      h('div', { class: 'actions' }, refresh)),
    h('p', { class: 'muted small' }, 'ID ', h('code', { testid: 'queue-id' }, q.id)),
    h('dl', { class: 'counts', testid: 'queue-counts' },
      label('Visible', countEls.visible), label('In flight', countEls.in_flight),
      label('Delayed', countEls.delayed), label('Oldest', countEls.oldest)),
    tablist,
    panel));
  showTab(tabName, false);
}

// ---------------------------------------------------------------- Send

function renderSend(panel, ctx) {
  const q = ctx.q;
  const fifo = q.type === 'fifo';
  const body = h('textarea', { rows: '6', spellcheck: 'false', testid: 'send-body' });
  const rowsBox = h('div', { class: 'attr-rows', testid: 'attr-rows' });
  const rows = [];
  const addButton = h('button', { type: 'button', class: 'secondary', testid: 'add-attribute' }, 'Add attribute');
  const attrCount = h('span', { class: 'muted small', 'aria-live': 'polite' });
  function renumber() {
    rows.forEach((row, i) => {
      row.legend.textContent = `Attribute ${i + 1}`;
      row.remove.setAttribute('aria-label', `Remove attribute ${i + 1}`);
    });
    addButton.disabled = rows.length >= MAX_ATTRIBUTES;
    attrCount.textContent = rows.length >= MAX_ATTRIBUTES ? `${MAX_ATTRIBUTES} attributes: the most a message carries` : `${rows.length} of ${MAX_ATTRIBUTES} attributes`;
  }
  function addRow() {
    if (rows.length >= MAX_ATTRIBUTES) return;
    const row = {
      name: h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', testid: 'attr-name' }),
      type: h('select', { testid: 'attr-type' }, ['String', 'Number', 'Binary'].map((t) => h('option', { value: t }, t))),
      value: h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', testid: 'attr-value' }),
      legend: h('legend', {}),
      remove: h('button', { type: 'button', class: 'secondary small', testid: 'attr-remove' }, 'Remove'),
    };
    row.el = h('fieldset', { class: 'attr-row', testid: 'attr-row' }, row.legend,
      field('Name', row.name), field('Type', row.type), field('Value', row.value, null), row.remove);
    row.type.addEventListener('change', () => {
      row.value.placeholder = row.type.value === 'Binary' ? 'base64' : '';
    });
    row.remove.addEventListener('click', () => {
      rows.splice(rows.indexOf(row), 1);
      row.el.remove();
      renumber();
      addButton.focus();
    });
    rows.push(row);
    rowsBox.append(row.el);
    renumber();
    row.name.focus();
  }
  addButton.addEventListener('click', addRow);
  renumber();

  const delay = h('input', { type: 'number', inputmode: 'numeric', min: '0', max: '900', placeholder: String(q.settings.delay_seconds), testid: 'send-delay' });
  const group = h('input', { type: 'text', autocomplete: 'off', testid: 'send-group-id' });
  const dedup = h('input', { type: 'text', autocomplete: 'off', testid: 'send-dedup-id' });
  const contentDedup = Boolean(q.settings.content_based_deduplication);
  const submit = h('button', { type: 'submit', testid: 'send-submit' }, 'Send');
  const result = h('p', { class: 'result', hidden: true, testid: 'send-result' });
  const form = h('form', { novalidate: true, testid: 'send-form' },
    field('Body', body),
    h('fieldset', {}, h('legend', {}, 'Attributes'), rowsBox, h('div', { class: 'actions' }, addButton, attrCount)),
    fifo
      ? h('div', { class: 'grid' },
        field('Group id (required)', group),
        field(contentDedup ? 'Deduplication id (optional)' : 'Deduplication id (required)', dedup,
          contentDedup ? 'this queue deduplicates by content when none is given' : 'this queue does not deduplicate by content'))
      : h('div', { class: 'grid' }, field('Delay (seconds)', delay, `0–900; empty: the queue’s ${q.settings.delay_seconds} s`)),
    h('div', { class: 'actions' }, guarded(submit, reasonFor(q, 'send'))),
    result);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearAlert();
    let request;
    try {
      request = { body: body.value };
      if (rows.length) request.attributes = checkAttributes(rows);
      if (fifo) {
        if (!group.value) throw new InputError('a FIFO queue needs a group id');
        request.group_id = group.value;
        if (dedup.value) request.deduplication_id = dedup.value;
        else if (!contentDedup) throw new InputError('this FIFO queue needs a deduplication id (it does not deduplicate by content)');
      } else if (delay.value.trim() !== '') {
        request.delay_seconds = parseWhole(delay.value, 'the delay', 0, 900);
      }
    } catch (err) {
      showError(err);
      return;
    }
    submit.disabled = true;
    try {
      const sent = await api('POST', queuePath(q.id, '/messages'), request);
      fill(result, 'Sent. Message id: ', h('code', { testid: 'sent-message-id' }, sent.result.message_id));
      result.hidden = false;
      say(`Sent message ${sent.result.message_id}.`);
      ctx.refreshQueue();
    } catch (err) {
      showError(err);
    } finally {
      submit.disabled = false;
    }
  });
  fill(panel, h('h2', {}, 'Send a message'), form);
}

// ---------------------------------------------------------------- messages as shown

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

function messageCard(m, extra) {
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

// ---------------------------------------------------------------- Messages (inspect)

function renderMessages(panel, ctx, scope) {
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
      pageInfo.textContent = `${data.messages.length} message(s) on this page${nextCursor ? ', more after it' : ''}`;
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

// ---------------------------------------------------------------- Receive (by hand)

function renderReceive(panel, ctx) {
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
      say(`Received ${data.messages.length} message(s).`);
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

// ---------------------------------------------------------------- Metrics

const sampleTime = (sample) => Date.parse(sample.at);
const isMissing = (sample) => ['visible', 'in_flight', 'delayed'].every((k) => sample[k] === null || sample[k] === undefined);

/** The spans [from, to] (ms) with no sample: untaken samples, and holes over 1.5 intervals. */
function findGaps(samples, intervalMs) {
  const spans = [];
  for (let i = 0; i < samples.length; i += 1) {
    const t = sampleTime(samples[i]);
    if (i > 0 && t - sampleTime(samples[i - 1]) > 1.5 * intervalMs) spans.push([sampleTime(samples[i - 1]), t]);
    if (isMissing(samples[i])) {
      spans.push([i > 0 ? sampleTime(samples[i - 1]) : t, i + 1 < samples.length ? sampleTime(samples[i + 1]) : t]);
    }
  }
  spans.sort((a, b) => a[0] - b[0]);
  const merged = [];
  for (const span of spans) {
    const last = merged[merged.length - 1];
    if (last && span[0] <= last[1]) last[1] = Math.max(last[1], span[1]);
    else merged.push([...span]);
  }
  return merged;
}

/** One chart: the series as polylines broken at nulls and holes, the gaps as shaded rects. */
function chart(key, title, samples, intervalMs, gaps) {
  const W = 320;
  const H = 120;
  const L = 40;
  const R = 8;
  const T = 10;
  const B = 22;
  const t0 = samples.length ? sampleTime(samples[0]) : 0;
  const t1 = samples.length ? sampleTime(samples[samples.length - 1]) : 1;
  const span = Math.max(t1 - t0, intervalMs);
  const x = (t) => L + ((t - t0) / span) * (W - L - R);
  const points = samples.map((sample, i) => ({
    t: sampleTime(sample),
    v: isMissing(sample) ? null : sample[key],
    hole: i > 0 && sampleTime(sample) - sampleTime(samples[i - 1]) > 1.5 * intervalMs,
  }));
  const values = points.map((p) => p.v).filter((v) => v !== null && v !== undefined);
  const top = Math.max(1, ...values);
  const y = (v) => T + (1 - v / top) * (H - T - B);
  const segments = [];
  let segment = [];
  for (const p of points) {
    if (p.hole || p.v === null || p.v === undefined) {
      if (segment.length) segments.push(segment);
      segment = [];
    }
    if (p.v !== null && p.v !== undefined) segment.push(p);
  }
  if (segment.length) segments.push(segment);
  const fmtClock = (t) => new Date(t).toLocaleTimeString();
  const latest = [...points].reverse().find((p) => p.v !== null && p.v !== undefined);
  const summary = values.length
    ? `${title}: latest ${latest.v}, highest ${Math.max(...values)}${gaps.length ? `, ${gaps.length} gap(s)` : ''}`
    : `${title}: no values`;
  const svgEl = s('svg', {
    viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': summary, class: 'chart', testid: `chart-svg-${key}`,
  },
  s('title', {}, summary),
  gaps.map(([a, b]) => s('rect', {
    class: 'gap', 'data-gap': '', 'data-from': new Date(a).toISOString(), 'data-to': new Date(b).toISOString(),
    x: x(a).toFixed(1), y: T, width: Math.max(2, x(b) - x(a)).toFixed(1), height: H - T - B,
  }, s('title', {}, `missing samples ${fmtClock(a)}–${fmtClock(b)}`))),
  s('line', { class: 'axis', x1: L, y1: y(0), x2: W - R, y2: y(0) }),
  s('line', { class: 'axis', x1: L, y1: T, x2: L, y2: y(0) }),
  s('text', { class: 'tick', x: L - 4, y: T + 4, 'text-anchor': 'end' }, String(top)),
  s('text', { class: 'tick', x: L - 4, y: y(0), 'text-anchor': 'end' }, '0'),
  samples.length ? [
    s('text', { class: 'tick', x: L, y: H - 6, 'text-anchor': 'start' }, fmtClock(t0)),
    s('text', { class: 'tick', x: W - R, y: H - 6, 'text-anchor': 'end' }, fmtClock(t1)),
  ] : null,
  segments.map((seg) => (seg.length === 1
    ? s('circle', { class: 'dot', cx: x(seg[0].t).toFixed(1), cy: y(seg[0].v).toFixed(1), r: 2 })
    : s('polyline', { class: 'line', fill: 'none', points: seg.map((p) => `${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`).join(' ') }))));
  let note = null;
  if (samples.length && !values.length) {
    note = key === 'oldest_message_age_seconds'
      ? 'No value: the queue was empty, or this backend does not tell (SQS).'
      : 'No value in this range.';
  }
  return h('figure', { class: 'chart-box', testid: `chart-${key}` },
    h('figcaption', {}, h('span', {}, title), h('strong', { testid: `chart-latest-${key}` }, latest ? String(latest.v) : '—')),
    svgEl,
    note ? h('p', { class: 'muted small' }, note) : null);
}

function renderMetrics(panel, ctx, scope) {
  const q = ctx.q;
  const range = h('select', { testid: 'metrics-range' }, METRIC_RANGES.map(([seconds, label]) =>
    h('option', { value: String(seconds) }, label)));
  range.value = '3600';
  const reload = h('button', { type: 'button', class: 'secondary', testid: 'metrics-reload' }, 'Reload');
  const charts = h('div', { class: 'charts', testid: 'metrics-charts' });
  const info = h('p', { class: 'muted small', testid: 'metrics-info' });
  let samples = [];
  let intervalMs = 10000;
  let generation = 0;
  const sinceOf = () => new Date(Date.now() - Number(range.value) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  function draw() {
    const gaps = findGaps(samples, intervalMs);
    fill(charts, ...CHARTS.map(([key, title]) => chart(key, title, samples, intervalMs, gaps)));
    info.textContent = samples.length
      ? `${samples.length} samples, one every ${intervalMs / 1000} s; ${gaps.length} gap(s).`
      : 'No samples yet: the gateway samples each queue every interval.';
  }
  /** One request: the whole range (full), or what came since the last sample; then again in an interval. */
  async function load(full, mine) {
    if (document.hidden && !full) {
      scope.after(intervalMs, () => load(false, mine));
      return;
    }
    const since = full || !samples.length ? sinceOf() : samples[samples.length - 1].at;
    try {
      const data = await api('GET', queuePath(q.id, `/metrics?since=${encodeURIComponent(since)}`));
      if (!scope.alive || mine !== generation) return;
      intervalMs = Math.max(1, Number(data.interval_seconds) || 10) * 1000;
      if (full) samples = [];
      const seen = new Set(samples.map(sampleTime));
      for (const sample of data.samples) {
        if (!seen.has(sampleTime(sample))) samples.push(sample);
      }
      const cutoff = Date.now() - Number(range.value) * 1000;
      samples = samples.filter((sample) => sampleTime(sample) >= cutoff).sort((a, b) => sampleTime(a) - sampleTime(b));
      draw();
    } catch (err) {
      if (scope.alive && mine === generation) showError(err);
    }
    if (scope.alive && mine === generation) scope.after(intervalMs, () => load(false, mine));
  }
  const subscriptions = h('section', { class: 'subscriptions', testid: 'subscriptions', 'aria-label': 'Push subscriptions' });
  const restart = () => {
    loadSubscriptions(q, subscriptions, scope);
    return load(true, ++generation);
  };
  range.addEventListener('change', () => { clearAlert(); restart(); });
  reload.addEventListener('click', () => { clearAlert(); restart(); });
  fill(panel,
    h('h2', {}, 'Metrics'),
    h('div', { class: 'actions' }, field('Range', range), reload),
    h('p', { class: 'note', testid: 'metrics-caption' }, 'Shaded: missing samples are gaps, not empty queues. ' +
      'A gap is a sample the gateway could not take (the backend did not answer), or a stretch with no samples at all.'),
    info,
    charts,
    subscriptions);
  restart();
}

/** The queue's push subscriptions and their latest attempts: one request (on opening and Reload). */
async function loadSubscriptions(q, box, scope) {
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

// ---------------------------------------------------------------- Redrive

function renderRedrive(panel, ctx, scope) {
  const q = ctx.q;
  const sources = ctx.list.filter((o) => {
    const dl = deadLetterOf(o);
    return dl && dl.queue_id === q.id;
  });
  const byId = new Map(ctx.list.map((o) => [o.id, o]));
  const destination = h('select', { testid: 'redrive-destination' },
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
          `Rate: ${task.max_messages_per_second ? `${task.max_messages_per_second} messages a second` : 'no limit'} · `,
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

// ---------------------------------------------------------------- Settings, purge and delete

function renderSettings(panel, ctx) {
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
        ? [dlq ? h('a', { href: `#/queues/${dlq.id}` }, dlq.name) : (dl.queue_id || 'not a basaltic queue'), ` after ${dl.max_receive_count} receive(s)`]
        : 'none'),
      q.type === 'fifo' ? row('Content-based deduplication', st.content_based_deduplication ? 'on' : 'off') : null,
      row('Created', timeEl(q.created_at)),
      row('This key may', (q.permissions || []).join(', ') || 'nothing')),
    h('h2', {}, 'Danger zone'),
    h('div', { class: 'danger-zone' },
      h('p', {}, guarded(purge, reasonFor(q, 'purge'))),
      h('p', {}, guarded(remove, reasonFor(q, 'manage_queues')))));
}

/** A confirmation that stays disabled until the queue's name is typed. */
function confirmByName({ opener, title, text, name, verb, action }) {
  const titleId = uid('dialog');
  const input = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', testid: 'confirm-input' });
  const ok = h('button', { type: 'submit', class: 'danger', disabled: true, testid: 'confirm-button' }, verb);
  const cancel = h('button', { type: 'button', class: 'secondary', testid: 'confirm-cancel' }, 'Cancel');
  const form = h('form', { novalidate: true },
    h('h2', { id: titleId }, title),
    h('p', {}, text),
    field(`Type the queue’s name, ${name}, to confirm`, input),
    h('div', { class: 'actions' }, ok, cancel));
  const dialog = h('dialog', { class: 'confirm', testid: 'confirm-dialog', 'aria-labelledby': titleId }, form);
  input.addEventListener('input', () => {
    ok.disabled = input.value !== name;
  });
  cancel.addEventListener('click', () => dialog.close());
  dialog.addEventListener('close', () => {
    dialog.remove();
    if (opener && opener.isConnected) opener.focus();
  });
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (input.value !== name) return;
    clearAlert();
    ok.disabled = true;
    try {
      await action();
      dialog.close();
    } catch (err) {
      dialog.close();
      showError(err);
    }
  });
  document.body.append(dialog);
  dialog.showModal();
  input.focus();
}

// ---------------------------------------------------------------- start

$('sign-out').addEventListener('click', () => {
  state.flash = 'Signed out: the key is forgotten.';
  signOut(null);
});
window.addEventListener('hashchange', route);
document.addEventListener('visibilitychange', () => {
  if (!document.hidden && state.page) for (const fn of state.page.scope.visible) fn();
});
route();
