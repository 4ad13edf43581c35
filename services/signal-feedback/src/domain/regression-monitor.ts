import { createHash } from 'node:crypto';
import type { Logger } from '@repo/service-kit';
import type { DeploymentRecord } from '../data/deployments';
import type { MonitorStore } from '../data/regression-monitor';
import type { NewProposal } from '../data/proposals';
import type { Cell } from './causal-statistics/estimates';
import type { Verification } from './verification';
import { monthKey } from './plans';
import { webhookMessageId } from './webhooks';

/**
 * What the always-valid monitor reads of an open deployment at one moment (README, "The open-window
 * monitor"). The estimate is on the log-odds scale (positive: more failing signals after the change).
 */
export interface MonitorReading {
  /** Whether the boundary is crossed: `alwaysValidPValue ≤ alpha` on the harmful side. */
  crossed: boolean;
  /** The mSPRT's always-valid p-value (valid however often it is looked at), 0 to 1. */
  alwaysValidPValue: number;
  /** The deployment's significance level the boundary uses. */
  alpha: number;
  /** `did` (treated against controls) or `before_after`. */
  method: 'did' | 'before_after';
  /** Log-odds effect with its Wald interval at `alpha`, and its odds ratio; null: too few signals. */
  effect: {
    estimate: number;
    standardError: number;
    ciLow: number;
    ciHigh: number;
    oddsRatio: number;
  } | null;
  /** The treated context's counts before and after (the elapsed part of the window). */
  before: Cell;
  after: Cell;
  /** Minutes of the after-window elapsed when read. */
  elapsedMinutes: number;
}

/** Reads an open deployment as of `now`; null when there is nothing to read yet. */
export type ProvisionalEvaluator = (d: DeploymentRecord, now: Date) => Promise<MonitorReading | null>;

/**
 * The evaluator of the running service: the deployment's provisional verification (README,
 * "Deployments and verification"), whose `monitor` is the always-valid mSPRT at the deployment's alpha
 * over the effect the verdict estimates (difference-in-differences against the controls, or
 * before/after when there are none). Nothing is read while the verification has no monitor figures
 * (too few signals) or the window has closed.
 * @param provisional `DeploymentService.provisionalDecision`
 */
export function verificationEvaluator(
  provisional: (
    deploymentId: string,
  ) => Promise<{ deployment: DeploymentRecord; verification: Verification } | undefined>,
): ProvisionalEvaluator {
  return async (d, now) => {
    const found = await provisional(d.id);
    const v = found?.verification;
    if (!v?.monitor) return null;
    return {
      crossed: v.monitor.regression_detected,
      alwaysValidPValue: v.monitor.always_valid_p_value,
      alpha: v.alpha,
      method: v.method.estimator,
      effect: v.effect && {
        estimate: v.effect.estimate,
        standardError: v.effect.standard_error,
        ciLow: v.effect.ci_low,
        ciHigh: v.effect.ci_high,
        oddsRatio: v.effect.odds_ratio,
      },
      before: { signals: v.before.signals, failing: v.before.negative },
      after: { signals: v.after.signals, failing: v.after.negative },
      elapsedMinutes: Math.max(0, Math.round((now.getTime() - d.deployedAt.getTime()) / 60_000)),
    };
  };
}

const round = (x: number, digits: number) => Number(x.toFixed(digits));
const pct = (c: Cell) => (c.signals > 0 ? `${((c.failing / c.signals) * 100).toFixed(1)} %` : 'n/a');

/** The figures of a crossing as stored on the deployment and sent in the webhook (snake_case, rounded). */
export function regressionFigures(r: MonitorReading) {
  return {
    method: r.method,
    alpha: r.alpha,
    always_valid_p_value: round(r.alwaysValidPValue, 6),
    effect: r.effect && {
      log_odds: round(r.effect.estimate, 4),
      standard_error: round(r.effect.standardError, 4),
      ci_low: round(r.effect.ciLow, 4),
      ci_high: round(r.effect.ciHigh, 4),
      odds_ratio: round(r.effect.oddsRatio, 4),
    },
    before: { signals: round(r.before.signals, 2), failing: round(r.before.failing, 2) },
    after: { signals: round(r.after.signals, 2), failing: round(r.after.failing, 2) },
    elapsed_minutes: r.elapsedMinutes,
  };
}

/** A {@link regressionFigures} result. */
export type RegressionFigures = ReturnType<typeof regressionFigures>;

/** The priority of a "revert" proposal: above what the analysis gives all but the worst contexts. */
export const REVERT_PRIORITY = 90;

/**
 * The "revert <deployment>" proposal a crossing raises (README, "The open-window monitor"): same product
 * and context, citing the deployment (`regression_of`), with the monitor's figures as its evidence. Its
 * evidence hash is the one the final verdict's regression proposal uses, so a deployment never raises
 * two.
 */
export function revertProposal(d: DeploymentRecord, figures: RegressionFigures): NewProposal {
  const what = d.signalType ? `"${d.signalType}" signals` : 'negative signals';
  const shipped = d.version ? `version ${d.version}` : `the change deployed at ${d.deployedAt.toISOString()}`;
  const effect = figures.effect
    ? `odds ratio ${figures.effect.odds_ratio} (log-odds ${figures.effect.log_odds}, interval ${figures.effect.ci_low} to ${figures.effect.ci_high})`
    : 'no estimate';
  return {
    productId: d.productId,
    contextId: d.contextId,
    priorityScore: REVERT_PRIORITY,
    diagnosis: `Regression detected while the window is open: after ${shipped} of proposal ${d.proposalId}, the share of ${what} rose from ${pct(figures.before)} to ${pct(figures.after)} (always-valid p = ${figures.always_valid_p_value} ≤ alpha ${figures.alpha}).`,
    currentState: `Over the first ${figures.elapsed_minutes} minutes after the deployment: ${figures.after.failing} of ${figures.after.signals} signals were ${what}, against ${figures.before.failing} of ${figures.before.signals} before it.`,
    proposedChange: `Revert deployment ${d.id} (${shipped}).`,
    evidenceSummary: `Deployment ${d.id}: ${what} ${pct(figures.before)} -> ${pct(figures.after)}, ${effect}, ${figures.method === 'did' ? 'against the control contexts' : 'before against after'}; provisional, not final.`,
    predictedImpact: `Bringing the share of ${what} back to ${pct(figures.before)}.`,
    signalCount: Math.round(figures.after.signals),
    evidence: {
      kind: 'regression_detected',
      deployment_id: d.id,
      proposal_id: d.proposalId,
      signal_type: d.signalType,
      ...figures,
      top_failing_types: d.signalType
        ? [{ type: d.signalType, count: Math.round(figures.after.failing) }]
        : [],
    },
    evidenceHash: createHash('sha256').update(`regression:${d.id}`).digest('hex'),
    source: 'evidence',
  };
}

/**
 * The body of a `regression_detected` webhook (README, "Webhooks (signal-feedback)"), in the Standard
 * Webhooks envelope `{ type, timestamp, data }`.
 * @param link the deployment's listing, `<PUBLIC_URL>/api/proposals/<id>/deployments`, or null when no public URL is set
 */
export function regressionDetectedBody(
  d: DeploymentRecord,
  figures: RegressionFigures,
  detectedAt: Date,
  revertProposalId: string | null,
  link: string | null,
): string {
  return JSON.stringify({
    type: 'regression_detected',
    timestamp: detectedAt.toISOString(),
    data: {
      product_id: d.productId,
      deployment: {
        id: d.id,
        deployed_at: d.deployedAt.toISOString(),
        version: d.version,
        window_minutes: d.windowMinutes,
        signal_type: d.signalType,
      },
      proposal: { id: d.proposalId, context_id: d.contextId },
      revert_proposal_id: revertProposalId,
      figures,
      always_valid_p_value: figures.always_valid_p_value,
      provisional: true,
      link,
    },
  });
}

/** Dependencies of {@link RegressionMonitor}. */
export interface RegressionMonitorDeps {
  store: MonitorStore;
  evaluate: ProvisionalEvaluator;
  logger: Logger;
  /** How long after one look a deployment is looked at again, ms (`MONITOR_INTERVAL_MS`). */
  intervalMs: number;
  /** The service's public origin (`PUBLIC_URL`), for the webhook's link to the deployments; unset: `link` is null. */
  publicUrl?: string;
  now?: () => Date;
  /** Told about each detection (metrics). */
  onDetected?: () => void;
}

/**
 * The open-window monitor (README, "The open-window monitor"): looks at every deployment whose
 * after-window is still open, at most once per `intervalMs` across all replicas, and when the
 * always-valid monitor crosses its boundary records `regression_detected` on the deployment, raises a
 * "revert <deployment>" proposal and queues the `regression_detected` webhook, all in one transaction
 * guarded by a conditional update, so it happens once however many replicas run.
 */
export class RegressionMonitor {
  /** @param deps the store, the evaluator, the logger and the pace */
  constructor(private readonly deps: RegressionMonitorDeps) {}

  /**
   * One pass: claims up to `limit` due open deployments and evaluates each.
   * @returns how many deployments were claimed (a full batch means more may be due)
   */
  async runOnce(limit = 100): Promise<{ claimed: number; detected: number }> {
    const now = this.deps.now?.() ?? new Date();
    const claimed = await this.deps.store.claimOpen(
      now,
      new Date(now.getTime() - this.deps.intervalMs),
      limit,
    );
    let detected = 0;
    for (const d of claimed) {
      try {
        if (await this.check(d, now)) detected++;
      } catch (err) {
        // The next look comes after intervalMs; the others of the pass still get theirs.
        this.deps.logger.error({ err, deploymentId: d.id }, 'monitoring of a deployment failed');
      }
    }
    return { claimed: claimed.length, detected };
  }

  private async check(d: DeploymentRecord, now: Date): Promise<boolean> {
    const reading = await this.deps.evaluate(d, now);
    if (!reading?.crossed) return false;
    const figures = regressionFigures(reading);
    const link = this.deps.publicUrl
      ? `${this.deps.publicUrl.replace(/\/+$/, '')}/api/proposals/${d.proposalId}/deployments`
      : null;
    const outcome = await this.deps.store.recordRegression({
      deployment: d,
      detectedAt: now,
      month: monthKey(now),
      figures,
      proposal: revertProposal(d, figures),
      webhook: (revertProposalId) => ({
        messageId: webhookMessageId('regression_detected', d.id),
        body: regressionDetectedBody(d, figures, now, revertProposalId, link),
      }),
    });
    if (!outcome.recorded) return false;
    this.deps.onDetected?.();
    this.deps.logger.warn(
      {
        deploymentId: d.id,
        proposalId: d.proposalId,
        alwaysValidPValue: figures.always_valid_p_value,
        revertProposalId: outcome.revertProposalId,
        webhookQueued: outcome.webhookQueued,
      },
      'regression detected while the window is open',
    );
    return true;
  }
}
