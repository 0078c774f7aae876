// Why: the Metrics tab's charts, drawn as SVG with no library: missing samples are gaps (shaded),
// never zeros, and a line breaks at each gap.

import { h, s } from './dom.js';

/** The six charts of the Metrics tab: sample field and title. */
export const CHARTS = [
  ['visible', 'Visible'],
  ['in_flight', 'In flight'],
  ['oldest_message_age_seconds', 'Oldest message age (s)'],
  ['sends', 'Sends'],
  ['receives', 'Receives'],
  ['repeated_receives', 'Repeated receives'],
];

export const sampleTime = (sample) => Date.parse(sample.at);
const isMissing = (sample) => ['visible', 'in_flight', 'delayed'].every((k) => sample[k] === null || sample[k] === undefined);

/** The spans [from, to] (ms) with no sample: untaken samples, and holes over 1.5 intervals. */
export function findGaps(samples, intervalMs) {
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
export function chart(key, title, samples, intervalMs, gaps) {
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
