// Charts: plain SVG, one per context, with a title and a description for screen readers.
/* global document */
import { api, state } from './api.js';
import { $, appendChildren, el } from './dom.js';
import { pct, plural, utcDay, utcHour, verdictText } from './format.js';

const SVG_NS = 'http://www.w3.org/2000/svg';
const HOUR_MS = 3_600_000;

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
  return appendChildren(node, children);
}

/**
 * Signal volume (bars) and negative rate (line) per hour, deployments as dashed markers on the time
 * axis; every bar and marker has a <title> (tooltip and accessible name).
 */
function chart(context, points, deployments) {
  const W = 720;
  const H = 180;
  const left = 44;
  const right = 44;
  const top = 14;
  const bottom = 28;
  const plotW = W - left - right;
  const plotH = H - top - bottom;
  const first = Date.parse(points[0].start);
  const span = points.length * HOUR_MS;
  const x = (ms) => left + ((ms - first) / span) * plotW;
  const barW = plotW / points.length;
  const maxSignals = Math.max(1, ...points.map((p) => p.signals));
  const yCount = (n) => top + plotH - (n / maxSignals) * plotH;
  const yRate = (r) => top + plotH - r * plotH;
  const total = points.reduce((n, p) => n + p.signals, 0);
  const negative = points.reduce((n, p) => n + p.negative, 0);
  const busiest = points.reduce((a, b) => (b.signals > a.signals ? b : a), points[0]);
  const shown = deployments.filter((d) => {
    const t = Date.parse(d.deployed_at);
    return t >= first && t < first + span;
  });
  const id = `chart-${context.id}`;

  const bars = points
    .filter((p) => p.signals > 0)
    .map((p) =>
      svg(
        'rect',
        {
          class: 'bar',
          x: x(Date.parse(p.start)).toFixed(1),
          y: yCount(p.signals).toFixed(1),
          width: Math.max(1, barW - 0.5).toFixed(1),
          height: (top + plotH - yCount(p.signals)).toFixed(1),
        },
        svg(
          'title',
          {},
          `${utcHour(Date.parse(p.start))}: ${plural(p.signals, 'signal')}, ${p.negative} negative (${pct(p.negative_rate)})`,
        ),
      ),
    );
  // The rate line breaks over empty hours instead of drawing through them.
  let path = '';
  let drawing = false;
  for (const p of points) {
    if (p.negative_rate === null) {
      drawing = false;
      continue;
    }
    const px = (x(Date.parse(p.start)) + barW / 2).toFixed(1);
    // A lone hour still shows: `h0.01` with round caps draws a dot.
    path += drawing
      ? `L${px},${yRate(p.negative_rate).toFixed(1)} `
      : `M${px},${yRate(p.negative_rate).toFixed(1)} h0.01 `;
    drawing = true;
  }
  const days = [];
  for (let t = Math.ceil(first / (24 * HOUR_MS)) * 24 * HOUR_MS; t < first + span; t += 24 * HOUR_MS) {
    days.push(
      svg('line', { class: 'tick', x1: x(t), x2: x(t), y1: top + plotH, y2: top + plotH + 4 }),
      svg('text', { class: 'axis', x: x(t), y: H - 8, 'text-anchor': 'middle' }, utcDay(t)),
    );
  }
  const markers = shown.map((d) => {
    const mx = x(Date.parse(d.deployed_at)).toFixed(1);
    const label = d.version || 'deployment';
    return svg(
      'g',
      { class: `marker ${d.verification.verdict}`, 'data-deployment-id': d.id },
      svg('title', {}, `${label} deployed ${utcHour(Date.parse(d.deployed_at))}: ${verdictText(d)}`),
      svg('line', { x1: mx, x2: mx, y1: top, y2: top + plotH }),
      svg('text', { x: mx, y: top - 3, 'text-anchor': 'middle' }, label),
    );
  });
  const description =
    `${plural(total, 'signal')} over the last 7 days, ${negative.toLocaleString()} negative (${pct(total ? negative / total : null)}). ` +
    (total
      ? `Busiest hour: ${utcHour(Date.parse(busiest.start))} with ${plural(busiest.signals, 'signal')}. `
      : '') +
    (shown.length
      ? `Deployments marked: ${shown.map((d) => `${d.version || 'deployment'} on ${utcDay(Date.parse(d.deployed_at))} (${d.verification.provisional ? 'provisional ' : ''}${d.verification.verdict})`).join('; ')}.`
      : 'No deployment in this period.');
  return svg(
    'svg',
    {
      class: 'chart',
      viewBox: `0 0 ${W} ${H}`,
      role: 'img',
      'aria-labelledby': `${id}-title ${id}-desc`,
      'data-context-id': context.id,
    },
    svg('title', { id: `${id}-title` }, `${context.name}: signals and negative rate per hour, last 7 days`),
    svg('desc', { id: `${id}-desc` }, description),
    svg('line', { class: 'baseline', x1: left, x2: W - right, y1: top + plotH, y2: top + plotH }),
    svg(
      'text',
      { class: 'axis', x: left - 6, y: top + 4, 'text-anchor': 'end' },
      maxSignals.toLocaleString(),
    ),
    svg('text', { class: 'axis', x: left - 6, y: top + plotH, 'text-anchor': 'end' }, '0'),
    svg('text', { class: 'axis rate-axis', x: W - right + 6, y: top + 4 }, '100 %'),
    svg('text', { class: 'axis rate-axis', x: W - right + 6, y: top + plotH }, '0 %'),
    ...bars,
    svg('path', { class: 'rate', d: path.trim() || 'M0,0' }),
    ...days,
    ...markers,
  );
}

export async function refreshCharts() {
  const byContext = new Map();
  for (const p of state.approved || [])
    for (const d of state.deployments.get(p.id) || [])
      byContext.set(p.context_id, [...(byContext.get(p.context_id) || []), d]);
  const series = await Promise.all(
    state.contexts.map((c) => api('GET', `/api/context/${encodeURIComponent(c.id)}/series?bucket=hour`)),
  );
  const list = $('charts');
  if (state.contexts.length === 0) {
    list.replaceChildren(el('p', { class: 'empty' }, 'Add a context to see its signals over time.'));
    return;
  }
  list.replaceChildren(
    ...state.contexts.map((c, i) =>
      el(
        'figure',
        { class: 'chart-box' },
        el('figcaption', {}, el('strong', {}, c.name)),
        chart(c, series[i], byContext.get(c.id) || []),
      ),
    ),
  );
}
