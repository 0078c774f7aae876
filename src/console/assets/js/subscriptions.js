// Why: the Subscriptions tab: the push subscriptions that consume a queue, their state and
// delivery log (no bodies), and, for those made through the API, make, pause, resume, rotate the
// secret of and delete them; a new secret is shown once, in a dialog that takes it away on close.

import { uid, h, fill, field, guarded } from './dom.js';
import { reasonFor } from './session.js';
import { api, queuePath, describe, InputError } from './api.js';
import { showError, clearAlert, say } from './notices.js';
import { timeEl, plural } from './format.js';
import { whole } from './rules.js';
import { openDialog } from './dialog.js';
import { confirmByName } from './confirm.js';

/** What changing a subscription takes on its queue (it consumes the queue, and signs as the gateway). */
const MANAGE = ['manage_queues', 'receive', 'delete'];

/** Why this key cannot change the queue's subscriptions, or null. */
function manageReason(q) {
  const missing = MANAGE.filter((permission) => reasonFor(q, permission));
  if (!missing.length) return null;
  const names = missing.length === 1 ? missing[0] : `${missing.slice(0, -1).join(', ')} and ${missing[missing.length - 1]}`;
  return `needs the ${names} permission${missing.length === 1 ? '' : 's'}`;
}

const subPath = (q, name, rest = '') => queuePath(q.id, `/subscriptions/${encodeURIComponent(name)}${rest}`);

export function renderSubscriptions(panel, ctx, scope) {
  const q = ctx.q;
  const reason = manageReason(q);
  const list = h('div', { class: 'subs', testid: 'subscriptions' });
  const reload = h('button', { type: 'button', class: 'secondary', testid: 'subscriptions-reload' }, 'Reload');
  const create = h('button', { type: 'button', testid: 'subscription-new' }, 'New subscription');
  /** Loads the list; then focuses the button `testid` of subscription `name`, if given. */
  async function load(name, testid) {
    try {
      const data = await api('GET', queuePath(q.id, '/subscriptions'));
      if (!scope.alive) return;
      const subs = data.subscriptions || [];
      fill(list, subs.length
        ? subs.map((sub) => subscriptionCard(sub, q, reason, load))
        : h('p', { class: 'muted', testid: 'subscriptions-none' }, 'No push subscription consumes this queue.'));
      const again = name && list.querySelector(`[data-name="${CSS.escape(name)}"] [data-testid="${testid}"]`);
      if (again && !again.disabled) again.focus();
    } catch (err) {
      if (scope.alive) fill(list, h('p', { class: 'note error', testid: 'subscriptions-error' }, describe(err)));
    }
  }
  reload.addEventListener('click', () => { clearAlert(); load(); });
  create.addEventListener('click', () => newSubscription(q, create, () => load()));
  fill(panel,
    h('h2', {}, 'Push subscriptions'),
    h('p', { class: 'muted small' }, 'A push subscription receives this queue’s messages and posts each one to a URL, ' +
      'signed with its secret. Those from the config file are changed in the file.'),
    h('div', { class: 'actions' }, guarded(create, reason), reload),
    list);
  load();
}

const onOff = (flag) => (flag ? 'yes' : 'no');

/** One subscription: where it posts, its state and settings, its controls and its delivery log. */
function subscriptionCard(sub, q, permissionReason, reload) {
  const managed = sub.managed || null;
  const fromConfig = sub.source === 'config';
  const reason = fromConfig ? 'set in the config file: change it there' : permissionReason;
  const outcomes = Object.entries(sub.outcomes || {}).map(([name, count]) => `${name.replace('_', ' ')} ${count}`);
  const log = sub.log || [];
  const enabled = managed ? managed.enabled : sub.state !== 'disabled';
  const pause = h('button', { type: 'button', class: 'secondary', testid: enabled ? 'subscription-pause' : 'subscription-resume' },
    enabled ? 'Pause' : 'Resume');
  const rotate = h('button', { type: 'button', class: 'secondary', testid: 'subscription-rotate' }, 'Rotate secret');
  const remove = h('button', { type: 'button', class: 'danger', testid: 'subscription-delete' }, 'Delete');
  pause.addEventListener('click', async () => {
    clearAlert();
    pause.disabled = true;
    try {
      await api('PATCH', subPath(q, sub.name), { enabled: !enabled });
      say(`${enabled ? 'Paused' : 'Resumed'} subscription ${sub.name}.`);
      await reload(sub.name, enabled ? 'subscription-resume' : 'subscription-pause');
    } catch (err) {
      showError(err);
      pause.disabled = false;
    }
  });
  rotate.addEventListener('click', () => rotateSecret(q, sub, rotate, () => reload(sub.name, 'subscription-rotate')));
  remove.addEventListener('click', () => confirmByName({
    opener: remove,
    title: `Delete subscription ${sub.name}?`,
    text: 'No new delivery starts; those in flight end as they would. Its secret stops signing.',
    name: sub.name,
    what: 'subscription’s name',
    verb: 'Delete subscription',
    action: async () => {
      await api('DELETE', subPath(q, sub.name));
      say(`Deleted subscription ${sub.name}.`);
      await reload();
    },
  }));
  const settings = managed ? h('p', { class: 'small', testid: 'subscription-settings' },
    `At most ${managed.max_concurrency} in flight; ${managed.max_per_second ? `${managed.max_per_second} a second` : 'no rate limit'}; `,
    `timeout ${managed.timeout_seconds} s; lease ${managed.visibility_timeout_seconds} s; body ${managed.body}; `,
    `hold on 202: ${onOff(managed.hold_on_202)}. Secret made `, timeEl(managed.secret_created_at),
    managed.previous_secret_until ? [' (the previous one signs too until ', timeEl(managed.previous_secret_until), ')'] : null,
    `; made by ${managed.created_by}.`) : null;
  return h('div', { class: 'card', testid: 'subscription', 'data-name': sub.name },
    h('p', {},
      h('strong', {}, sub.name), ' posts to ', h('code', {}, sub.endpoint),
      h('span', { class: `badge push-${sub.state}`, testid: 'subscription-state' }, sub.state.replace('_', ' ')),
      h('span', { class: 'badge', testid: 'subscription-source' }, fromConfig ? 'config file' : 'API')),
    sub.disabled_because ? h('p', { class: 'note error' }, `Disabled: ${sub.disabled_because}.`) : null,
    h('p', { class: 'small', testid: 'subscription-summary' },
      `In flight ${sub.in_flight} (window ${sub.window} of ${sub.max_concurrency}); failures in a row ${sub.failures_in_a_row}; `,
      outcomes.length ? outcomes.join(', ') : 'no attempts yet', '.'),
    settings,
    h('div', { class: 'actions' }, guarded(pause, reason), guarded(rotate, reason), guarded(remove, reason)),
    log.length ? h('div', { class: 'table-wrap' }, h('table', { testid: 'subscription-log' },
      h('caption', { class: 'muted small' }, `Delivery log: the latest ${plural(log.length, 'attempt')}, newest first (no bodies, no secrets)`),
      h('thead', {}, h('tr', {}, ['When', 'Message', 'Attempt', 'Outcome', 'Status', 'Latency'].map((name) =>
        h('th', { scope: 'col' }, name)))),
      h('tbody', {}, log.map((attempt) => h('tr', { testid: 'subscription-attempt' },
        h('td', {}, timeEl(attempt.at)),
        h('td', {}, h('code', {}, attempt.message_id)),
        h('td', {}, String(attempt.attempt)),
        h('td', {}, attempt.outcome.replace('_', ' ')),
        h('td', {}, attempt.status === null ? '—' : String(attempt.status)),
        h('td', {}, `${attempt.latency_ms} ms`))))))
      : h('p', { class: 'muted small', testid: 'subscription-log-empty' }, 'No delivery attempt yet.'));
}

/** The optional settings of a new subscription: API name, label, range hint. */
const OPTIONAL = [
  ['max_concurrency', 'Most in flight', '1–100, default 10'],
  ['max_per_second', 'Most a second', '1–10000; empty: no limit'],
  ['timeout_seconds', 'Timeout (seconds)', '1–60, default 15'],
  ['visibility_timeout_seconds', 'Lease (seconds)', 'longer than the timeout; empty: twice it, at least 30'],
];

function newSubscription(q, opener, done) {
  const name = h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', maxlength: '64', testid: 'sub-name' });
  const url = h('input', { type: 'url', autocomplete: 'off', spellcheck: 'false', testid: 'sub-url', placeholder: 'https://…' });
  const numbers = Object.fromEntries(OPTIONAL.map(([key]) => [key, h('input', {
    type: 'number', inputmode: 'numeric', min: '0', placeholder: 'default', testid: `sub-${key}`,
  })]));
  const body = h('select', { testid: 'sub-body' },
    h('option', { value: 'wrapped' }, 'wrapped: the message with its metadata'),
    h('option', { value: 'raw' }, 'raw: the body as it is'));
  const hold = h('input', { type: 'checkbox', id: uid('f'), testid: 'sub-hold' });
  const submit = h('button', { type: 'submit', testid: 'sub-create' }, 'Create subscription');
  const { close, error } = openDialog({
    opener,
    title: `New push subscription on ${q.name}`,
    testid: 'subscription-dialog',
    build: (closeIt) => {
      const form = h('form', { novalidate: true },
        field('Name', name, '1–64 letters, digits, - and _; unique on the queue'),
        field('URL', url, 'https:// (http:// and private addresses only where the gateway allows them)'),
        h('div', { class: 'grid' }, OPTIONAL.map(([key, label, hint]) => field(label, numbers[key], hint))),
        field('Body', body),
        h('div', { class: 'field check' }, hold, h('label', { for: hold.id }, 'Hold on 202 (a 202 keeps the message leased)')),
        h('div', { class: 'actions' }, submit,
          h('button', { type: 'button', class: 'secondary', testid: 'sub-cancel', onclick: closeIt }, 'Cancel')));
      form.addEventListener('submit', async (event) => {
        event.preventDefault();
        error.textContent = '';
        const request = { name: name.value.trim(), url: url.value.trim() };
        try {
          if (!request.name) throw new InputError('a subscription needs a name');
          if (!request.url) throw new InputError('a subscription needs a URL');
          for (const [key, label] of OPTIONAL) {
            if (numbers[key].value.trim() !== '') request[key] = whole(numbers[key].value, label);
          }
        } catch (err) {
          error.textContent = describe(err);
          return;
        }
        if (body.value !== 'wrapped') request.body = body.value;
        if (hold.checked) request.hold_on_202 = true;
        submit.disabled = true;
        try {
          const made = await api('POST', queuePath(q.id, '/subscriptions'), request);
          close();
          say(`Made subscription ${made.subscription.name}.`);
          showSecret(opener, `Secret of ${made.subscription.name}`, made.secret, done);
        } catch (err) {
          error.textContent = describe(err);
          submit.disabled = false;
        }
      });
      return form;
    },
  });
}

function rotateSecret(q, sub, opener, done) {
  const overlap = h('input', { type: 'number', inputmode: 'numeric', min: '0', max: '604800', placeholder: '86400', testid: 'rotate-overlap' });
  const submit = h('button', { type: 'submit', testid: 'rotate-submit' }, 'Rotate secret');
  const { close, error } = openDialog({
    opener,
    title: `Rotate the secret of ${sub.name}?`,
    testid: 'rotate-dialog',
    build: (closeIt) => {
      const form = h('form', { novalidate: true },
        h('p', {}, 'A new secret signs from now on; the current one keeps signing beside it for the overlap, so the receiver can switch without a gap.'),
        field('Overlap (seconds)', overlap, '0–604800; empty: 86400 (a day)'),
        h('div', { class: 'actions' }, submit,
          h('button', { type: 'button', class: 'secondary', testid: 'rotate-cancel', onclick: closeIt }, 'Cancel')));
      form.addEventListener('submit', async (event) => {
        event.preventDefault();
        error.textContent = '';
        const request = {};
        try {
          if (overlap.value.trim() !== '') request.overlap_seconds = whole(overlap.value, 'the overlap');
        } catch (err) {
          error.textContent = describe(err);
          return;
        }
        submit.disabled = true;
        try {
          const answer = await api('POST', subPath(q, sub.name, '/rotate-secret'), request);
          close();
          say(`Rotated the secret of ${sub.name}.`);
          showSecret(opener, `New secret of ${sub.name}`, answer.secret, done);
        } catch (err) {
          error.textContent = describe(err);
          submit.disabled = false;
        }
      });
      return form;
    },
  });
}

/** Shows a secret once: a copy button, and nothing of it left in the page once closed. */
function showSecret(opener, title, secret, done) {
  const value = h('input', { type: 'text', readonly: true, value: secret, class: 'secret', spellcheck: 'false', testid: 'secret-value' });
  const copied = h('span', { class: 'small', 'aria-live': 'polite', testid: 'secret-copied' });
  const copy = h('button', { type: 'button', class: 'secondary', testid: 'secret-copy' }, 'Copy');
  copy.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(value.value);
      copied.textContent = 'Copied.';
    } catch (_) {
      value.select();
      copied.textContent = 'Selected: press Ctrl+C (⌘C) to copy.';
    }
  });
  openDialog({
    opener,
    title,
    testid: 'secret-dialog',
    build: (close) => h('div', {},
      h('p', { class: 'note warn' }, h('strong', {}, 'Shown this once: '),
        'keep it now (the receiver checks signatures with it); the gateway never shows it again.'),
      field('Signing secret', value),
      h('div', { class: 'actions' }, copy, copied),
      h('div', { class: 'actions' }, h('button', { type: 'button', testid: 'secret-done', onclick: close }, 'Done'))),
    onClose: () => {
      value.value = '';
      if (done) done();
    },
  });
  value.select();
}
