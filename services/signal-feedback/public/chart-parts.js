// The charts' building blocks on top of Chart.js: the HTML tooltip, the deployments plugin (dashed
// lines with buttons over them) and the time axis' labels. chart.js draws the charts with them.
import { el } from './dom.js';
import { clock, dateTime, day } from './format.js';

/** One hour, ms. */
export const HOUR_MS = 3_600_000;
/** One bucket's length, ms, by bucket name. */
export const BUCKET_MS = { hour: HOUR_MS, day: 24 * HOUR_MS };
/** Width of a deployment's hit area, px. */
export const MARKER_HIT_PX = 20;

/** Shows `lines` under a bold `title` in the tooltip `tip`, near (x, y) inside its wrapper. */
export function showTip(tip, x, y, title, lines) {
  tip.replaceChildren(el('strong', {}, title), ...lines.map((l) => el('div', {}, l)));
  tip.hidden = false;
  const box = tip.parentElement.getBoundingClientRect();
  const w = tip.offsetWidth;
  const h = tip.offsetHeight;
  tip.style.left = `${Math.max(0, Math.min(box.width - w, x - w / 2))}px`;
  tip.style.top = `${y - h - 12 < 0 ? y + 12 : y - h - 12}px`;
}

/**
 * Chart.js's tooltip options drawing `tip` (the chart's HTML tooltip) for the hovered point: `describe`
 * gives the point's title and lines from its index.
 */
export function htmlTooltip(tip, describe) {
  return {
    enabled: false,
    external: ({ tooltip }) => {
      const item = tooltip.dataPoints?.[0];
      if (tooltip.opacity === 0 || !item) {
        tip.hidden = true;
        return;
      }
      const [title, lines] = describe(item.dataIndex);
      showTip(tip, tooltip.caretX, tooltip.caretY, title, lines);
    },
  };
}

export function bucketTitle(ms, bucket) {
  return bucket === 'day' ? `${day(ms)} (UTC day)` : `${dateTime(ms)} – ${clock(ms + HOUR_MS)}`;
}

/**
 * The deployments plugin: a dashed line per deployment in the plot area (coloured by verdict), and the
 * matching buttons (`markers`) moved over them after each render, so a resize keeps them aligned.
 */
export function deploymentsPlugin(shown, xValue, markers, colors) {
  return {
    id: 'deployments',
    afterDatasetsDraw(chart) {
      const { ctx, chartArea } = chart;
      ctx.save();
      ctx.setLineDash([5, 4]);
      ctx.lineWidth = 2;
      for (const d of shown) {
        const x = chart.scales.x.getPixelForValue(xValue(Date.parse(d.deployed_at)));
        ctx.strokeStyle =
          colors[d.verification.provisional ? 'pending' : d.verification.verdict] || colors.pending;
        ctx.beginPath();
        ctx.moveTo(x, chartArea.top);
        ctx.lineTo(x, chartArea.bottom);
        ctx.stroke();
      }
      ctx.restore();
    },
    afterRender(chart) {
      const { chartArea } = chart;
      let lastX = -Infinity;
      let level = 0;
      for (const [i, d] of shown.entries()) {
        const x = chart.scales.x.getPixelForValue(xValue(Date.parse(d.deployed_at)));
        // Badges closer than their width stack downwards instead of overlapping.
        level = x - lastX < MARKER_HIT_PX + 2 ? level + 1 : 0;
        lastX = x;
        const button = markers.children[i];
        button.style.left = `${x - MARKER_HIT_PX / 2}px`;
        button.style.top = `${chartArea.top}px`;
        button.style.height = `${chartArea.bottom - chartArea.top}px`;
        button.firstChild.style.top = `${level * 20}px`;
      }
    },
  };
}

// Steps between labels on the time axis, in hours and in days, smallest first.
const HOUR_STEPS = [1, 2, 3, 4, 6, 12];
const DAY_STEPS = [1, 2, 3, 7, 14, 30, 61, 91, 183];
// Room one label needs, px: "28 Nov" (the longer of it and "14:00") with a gap.
const LABEL_PX = 62;

/**
 * The time axis label of the bucket starting at `ms`, or null for none (Chart.js then draws no tick):
 * with hours over at most two days, every few hours (midnights as days); otherwise midnights only,
 * every few days; the steps keep the labels `LABEL_PX` apart over `width` px, so they never collide.
 */
export function tickLabel(ms, bucket, buckets, width) {
  const days = bucket === 'day' ? buckets : buckets / 24;
  const dayIndex = Math.floor(ms / BUCKET_MS.day);
  if (bucket === 'hour' && buckets <= 48) {
    const step = HOUR_STEPS.find((h) => (buckets / h) * LABEL_PX <= width) ?? 24;
    const hour = new Date(ms).getUTCHours();
    if (hour % step !== 0) return null;
    return hour === 0 ? day(ms) : clock(ms);
  }
  if (ms % BUCKET_MS.day !== 0) return null;
  const step = DAY_STEPS.find((d) => (days / d) * LABEL_PX <= width) ?? 365;
  return dayIndex % step === 0 ? day(ms) : null;
}
