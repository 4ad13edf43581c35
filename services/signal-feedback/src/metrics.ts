import { createMetrics, type ServiceMetrics } from '@repo/service-kit';

/** Domain events the service counts, reported by the ingestion and the analysis. */
export interface SignalFeedbackEvents {
  /** A batch was stored: `count` signals. */
  signalsAccepted(count: number): void;
  /** A batch was refused: `count` signals, for `reason` (`quota`, `invalid`, `too_large`). */
  signalsRefused(reason: string, count: number): void;
  /** A proposal was stored, its prose written by `source` (`llm` or `evidence`). */
  proposalCreated(source: 'llm' | 'evidence'): void;
  /** A deployment's verification stored its final `verdict`. */
  deploymentVerified(verdict: 'improved' | 'regressed' | 'inconclusive'): void;
}

/** signal-feedback's metrics: the shared HTTP ones plus signals and proposals. */
export interface SignalFeedbackMetrics extends ServiceMetrics {
  events: SignalFeedbackEvents;
}

/**
 * Creates the registry (`service="signal-feedback"`) with `signals_accepted_total`,
 * `signals_refused_total{reason}`, `proposals_created_total{source}` and
 * `deployments_verified_total{verdict}`.
 */
export function createSignalFeedbackMetrics(): SignalFeedbackMetrics {
  const base = createMetrics('signal-feedback');
  const accepted = base.counter('signals_accepted_total', 'Signals stored');
  const refused = base.counter('signals_refused_total', 'Signals refused, by reason', ['reason']);
  const proposals = base.counter(
    'proposals_created_total',
    'Proposals created, by the source of their prose',
    ['source'],
  );
  const verified = base.counter(
    'deployments_verified_total',
    'Deployments whose final verdict was stored, by verdict',
    ['verdict'],
  );
  return {
    ...base,
    events: {
      signalsAccepted: (count) => accepted.inc(count),
      signalsRefused: (reason, count) => refused.inc({ reason }, count),
      proposalCreated: (source) => proposals.inc({ source }),
      deploymentVerified: (verdict) => verified.inc({ verdict }),
    },
  };
}
