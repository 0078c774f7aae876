// Why: the Send tab's import: a JSON-lines file of messages (each line the body POST …/messages
// takes) sent ten at a time through the batch call, with a result per line; a bad line never
// stops the others, and a file past the bounds is refused before anything is sent. An export's
// lines import as they are: the fields only an export writes are dropped before sending.

import { uid, h, fill, field, guarded } from './dom.js';
import { reasonFor } from './session.js';
import { api, queuePath, describe } from './api.js';
import { clearAlert, say } from './notices.js';
import { plural } from './format.js';

export const IMPORT_MAX_LINES = 10000;
export const IMPORT_MAX_BYTES = 10 * 1024 * 1024;
const BATCH = 10;
/** What an export line holds that a send does not take: dropped, so an export imports as it is. */
export const EXPORT_ONLY_FIELDS = ['message_id', 'position', 'sent_at', 'receive_count'];

/** The file's lines as entries to send, or what is wrong with each; blank lines are skipped. */
export function parseLines(text) {
  const lines = [];
  text.split(/\r?\n/).forEach((raw, index) => {
    if (raw.trim() === '') return;
    const line = { line: index + 1 };
    try {
      const value = JSON.parse(raw);
      if (value === null || typeof value !== 'object' || Array.isArray(value)) line.error = 'not a JSON object';
      else if (Object.prototype.hasOwnProperty.call(value, 'id')) line.error = 'invalid_input: "id" is not a field of a message (the console numbers the lines)';
      else {
        for (const name of EXPORT_ONLY_FIELDS) delete value[name];
        line.message = value;
      }
    } catch (_) {
      line.error = 'not JSON';
    }
    lines.push(line);
  });
  return lines;
}

export function importForm(ctx, scope) {
  const q = ctx.q;
  const reason = reasonFor(q, 'send');
  const file = h('input', { type: 'file', accept: '.jsonl,.ndjson,.json,.txt,application/x-ndjson,application/json,text/plain', testid: 'import-file' });
  const start = h('button', { type: 'submit', testid: 'import-start' }, 'Import');
  const progress = h('progress', { max: '1', value: '0', hidden: true, testid: 'import-progress' });
  const summary = h('p', { class: 'result', role: 'status', 'aria-live': 'polite', testid: 'import-summary' });
  const rows = h('tbody', { testid: 'import-rows' });
  const table = h('div', { class: 'table-wrap import-results', hidden: true, role: 'region', 'aria-label': 'Import results', tabindex: '0' },
    h('table', { testid: 'import-results' },
      h('caption', { class: 'sr-only' }, 'One result per line of the file'),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Line'), h('th', { scope: 'col' }, 'Result'))),
      rows));
  file.disabled = Boolean(reason);
  const titleId = uid('import');
  const form = h('form', { novalidate: true, testid: 'import-form', 'aria-labelledby': titleId },
    h('h2', { id: titleId }, 'Import messages from a file'),
    h('p', { class: 'muted small' }, 'JSON lines: one message a line, as POST /v1/queues/{id}/messages takes it: ',
      h('code', {}, '{"body": "…", "attributes": {…}, "delay_seconds": 0, "group_id": "…", "deduplication_id": "…"}'),
      ' (only body is required); an export of the Messages tab imports as it is (its message_id, position, sent_at and receive_count are dropped).',
      ` Sent ${BATCH} at a time; at most ${IMPORT_MAX_LINES.toLocaleString('en')} lines or 10 MiB.`),
    field('JSON-lines file', file),
    h('div', { class: 'actions' }, guarded(start, reason), progress),
    summary,
    table);
  const result = (line, outcome, ...text) => rows.append(h('tr', { testid: 'import-result', 'data-line': String(line), 'data-outcome': outcome },
    h('td', { class: 'num' }, String(line)), h('td', {}, ...text)));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearAlert();
    const picked = file.files && file.files[0];
    fill(rows);
    table.hidden = true;
    summary.classList.remove('error');
    const refuse = (text) => {
      summary.textContent = text;
      summary.classList.add('error');
    };
    if (!picked) return refuse('Pick a JSON-lines file first.');
    if (picked.size > IMPORT_MAX_BYTES) {
      return refuse(`too_large: ${picked.name} is ${(picked.size / 1048576).toFixed(1)} MiB; the console imports at most 10 MiB. Nothing was sent.`);
    }
    const lines = parseLines(await picked.text());
    if (lines.length > IMPORT_MAX_LINES) {
      return refuse(`too_large: ${picked.name} has ${lines.length.toLocaleString('en')} lines; the console imports at most ${IMPORT_MAX_LINES.toLocaleString('en')}. Nothing was sent.`);
    }
    if (!lines.length) return refuse(`${picked.name} holds no line to send.`);
    start.disabled = file.disabled = true;
    progress.hidden = false;
    progress.max = lines.length;
    progress.value = 0;
    table.hidden = false;
    let sent = 0;
    let failed = 0;
    let done = 0;
    let stopped = null;
    const toSend = lines.filter((line) => line.message);
    const byLine = new Map(lines.map((line) => [line.line, line]));
    for (const line of lines) {
      if (line.error) line.outcome = ['failed', line.error];
    }
    for (let i = 0; i < toSend.length && scope.alive && !stopped; i += BATCH) {
      const batch = toSend.slice(i, i + BATCH);
      const entries = batch.map((line) => ({ ...line.message, id: `line-${line.line}` }));
      summary.textContent = `Sending lines ${batch[0].line}–${batch[batch.length - 1].line}…`;
      try {
        const answer = await api('POST', queuePath(q.id, '/messages/batch'), { entries });
        for (const ok of answer.successful || []) byLine.get(Number(ok.id.slice(5))).outcome = ['sent', ok.message_id];
        for (const bad of answer.failed || []) byLine.get(Number(bad.id.slice(5))).outcome = ['failed', `${bad.code}: ${bad.message}`];
      } catch (err) {
        for (const line of batch) line.outcome = ['failed', describe(err)];
        if (err.handled) stopped = describe(err);
      }
      done = i + batch.length;
      progress.value = lines.length - toSend.length + done;
    }
    if (!scope.alive) return;
    for (const line of lines) {
      const [outcome, text] = line.outcome || ['failed', 'not sent: the import stopped'];
      if (outcome === 'sent') {
        sent += 1;
        result(line.line, 'sent', 'sent: ', h('code', { testid: 'import-message-id' }, text));
      } else {
        failed += 1;
        result(line.line, 'failed', text);
      }
    }
    progress.hidden = true;
    start.disabled = file.disabled = Boolean(reason);
    const text = `Imported ${picked.name}: ${plural(sent, 'line')} sent, ${plural(failed, 'line')} failed, of ${plural(lines.length, 'line')}.`;
    summary.textContent = text;
    if (failed) summary.classList.add('error');
    say(text);
    ctx.refreshQueue();
  });
  return form;
}
