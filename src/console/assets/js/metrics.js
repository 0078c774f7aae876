// Why: the Metrics tab: one request for the range, then only the samples since the last one,
// every interval; counts per interval charted as rates, times in the zone the user picks.

import { uid, h, fill, field } from './dom.js';
import { api, queuePath } from './api.js';
import { showError, clearAlert } from './notices.js';
import { CHARTS, sampleTime, findGaps, chart } from './charts.js';
import { usesUtc, setUtc, zoneName } from './clock.js';
import { plural } from './format.js';

const METRIC_RANGES = [
  [900, 'Last 15 minutes'],
  [3600, 'Last hour'],
  [6 * 3600, 'Last 6 hours'],
  [24 * 3600, 'Last 24 hours'],
];

export function renderMetrics(panel, ctx, scope) {
  const q = ctx.q;
  const range = h('select', { testid: 'metrics-range' }, METRIC_RANGES.map(([seconds, label]) =>
    h('option', { value: String(seconds) }, label)));
  range.value = '3600';
  const reload = h('button', { type: 'button', class: 'secondary', testid: 'metrics-reload' }, 'Reload');
  const charts = h('div', { class: 'charts', testid: 'metrics-charts' });
  const info = h('p', { class: 'muted small', testid: 'metrics-info' });
  const utc = h('input', { type: 'checkbox', id: uid('f'), testid: 'metrics-utc', checked: usesUtc() });
  const zone = h('span', { class: 'muted small', testid: 'metrics-zone' });
  const showZone = () => {
    zone.textContent = `Times in ${zoneName()}${usesUtc() ? '' : ' (this browser’s zone)'}.`;
  };
  showZone();
  utc.addEventListener('change', () => {
    setUtc(utc.checked);
    showZone();
    draw();
  });
  let samples = [];
  let intervalMs = 10000;
  let generation = 0;
  const sinceOf = () => new Date(Date.now() - Number(range.value) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  function draw() {
    const gaps = findGaps(samples, intervalMs);
    fill(charts, ...CHARTS.map(([key, title, rate]) => chart(key, title, samples, intervalMs, gaps, Boolean(rate))));
    info.textContent = samples.length
      ? `${plural(samples.length, 'sample')}, one every ${intervalMs / 1000} s; ${plural(gaps.length, 'gap')}. ` +
        'Sends and receives are per second: each sample’s count divided by the interval.'
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
  const restart = () => load(true, ++generation);
  range.addEventListener('change', () => { clearAlert(); restart(); });
  reload.addEventListener('click', () => { clearAlert(); restart(); });
  fill(panel,
    h('h2', {}, 'Metrics'),
    h('div', { class: 'actions' }, field('Range', range), reload,
      h('div', { class: 'field check' }, utc, h('label', { for: utc.id }, 'Show times in UTC')), zone),
    h('p', { class: 'note', testid: 'metrics-caption' }, 'Shaded: missing samples are gaps, not empty queues. ' +
      'A gap is a sample the gateway could not take (the backend did not answer), or a stretch with no samples at all.'),
    info,
    charts,
    h('p', { class: 'muted small' }, 'Point at a chart, or focus it and use the arrow keys, for the time and value of a sample.'));
  restart();
}
