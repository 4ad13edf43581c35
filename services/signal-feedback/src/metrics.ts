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
  /** The open-window monitor recorded a regression (README, "The open-window monitor"). */
  regressionDetected(): void;
  /** A webhook attempt ended: `delivered`, `retry` (another attempt follows) or `failed` (given up). */
  webhookAttempt(outcome: 'delivered' | 'retry' | 'failed'): void;
}

/** signal-feedback's metrics: the shared HTTP ones plus signals and proposals. */
export interface SignalFeedbackMetrics extends ServiceMetrics {
  events: SignalFeedbackEvents;
}

/**
 * Creates the registry (`service="signal-feedback"`) with `signals_accepted_total`,
 * `signals_refused_total{reason}`, `proposals_created_total{source}`,
 * `deployments_verified_total{verdict}`, `regressions_detected_total` and
 * `webhook_attempts_total{outcome}`.
 */
export function createSignalFeedbackMetrics(): SignalFeedbackMetrics {
  const { series, ...base } = createMetrics('signal-feedback', {
    signals_accepted_total: { type: 'counter', help: 'Signals stored' },
    signals_refused_total: { type: 'counter', help: 'Signals refused, by reason', labels: ['reason'] },
    proposals_created_total: {
      type: 'counter',
      help: 'Proposals created, by the source of their prose',
      labels: ['source'],
    },
    deployments_verified_total: {
      type: 'counter',
      help: 'Deployments whose final verdict was stored, by verdict',
      labels: ['verdict'],
    },
    regressions_detected_total: {
      type: 'counter',
      help: 'Regressions the open-window monitor detected while a deployment window was open',
    },
    webhook_attempts_total: {
      type: 'counter',
      help: 'Webhook delivery attempts, by outcome (delivered, retry, failed)',
      labels: ['outcome'],
    },
  });
  return {
    ...base,
    events: {
      signalsAccepted: (count) => series.signals_accepted_total.inc(count),
      signalsRefused: (reason, count) => series.signals_refused_total.inc({ reason }, count),
      proposalCreated: (source) => series.proposals_created_total.inc({ source }),
      deploymentVerified: (verdict) => series.deployments_verified_total.inc({ verdict }),
      regressionDetected: () => series.regressions_detected_total.inc(),
      webhookAttempt: (outcome) => series.webhook_attempts_total.inc({ outcome }),
    },
  };
}
