// Analyze now, and why each context was or was not analysed; a warning about signals that reached
// no context (stored and counted, never analysed).
import { api, state } from './api.js';
import { $, el } from './dom.js';
import { plural } from './format.js';

/** Reads what the analysis would see (GET /api/dashboard/analysis) into `state.readiness`. */
export async function refreshReadiness() {
  state.readiness = await api('GET', '/api/dashboard/analysis');
  renderUnroutedWarning();
}

/** The warning above the contexts when a product has signals without a context in the last 7 days. */
export function renderUnroutedWarning() {
  const unrouted = (state.readiness?.unrouted || []).filter((u) => u.signals_7d > 0);
  const box = $('unrouted-warning');
  box.hidden = unrouted.length === 0;
  box.replaceChildren(
    ...unrouted.map((u) =>
      el(
        'span',
        { class: 'line', dataset: { productId: u.product_id } },
        `${u.name}: ${plural(u.signals_7d, 'signal')} in the last 7 days (${u.signals_24h} in 24 h) reached no context ` +
          'and will never be analysed. Send a context_id with each signal; a product with exactly one context ' +
          'routes signals to it by itself, but only those sent after the context exists.',
      ),
    ),
  );
}

/** Why the pass gave what it gave, per context: "Checkout: 3 of 5 signals in 24 h — not analysed …". */
function reasonOf(ctx, readiness, created, quotaFull) {
  const counted = `${ctx.name}: ${ctx.signals_24h} of ${readiness.min_signals} signals in ${readiness.window_hours} h`;
  if (created.has(ctx.context_id)) return [counted, ' — new proposal below.', 'ok'];
  if (!ctx.due)
    return [
      counted,
      ` — not analysed: it needs ${readiness.min_signals - ctx.signals_24h} more in the last ${readiness.window_hours} h.`,
      'skip',
    ];
  if (quotaFull) return [counted, " — not analysed: this month's proposals are used up (see Plans).", 'skip'];
  return [counted, ' — analysed: nothing new (the evidence matches an existing proposal).', 'same'];
}

/**
 * Runs an analysis pass with the button busy, then reports per context why a proposal was or was not
 * made and warns about signals without a context.
 * @param refreshAll reads everything again once the pass is done
 */
export async function analyzeNow(refreshAll) {
  const button = $('analyze');
  const report = $('analysis-report');
  button.disabled = true;
  button.textContent = 'Analyzing…';
  button.setAttribute('aria-busy', 'true');
  report.hidden = false;
  report.className = 'analysis-report busy';
  report.replaceChildren('Analyzing the last 24 hours of each context…');
  try {
    const result = await api('POST', '/api/analysis/run');
    await refreshAll();
    const readiness = state.readiness;
    const { limits, usage } = state.me;
    const quotaFull = limits.proposals_per_month !== null && usage.proposals >= limits.proposals_per_month;
    const created = new Set(result.proposals.map((p) => p.context_id));
    const unrouted = readiness.unrouted.reduce((n, u) => n + u.signals_24h, 0);
    report.className = 'analysis-report';
    report.replaceChildren(
      el(
        'p',
        {},
        el(
          'strong',
          {},
          `Analyzed ${plural(result.contexts_analyzed, 'context')}; ${plural(result.proposals_created, 'new proposal')}.`,
        ),
      ),
      readiness.contexts.length
        ? el(
            'ul',
            {},
            ...readiness.contexts.map((ctx) => {
              const [counted, why, kind] = reasonOf(ctx, readiness, created, quotaFull);
              return el(
                'li',
                { class: kind, dataset: { contextId: ctx.context_id } },
                el('strong', {}, counted),
                why,
              );
            }),
          )
        : el('p', {}, 'No context yet: add one so its signals can be analysed.'),
      unrouted
        ? el(
            'p',
            { class: 'warning' },
            `${plural(unrouted, 'signal')} of the last 24 h reached no context and were not analysed (see Contexts).`,
          )
        : null,
    );
  } catch (err) {
    report.hidden = true;
    throw err;
  } finally {
    button.disabled = false;
    button.textContent = 'Analyze now';
    button.removeAttribute('aria-busy');
  }
}
