// Why: the Messages tab's export: messages saved as JSON lines (the export route's shape, which
// the Send tab's import takes back), either the selected rows as the page holds them or every
// message the filters keep, read through GET …/messages/export following `export-next`.

import { h } from './dom.js';
import { apiText, queuePath } from './api.js';

export const EXPORT_MAX_LINES = 100000;
const EXPORT_PAGE = 1000;

/** A message as the export route writes it (group and deduplication ids when the message has them). */
export function exportLine(m) {
  const line = {
    message_id: m.message_id,
    position: m.position,
    sent_at: m.sent_at === undefined ? null : m.sent_at,
    receive_count: m.receive_count,
    body: m.body,
    attributes: m.attributes || {},
  };
  if (m.group_id !== undefined && m.group_id !== null) line.group_id = m.group_id;
  if (m.deduplication_id !== undefined && m.deduplication_id !== null) line.deduplication_id = m.deduplication_id;
  return JSON.stringify(line);
}

/** The file name of an export: the queue's name and the time, safe on every file system. */
export function exportName(queueName, what) {
  const at = new Date().toISOString().replace(/[:.]/g, '-').replace(/-\d{3}Z$/, 'Z');
  return `${queueName.replace(/[^A-Za-z0-9_-]/g, '_')}-${what}-${at}.jsonl`;
}

/**
 * Saves text as a file: a Blob behind an <a download>, which is a download (not a fetch), so the
 * page's CSP (no blob: in any fetch directive) does not stop it. The URL is revoked once used.
 */
export function download(name, text) {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/x-ndjson' }));
  const a = h('a', { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

/**
 * Reads every line the filters keep, request after request, until the queue's end, a stop, or
 * EXPORT_MAX_LINES. onProgress({ lines, scanned }) after each request; answers
 * { lines, scanned, complete, capped }. Throws the API's refusal (403 when export is off).
 */
export async function exportAll(queueId, filterQuery, { shouldStop, onProgress }) {
  const lines = [];
  let scanned = 0;
  let after = null;
  let capped = false;
  for (;;) {
    const limit = Math.min(EXPORT_PAGE, EXPORT_MAX_LINES - lines.length);
    const query = `?limit=${limit}${after ? `&after=${encodeURIComponent(after)}` : ''}${filterQuery}`;
    const answer = await apiText('GET', queuePath(queueId, `/messages/export${query}`));
    for (const line of answer.text.split('\n')) if (line.trim() !== '') lines.push(line);
    scanned += Number(answer.headers.get('export-scanned') || 0);
    after = answer.headers.get('export-next');
    onProgress({ lines: lines.length, scanned });
    if (!after) return { lines, scanned, complete: true, capped };
    if (lines.length >= EXPORT_MAX_LINES) {
      capped = true;
      return { lines, scanned, complete: false, capped };
    }
    if (shouldStop()) return { lines, scanned, complete: false, capped };
  }
}
