// Why: how counts, ages, times and bodies are shown, the same on every page.

import { h } from './dom.js';

export const fmtCount = (n) => (n === null || n === undefined ? '—' : String(n));

export function fmtAge(seconds) {
  if (seconds === null || seconds === undefined) return '—';
  const n = Math.floor(seconds);
  if (n < 60) return `${n} s`;
  if (n < 3600) return `${Math.floor(n / 60)} min ${n % 60} s`;
  if (n < 86400) return `${Math.floor(n / 3600)} h ${Math.floor((n % 3600) / 60)} min`;
  return `${Math.floor(n / 86400)} d ${Math.floor((n % 86400) / 3600)} h`;
}

export function timeEl(iso) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  const date = new Date(iso);
  return h('time', { datetime: iso, title: iso }, Number.isNaN(date.getTime()) ? iso : date.toLocaleString());
}

export const utf8Length = (text) => new TextEncoder().encode(text).length;

/** A body as shown: JSON objects and arrays pretty-printed, anything else as it is. */
export function prettyBody(body) {
  try {
    const value = JSON.parse(body);
    if (value !== null && typeof value === 'object') return { text: JSON.stringify(value, null, 2), json: true };
  } catch (_) {
    // not JSON: shown as text
  }
  return { text: body, json: false };
}

/**
 * A count with its noun: "1 message", "2 messages", "2,000 messages" (thousands grouped as the
 * "examined" counts beside them are; `many` when the plural is not noun + s).
 */
export const plural = (n, one, many = `${one}s`) =>
  `${typeof n === 'number' ? n.toLocaleString('en') : n} ${n === 1 ? one : many}`;
