// Charts with Chart.js (the package's browser build, loaded by index.html as the global `Chart`): per
// context, signals per bucket (bars) and the negative rate (line), with deployments as dashed lines
// whose hit areas are real buttons over the canvas, listed beside the chart; below, the context's
// signals by type. Values show on hover in an HTML tooltip (text only, never HTML).
/* global window, document, getComputedStyle */
import { api, state } from './api.js';
import { $, el } from './dom.js';
import {
  BUCKET_MS,
  HOUR_MS,
  MARKER_HIT_PX,
  bucketTitle,
  deploymentsPlugin,
  htmlTooltip,
  showTip,
  tickLabel,
} from './chart-parts.js';
import { dateTime, pct, plural, verdictLabel, verdictText } from './format.js';

const PRESETS = { '24h': 24 * HOUR_MS, '7d': 7 * 24 * HOUR_MS, '30d': 30 * 24 * HOUR_MS };
// The service's bounds on one series (GET /api/context/{id}/series).
const MAX_BUCKETS = { hour: 2_000, day: 366 };

/** The chosen range: a preset (24h, 7d, 30d) or custom `from`/`to` (ms), and the bucket. */
export const range = { preset: '7d', bucket: 'hour', from: null, to: null, chosen: false };

const live = [];
let renderSeq = 0;

function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

function currentRange() {
  if (range.preset === 'custom') return { from: range.from, to: range.to };
  const to = Date.now();
  return { from: to - PRESETS[range.preset], to };
}

/** Marks the pressed range button and shows the custom fields for "custom". */
export function showRangeControls() {
  for (const b of document.querySelectorAll('[data-range]'))
    b.setAttribute('aria-pressed', String(b.dataset.range === range.preset));
  $('custom-range').hidden = range.preset !== 'custom';
  $('bucket').value = range.bucket;
}

/** Picks a preset range; the bucket follows (hours up to 7 days, days beyond) unless the user chose one. */
export function choosePreset(preset) {
  range.chosen = true;
  // A first custom range starts as the range on display.
  const shown = currentRange();
  range.preset = preset;
  if (preset === 'custom') {
    range.from ??= shown.from;
    range.to ??= shown.to;
    $('range-from').value = toInput(range.from);
    $('range-to').value = toInput(range.to);
  } else range.bucket = preset === '30d' ? 'day' : 'hour';
  showRangeControls();
}

const toInput = (ms) => new Date(ms).toISOString().slice(0, 16);

/**
 * Reads the custom range's fields (UTC).
 * @throws Error when a field is empty or `from` is not before `to`
 */
export function readCustomRange() {
  const from = Date.parse($('range-from').value + 'Z');
  const to = Date.parse($('range-to').value + 'Z');
  if (Number.isNaN(from) || Number.isNaN(to)) throw new Error('Enter both ends of the range.');
  if (from >= to) throw new Error('The range must start before it ends.');
  range.from = from;
  range.to = to;
}

function destroyCharts() {
  for (const c of live.splice(0)) c.destroy();
}

function mainChart(canvas, tip, points, bucket, shown, markers) {
  const bucketMs = BUCKET_MS[bucket];
  const first = Date.parse(points[0].start);
  // Bucket i spans [i - 0.5, i + 0.5] on the category axis.
  const xValue = (ms) => (ms - first) / bucketMs - 0.5;
  const text = cssVar('--muted');
  const grid = cssVar('--line');
  const bad = cssVar('--bad');
  // Axis titles only where there is room for them (not on phones).
  const titled = canvas.parentElement.clientWidth > 520;
  // A rate point with no neighbour (one bucket, or isolated buckets) is drawn as a dot to stay visible.
  const rates = points.map((p) =>
    p.negative_rate === null ? null : Math.round(p.negative_rate * 1000) / 10,
  );
  const isolated = (i) =>
    rates[i] !== null && (rates[i - 1] ?? null) === null && (rates[i + 1] ?? null) === null;
  const colors = {
    improved: cssVar('--ok'),
    regressed: bad,
    inconclusive: cssVar('--fg'),
    pending: cssVar('--fg'),
  };
  return new window.Chart(canvas, {
    data: {
      labels: points.map((p) => Date.parse(p.start)),
      datasets: [
        {
          type: 'bar',
          label: 'Signals',
          data: points.map((p) => p.signals),
          yAxisID: 'count',
          backgroundColor: cssVar('--bar'),
          hoverBackgroundColor: cssVar('--accent'),
          categoryPercentage: 1,
          barPercentage: 0.9,
          minBarLength: 0,
          order: 2,
        },
        {
          type: 'line',
          label: 'Negative rate',
          data: rates,
          yAxisID: 'rate',
          borderColor: bad,
          backgroundColor: bad,
          borderWidth: 2,
          spanGaps: false,
          pointRadius: (ctx) => (isolated(ctx.dataIndex) ? 4 : points.length <= 48 ? 2 : 0),
          pointHoverRadius: 5,
          // A dot at 0 % or 100 % stays whole instead of being cut at the plot's edge.
          clip: 6,
          order: 1,
        },
      ],
    },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      layout: { padding: { top: 6 } },
      interaction: { mode: 'index', intersect: false },
      plugins: {
        legend: { display: false },
        tooltip: htmlTooltip(tip, (index) => {
          const p = points[index];
          return [
            bucketTitle(Date.parse(p.start), bucket),
            [
              plural(p.signals, 'signal'),
              `${p.negative.toLocaleString('en-GB')} negative (${pct(p.negative_rate)})`,
            ],
          ];
        }),
      },
      scales: {
        x: {
          grid: { display: false },
          ticks: {
            color: text,
            maxRotation: 0,
            // Labels fall on round times (every few hours, or midnights), spaced for the width.
            autoSkip: false,
            callback(value) {
              // The canvas less the two y axes: the plot area is not laid out yet when the labels are made.
              return tickLabel(
                Number(this.getLabelForValue(value)),
                bucket,
                points.length,
                Math.max(120, this.chart.width - 100),
              );
            },
          },
        },
        count: {
          position: 'left',
          beginAtZero: true,
          grace: '5%',
          ticks: { color: text, precision: 0, maxTicksLimit: 5 },
          grid: { color: grid },
          title: { display: titled, text: 'signals', color: text },
        },
        rate: {
          position: 'right',
          min: 0,
          max: 100,
          ticks: { color: text, stepSize: 50, callback: (v) => `${v} %` },
          grid: { drawOnChartArea: false },
          title: { display: titled, text: 'negative', color: text },
        },
      },
    },
    plugins: [deploymentsPlugin(shown, xValue, markers, colors)],
  });
}

function breakdownChart(canvas, tip, types, total) {
  const color = { negative: cssVar('--bad'), positive: cssVar('--ok'), neutral: cssVar('--neutral') };
  const text = cssVar('--muted');
  return new window.Chart(canvas, {
    type: 'bar',
    data: {
      labels: types.map((t) => t.type),
      datasets: [
        {
          label: 'Signals',
          data: types.map((t) => t.count),
          backgroundColor: types.map((t) => color[t.sentiment]),
          barPercentage: 0.8,
          categoryPercentage: 1,
        },
      ],
    },
    options: {
      indexAxis: 'y',
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      interaction: { mode: 'nearest', axis: 'y', intersect: false },
      plugins: {
        legend: { display: false },
        tooltip: htmlTooltip(tip, (index) => {
          const t = types[index];
          return [
            t.type,
            [
              `${plural(t.count, 'signal')} (${pct(total ? t.count / total : null)} of the range)`,
              t.sentiment,
            ],
          ];
        }),
      },
      scales: {
        x: {
          beginAtZero: true,
          ticks: { color: text, precision: 0, maxTicksLimit: 6 },
          grid: { color: cssVar('--line') },
        },
        y: {
          grid: { display: false },
          ticks: {
            color: text,
            autoSkip: false,
            // Long type names are cut so the bars keep their room; the tooltip names them whole.
            callback(value) {
              const name = String(this.getLabelForValue(value));
              return name.length > 22 ? name.slice(0, 21) + '…' : name;
            },
          },
        },
      },
    },
  });
}

/** The deployments of each context, from the approved proposals' lists (session.js reads them). */
function deploymentsByContext() {
  const byContext = new Map();
  for (const p of state.approved || [])
    for (const d of state.deployments.get(p.id) || [])
      byContext.set(p.context_id, [...(byContext.get(p.context_id) || []), d]);
  return byContext;
}

function deploymentTitle(d) {
  return `${d.version || 'Deployment'} · ${dateTime(Date.parse(d.deployed_at))}`;
}

/** One context's figure; `mount()` draws its charts once the figure is in the page (they need its size). */
function contextFigure(c, points, types, deployments, bucket) {
  const bucketMs = BUCKET_MS[bucket];
  const first = Date.parse(points[0].start);
  const end = first + points.length * bucketMs;
  const inRange = (d) => {
    const t = Date.parse(d.deployed_at);
    return t >= first && t < end;
  };
  const shown = deployments
    .filter(inRange)
    .sort((a, b) => Date.parse(a.deployed_at) - Date.parse(b.deployed_at));
  const outside = deployments.length - shown.length;
  const total = points.reduce((n, p) => n + p.signals, 0);
  const negative = points.reduce((n, p) => n + p.negative, 0);
  const busiest = points.reduce((a, b) => (b.signals > a.signals ? b : a), points[0]);
  const summary =
    `${plural(total, 'signal')}, ${negative.toLocaleString('en-GB')} negative (${pct(total ? negative / total : null)})` +
    (total
      ? `; busiest ${bucket}: ${bucketTitle(Date.parse(busiest.start), bucket)} with ${plural(busiest.signals, 'signal')}`
      : '');
  const description =
    `${c.name}: signals and negative rate per ${bucket}. ${summary}. ` +
    (shown.length
      ? `Deployments: ${shown.map((d) => `${deploymentTitle(d)}, ${verdictLabel(d)}`).join('; ')}.`
      : 'No deployment in this range.');

  // Two tooltips: Chart.js hides its own when the pointer leaves the canvas for a marker.
  const tip = el('div', { class: 'chart-tip value-tip', role: 'tooltip', hidden: '' });
  const markerTip = el('div', { class: 'chart-tip marker-tip', role: 'tooltip', hidden: '' });
  const canvas = el('canvas', { role: 'img', 'aria-label': description, class: 'main-chart' });
  const markers = el('div', { class: 'markers' });
  const showMarker = (i) => {
    const button = markers.children[i];
    const d = shown[i];
    showTip(markerTip, button.offsetLeft + MARKER_HIT_PX / 2, button.offsetTop + 24, deploymentTitle(d), [
      verdictText(d),
    ]);
    button.classList.add('active');
  };
  const hideMarker = (i) => {
    markerTip.hidden = true;
    markers.children[i].classList.remove('active');
  };
  for (const [i, d] of shown.entries()) {
    const verdict = d.verification.provisional ? 'pending' : d.verification.verdict;
    markers.append(
      el(
        'button',
        {
          type: 'button',
          class: `marker ${verdict}`,
          dataset: { deploymentId: d.id },
          'aria-label': `${deploymentTitle(d)}: ${verdictText(d)}`,
          onmouseenter: () => showMarker(i),
          onfocus: () => showMarker(i),
          onmouseleave: () => hideMarker(i),
          onblur: () => hideMarker(i),
        },
        el('span', { class: 'marker-badge' }, String(i + 1)),
      ),
    );
  }
  const side = el(
    'aside',
    { class: 'chart-side' },
    el('h3', {}, 'Deployments'),
    shown.length
      ? el(
          'ol',
          { class: 'deploy-list' },
          ...shown.map((d, i) =>
            el(
              'li',
              {
                dataset: { deploymentId: d.id },
                onmouseenter: () => showMarker(i),
                onmouseleave: () => hideMarker(i),
              },
              el(
                'span',
                { class: `marker-num ${d.verification.provisional ? 'pending' : d.verification.verdict}` },
                String(i + 1),
              ),
              el('strong', {}, d.version || 'Deployment'),
              el('span', { class: 'meta' }, dateTime(Date.parse(d.deployed_at))),
              el('span', { class: `verdict ${d.verification.verdict}` }, verdictLabel(d)),
            ),
          ),
        )
      : el('p', { class: 'empty' }, 'None in this range.'),
    outside ? el('p', { class: 'hint' }, `${plural(outside, 'deployment')} outside this range.`) : null,
  );
  const typesTotal = types.reduce((n, t) => n + t.count, 0);
  const breakdownTip = el('div', { class: 'chart-tip', role: 'tooltip', hidden: '' });
  const breakdownCanvas = el('canvas', {
    role: 'img',
    class: 'breakdown-chart',
    'aria-label': `${c.name}, signals by type: ${types.map((t) => `${t.type} ${t.count} (${t.sentiment})`).join(', ') || 'none'}`,
  });
  const breakdownWrap = el('div', { class: 'breakdown-wrap' }, breakdownCanvas, breakdownTip);
  breakdownWrap.style.height = `${types.length * 26 + 34}px`;
  const figure = el(
    'figure',
    {
      class: 'chart-box',
      dataset: { contextId: c.id, buckets: String(points.length), signals: String(total) },
    },
    el('figcaption', {}, el('strong', {}, c.name), ' ', el('span', { class: 'meta' }, summary)),
    el(
      'div',
      { class: 'chart-layout' },
      el('div', { class: 'chart-canvas-wrap' }, canvas, markers, tip, markerTip),
      side,
    ),
    el(
      'div',
      { class: 'breakdown' },
      el(
        'h3',
        {},
        'By signal type ',
        el(
          'span',
          { class: 'legend' },
          el('span', { class: 'key negative' }),
          'negative',
          el('span', { class: 'key positive' }),
          'positive',
          el('span', { class: 'key neutral' }),
          'neutral',
        ),
      ),
      types.length ? breakdownWrap : el('p', { class: 'empty' }, 'No signals in this range.'),
    ),
  );
  return {
    figure,
    mount() {
      live.push(mainChart(canvas, tip, points, bucket, shown, markers));
      if (types.length) live.push(breakdownChart(breakdownCanvas, breakdownTip, types, typesTotal));
    },
  };
}

/**
 * Reads each context's series and breakdown for the chosen range and draws them. On the first view,
 * when every signal came in the last 24 hours, the range narrows to 24 hours so a new product's data
 * is not a sliver at the right edge.
 * @throws Error from the API (shown by the caller's `guarded`)
 */
export async function refreshCharts() {
  const seq = ++renderSeq;
  const list = $('charts');
  if (state.contexts.length === 0) {
    destroyCharts();
    $('range-label').textContent = '';
    list.replaceChildren(el('p', { class: 'empty' }, 'Add a context to see its signals over time.'));
    return;
  }
  const { from, to } = currentRange();
  if ((to - from) / BUCKET_MS[range.bucket] > MAX_BUCKETS[range.bucket]) {
    // Too many hours for one series: days instead.
    range.bucket = 'day';
    showRangeControls();
  }
  const bucket = range.bucket;
  const span = `from=${encodeURIComponent(new Date(from).toISOString())}&to=${encodeURIComponent(new Date(to).toISOString())}`;
  const [series, types] = await Promise.all([
    Promise.all(
      state.contexts.map((c) =>
        api('GET', `/api/context/${encodeURIComponent(c.id)}/series?${span}&bucket=${bucket}`),
      ),
    ),
    Promise.all(
      state.contexts.map((c) =>
        api('GET', `/api/dashboard/types?context_id=${encodeURIComponent(c.id)}&${span}`),
      ),
    ),
  ]);
  if (seq !== renderSeq) return;
  if (!range.chosen && range.preset === '7d') {
    range.chosen = true;
    const recent = to - PRESETS['24h'];
    const any = series.some((s) => s.some((p) => p.signals > 0));
    const allRecent = series.every((s) =>
      s.every((p) => p.signals === 0 || Date.parse(p.start) + HOUR_MS > recent),
    );
    if (any && allRecent) {
      range.preset = '24h';
      showRangeControls();
      return refreshCharts();
    }
  }
  $('range-label').textContent = `${dateTime(from)} – ${dateTime(to)}, per ${bucket}.`;
  const byContext = deploymentsByContext();
  const figures = state.contexts.map((c, i) =>
    contextFigure(c, series[i], types[i], byContext.get(c.id) || [], bucket),
  );
  destroyCharts();
  list.replaceChildren(...figures.map((f) => f.figure));
  for (const f of figures) f.mount();
}
