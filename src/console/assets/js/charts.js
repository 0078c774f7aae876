// Why: the Metrics tab's charts, drawn as SVG with no library: missing samples are gaps (shaded),
// never zeros, and a line breaks at each gap; axes carry ticks, and a readout tells the time and
// value under the pointer (or the arrow keys).

import { h, s } from './dom.js';
import { fmtClock, zoneOffsetMs, zoneName } from './clock.js';

/** The six charts of the Metrics tab: sample field, title, and whether it is a rate. */
export const CHARTS = [
  ['visible', 'Visible'],
  ['in_flight', 'In flight'],
  ['oldest_message_age_seconds', 'Oldest message age (s)'],
  ['sends', 'Sends (/s)', true],
  ['receives', 'Receives (/s)', true],
  ['repeated_receives', 'Repeated receives (/s)', true],
];

export const sampleTime = (sample) => Date.parse(sample.at);
const isMissing = (sample) => ['visible', 'in_flight', 'delayed'].every((k) => sample[k] === null || sample[k] === undefined);
const has = (v) => v !== null && v !== undefined;

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

/** Round value ticks from 0: a step of 1, 2 or 5 times a power of ten, at most 5 steps to the top. */
export function valueTicks(highest) {
  const top = Math.max(highest, 0);
  if (top === 0) return { top: 1, ticks: [0, 1] };
  let step = 10 ** Math.floor(Math.log10(top / 5));
  for (const m of [1, 2, 5, 10]) {
    if (top / (step * m) <= 5) {
      step *= m;
      break;
    }
  }
  const count = Math.max(1, Math.ceil(top / step - 1e-9));
  const ticks = [];
  for (let i = 0; i <= count; i += 1) ticks.push(Number((i * step).toPrecision(12)));
  return { top: ticks[ticks.length - 1], ticks };
}

const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400]
  .map((seconds) => seconds * 1000);

/** Time ticks on the chosen zone's round times: the smallest step that gives at most 5. */
export function timeTicks(t0, t1) {
  const span = Math.max(t1 - t0, 1);
  const step = TIME_STEPS.find((candidate) => span / candidate <= 5) || TIME_STEPS[TIME_STEPS.length - 1];
  const offset = zoneOffsetMs(t0);
  const ticks = [];
  for (let t = Math.ceil((t0 + offset) / step) * step - offset; t <= t1; t += step) ticks.push(t);
  return { step, ticks };
}

/** A value as shown: a rate with "/s" and up to 3 significant digits, a count as it is. */
export function fmtValue(v, rate) {
  if (!has(v)) return '—';
  if (!rate) return String(v);
  const shown = v === 0 ? '0' : String(Number(v.toPrecision(3)));
  return `${shown}/s`;
}

/**
 * One chart: the series as polylines broken at nulls and holes, the gaps as shaded rects, value
 * and time ticks, and a readout. `rate` divides each count by the interval (counts per sample).
 */
export function chart(key, title, samples, intervalMs, gaps, rate = false) {
  const W = 320;
  const H = 130;
  const L = 40;
  const R = 10;
  const T = 10;
  const B = 22;
  const t0 = samples.length ? sampleTime(samples[0]) : 0;
  const t1 = samples.length ? sampleTime(samples[samples.length - 1]) : 1;
  const span = Math.max(t1 - t0, intervalMs);
  const x = (t) => L + ((t - t0) / span) * (W - L - R);
  const perSecond = rate ? 1000 / intervalMs : 1;
  const points = samples.map((sample, i) => {
    const raw = isMissing(sample) ? null : sample[key];
    return {
      t: sampleTime(sample),
      v: has(raw) ? raw * perSecond : null,
      hole: i > 0 && sampleTime(sample) - sampleTime(samples[i - 1]) > 1.5 * intervalMs,
    };
  });
  const values = points.map((p) => p.v).filter(has);
  const { top, ticks } = valueTicks(Math.max(0, ...values));
  const y = (v) => T + (1 - v / top) * (H - T - B);
  const segments = [];
  let segment = [];
  for (const p of points) {
    if (p.hole || !has(p.v)) {
      if (segment.length) segments.push(segment);
      segment = [];
    }
    if (has(p.v)) segment.push(p);
  }
  if (segment.length) segments.push(segment);
  const show = (v) => fmtValue(v, rate);
  const latest = [...points].reverse().find((p) => has(p.v));
  const summary = values.length
    ? `${title}: latest ${show(latest.v)}, highest ${show(Math.max(...values))}${gaps.length ? `, ${gaps.length} gap${gaps.length === 1 ? '' : 's'}` : ''}`
    : `${title}: no values`;
  const times = samples.length ? timeTicks(t0, t1) : { step: 60000, ticks: [] };
  const withSeconds = times.step < 60000;
  const cursor = s('line', { class: 'cursor', x1: L, y1: T, x2: L, y2: y(0), visibility: 'hidden' });
  const hit = s('rect', { class: 'hit', x: L, y: T, width: W - L - R, height: H - T - B });
  const readoutId = `readout-${key}`;
  const svgEl = s('svg', {
    viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': summary, class: 'chart', testid: `chart-svg-${key}`,
    tabindex: samples.length ? '0' : null, 'aria-describedby': readoutId,
  },
  s('title', {}, summary),
  gaps.map(([a, b]) => s('rect', {
    class: 'gap', 'data-gap': '', 'data-from': new Date(a).toISOString(), 'data-to': new Date(b).toISOString(),
    x: x(a).toFixed(1), y: T, width: Math.max(2, x(b) - x(a)).toFixed(1), height: H - T - B,
  }, s('title', {}, `missing samples ${fmtClock(a)}–${fmtClock(b)}`))),
  ticks.map((v) => [
    v ? s('line', { class: 'grid', x1: L, y1: y(v).toFixed(1), x2: W - R, y2: y(v).toFixed(1) }) : null,
    s('text', { class: 'tick', 'data-tick': 'value', x: L - 4, y: (y(v) + 3).toFixed(1), 'text-anchor': 'end' }, show(v)),
  ]),
  s('line', { class: 'axis', x1: L, y1: y(0), x2: W - R, y2: y(0) }),
  s('line', { class: 'axis', x1: L, y1: T, x2: L, y2: y(0) }),
  times.ticks.map((t) => [
    s('line', { class: 'axis', x1: x(t).toFixed(1), y1: y(0), x2: x(t).toFixed(1), y2: y(0) + 3 }),
    s('text', {
      class: 'tick', 'data-tick': 'time', x: x(t).toFixed(1), y: H - 6,
      'text-anchor': x(t) < L + 20 ? 'start' : x(t) > W - R - 20 ? 'end' : 'middle',
    }, fmtClock(t, withSeconds)),
  ]),
  segments.map((seg) => (seg.length === 1
    ? s('circle', { class: 'dot', cx: x(seg[0].t).toFixed(1), cy: y(seg[0].v).toFixed(1), r: 2 })
    : s('polyline', { class: 'line', fill: 'none', points: seg.map((p) => `${x(p.t).toFixed(1)},${y(p.v).toFixed(1)}`).join(' ') }))),
  cursor,
  hit);
  const readout = h('p', { class: 'readout small', id: readoutId, testid: `chart-readout-${key}`, 'aria-live': 'polite' });
  let at = -1;
  function point(index) {
    at = Math.max(0, Math.min(points.length - 1, index));
    const p = points[at];
    cursor.setAttribute('x1', x(p.t).toFixed(1));
    cursor.setAttribute('x2', x(p.t).toFixed(1));
    cursor.setAttribute('visibility', 'visible');
    readout.textContent = `${fmtClock(p.t)} ${zoneName()}: ${has(p.v) ? show(p.v) : 'no sample (gap)'}`;
  }
  function nearest(t) {
    let best = 0;
    points.forEach((p, i) => {
      if (Math.abs(p.t - t) < Math.abs(points[best].t - t)) best = i;
    });
    return best;
  }
  if (points.length) {
    svgEl.addEventListener('pointermove', (event) => {
      const box = svgEl.getBoundingClientRect();
      if (!box.width) return;
      const vx = ((event.clientX - box.left) / box.width) * W;
      point(nearest(t0 + ((vx - L) / (W - L - R)) * span));
    });
    svgEl.addEventListener('pointerleave', () => {
      if (document.activeElement === svgEl) return;
      cursor.setAttribute('visibility', 'hidden');
      readout.textContent = '';
    });
    svgEl.addEventListener('focus', () => point(at < 0 ? points.length - 1 : at));
    svgEl.addEventListener('blur', () => {
      cursor.setAttribute('visibility', 'hidden');
      readout.textContent = '';
    });
    svgEl.addEventListener('keydown', (event) => {
      const moves = { ArrowLeft: at - 1, ArrowRight: at + 1, Home: 0, End: points.length - 1 };
      if (!(event.key in moves)) return;
      event.preventDefault();
      point(moves[event.key]);
    });
  }
  let note = null;
  if (samples.length && !values.length) {
    note = key === 'oldest_message_age_seconds'
      ? 'No value: the queue was empty, or this backend does not tell (SQS).'
      : 'No value in this range.';
  }
  return h('figure', { class: 'chart-box', testid: `chart-${key}` },
    h('figcaption', {}, h('span', {}, title), h('strong', { testid: `chart-latest-${key}` }, latest ? show(latest.v) : '—')),
    svgEl,
    readout,
    note ? h('p', { class: 'muted small' }, note) : null);
}
