import { createHash } from 'node:crypto';
import { AppError, notFound } from '@repo/errors';
import type { Logger } from '@repo/service-kit';
import type { DeploymentRecord, DeploymentRepository, DeploymentScope } from '../data/deployments';
import type { NewProposal } from '../data/proposals';
import type { CreateDeploymentBody, Deployment } from '../schemas';
import { SIGNAL_FEEDBACK_ERRORS } from './errors';
import { monthKey, nextMonthStart, PLAN_LIMITS } from './plans';
import { verify, type Verification, type VerificationRules } from './verification';

/** Defaults of a deployment's verification (README, "Configuration": `VERIFICATION_*`). */
export interface VerificationDefaults {
  /** Length of each compared window when the deployment names none, minutes. */
  windowMinutes: number;
  /** Significance level when the deployment names none. */
  alpha: number;
  /** Fewest signals each window needs for a verdict other than `inconclusive`. */
  minSignals: number;
}

/** Dependencies of {@link DeploymentService}. */
export interface DeploymentServiceDeps {
  deployments: DeploymentRepository;
  defaults: VerificationDefaults;
  logger: Logger;
  now?: () => Date;
  /** How long a claimed deployment stays leased to one replica, ms (default 5 minutes). */
  leaseMs?: number;
  /** Told about each stored verdict (metrics). */
  onVerdict?: (verdict: Verification['verdict']) => void;
}

/** The most deployments a listing holds, the newest (each open one is counted anew when listed). */
export const MAX_LISTED_DEPLOYMENTS = 50;

/**
 * Deployments of approved proposals and their verification (README, "Deployments and verification"):
 * records them under the plan's monthly limit, compares the context's failing signal type over equal
 * windows before and after `deployed_at`, stores the verdict once the after-window has closed (on a
 * schedule, and at once when someone asks after it closed) and raises a proposal for a regression.
 * Safe on every replica at once: a deployment is verified under a `SKIP LOCKED` lease and its verdict
 * stored by a conditional update, so it is verified once and raises at most one proposal.
 */
export class DeploymentService {
  /** @param deps the repository, the defaults, the logger */
  constructor(private readonly deps: DeploymentServiceDeps) {}

  private now(): Date {
    return this.deps.now?.() ?? new Date();
  }

  /**
   * Records that an approved proposal's change shipped.
   * @param input `deployedAt` defaults to now; `windowMinutes` and `alpha` to the service's defaults
   * @param input as parsed by {@link CreateDeploymentBody} (which refuses a `deployed_at` in the future)
   * @throws AppError `not_found` (404) when the
   *   scope has no such proposal; `proposal_not_approved` (409, details.status) when it is not approved;
   *   `quota_exceeded` (429, Retry-After until the month resets) past the plan's monthly deployments
   */
  async record(
    proposalId: string,
    scope: DeploymentScope,
    input: { deployedAt?: Date; version?: string; note?: string; windowMinutes?: number; alpha?: number },
  ): Promise<Deployment> {
    const now = this.now();
    const deployedAt = input.deployedAt ?? now;
    const outcome = await this.deps.deployments.create({
      proposalId,
      scope,
      deployedAt,
      version: input.version ?? null,
      note: input.note ?? null,
      windowMinutes: input.windowMinutes ?? this.deps.defaults.windowMinutes,
      alpha: input.alpha ?? this.deps.defaults.alpha,
      month: monthKey(now),
      limitOf: (plan) => PLAN_LIMITS[plan].deploymentsPerMonth,
    });
    if ('notFound' in outcome) throw notFound('proposal');
    if ('notApproved' in outcome) {
      throw new AppError(
        SIGNAL_FEEDBACK_ERRORS.proposal_not_approved,
        `Only an approved proposal can be deployed; this one is ${outcome.notApproved}`,
        { details: { status: outcome.notApproved } },
      );
    }
    if ('quota' in outcome) {
      const resetsAt = nextMonthStart(now);
      throw new AppError(
        SIGNAL_FEEDBACK_ERRORS.quota_exceeded,
        `The ${outcome.quota.plan} plan allows ${outcome.quota.limit} deployment(s) a month`,
        {
          details: {
            quota: 'deployments',
            plan: outcome.quota.plan,
            limit: outcome.quota.limit,
            resets_at: resetsAt.toISOString(),
          },
          headers: {
            'Retry-After': String(Math.max(1, Math.ceil((resetsAt.getTime() - now.getTime()) / 1000))),
          },
        },
      );
    }
    return this.toWire(await this.verifyIfDue(outcome.created, now), now);
  }

  /**
   * A proposal's deployments, newest first, each with its verification: the stored one once the
   * after-window closed (verified now if no replica did yet), else provisional figures over the time
   * elapsed since `deployed_at` and an equal window before it.
   * @param limit the most deployments listed (the newest)
   * @throws AppError `not_found` (404) when the scope has no such proposal
   */
  async list(proposalId: string, scope: DeploymentScope, limit: number): Promise<Deployment[]> {
    const rows = await this.deps.deployments.listForProposal(proposalId, scope, limit);
    if (!rows) throw notFound('proposal');
    const now = this.now();
    const out: Deployment[] = [];
    for (const row of rows) out.push(await this.toWire(await this.verifyIfDue(row, now), now));
    return out;
  }

  /**
   * One pass of the scheduled verification: claims up to `limit` deployments whose after-window has
   * closed and stores their verdicts.
   * @returns how many verdicts this call stored
   */
  async verifyDue(limit = 100): Promise<number> {
    const now = this.now();
    const claimed = await this.deps.deployments.claimDue(now, this.leaseEnd(now), limit);
    let stored = 0;
    for (const d of claimed) {
      try {
        if ((await this.complete(d, now)).verdict !== 'pending') stored++;
      } catch (err) {
        // Its lease is given back; the others of the pass still get their verdicts.
        this.deps.logger.error({ err, deploymentId: d.id }, 'verification of a deployment failed');
      }
    }
    return stored;
  }

  private leaseEnd(now: Date): Date {
    return new Date(now.getTime() + (this.deps.leaseMs ?? 5 * 60_000));
  }

  /** A closed, unverified deployment is verified here and now (unless another replica holds it). */
  private async verifyIfDue(d: DeploymentRecord, now: Date): Promise<DeploymentRecord> {
    if (d.verdict !== 'pending' || afterWindowEnd(d).getTime() > now.getTime()) return d;
    const [claimed] = await this.deps.deployments.claimDue(now, this.leaseEnd(now), 1, d.id);
    if (!claimed) return (await this.deps.deployments.get(d.id)) ?? d;
    return this.complete(claimed, now);
  }

  /** Verifies a claimed deployment and stores the verdict; on failure the lease is released. */
  private async complete(d: DeploymentRecord, now: Date): Promise<DeploymentRecord> {
    try {
      const verification = await this.compute(d, now);
      const regression =
        verification.verdict === 'regressed' ? regressionProposal(d, verification) : undefined;
      const outcome = await this.deps.deployments.complete(
        d.id,
        verification,
        regression && {
          proposal: regression,
          userId: d.userId,
          month: monthKey(now),
          limit: PLAN_LIMITS[d.plan].proposalsPerMonth,
        },
      );
      if (!outcome.stored) return (await this.deps.deployments.get(d.id)) ?? d;
      this.deps.onVerdict?.(verification.verdict);
      this.deps.logger.info(
        {
          deploymentId: d.id,
          proposalId: d.proposalId,
          verdict: verification.verdict,
          z: verification.z,
          pValue: verification.p_value,
          regressionProposalId: outcome.regressionProposalId,
        },
        'deployment verified',
      );
      return {
        ...d,
        verdict: verification.verdict,
        verification,
        regressionProposalId: outcome.regressionProposalId,
      };
    } catch (err) {
      await this.deps.deployments.release(d.id).catch(() => undefined);
      throw err;
    }
  }

  /** The comparison as of `now`: final once the after-window closed, else over the elapsed time. */
  private async compute(d: DeploymentRecord, now: Date): Promise<Verification> {
    const windowMs = d.windowMinutes * 60_000;
    const at = d.deployedAt.getTime();
    const closed = at + windowMs <= now.getTime();
    const length = closed ? windowMs : Math.max(0, now.getTime() - at);
    const before = { from: new Date(at - length), to: d.deployedAt };
    const after = { from: d.deployedAt, to: new Date(at + length) };
    const counts = await this.deps.deployments.windowCounts(d.contextId, d.signalType, d.deployedAt, length);
    const rules: VerificationRules = { alpha: d.alpha, minSignals: this.deps.defaults.minSignals };
    return verify(
      { before: { ...before, ...counts.before }, after: { ...after, ...counts.after } },
      rules,
      !closed,
      now,
    );
  }

  private async toWire(d: DeploymentRecord, now: Date): Promise<Deployment> {
    return {
      id: d.id,
      proposal_id: d.proposalId,
      deployed_at: d.deployedAt.toISOString(),
      version: d.version,
      note: d.note,
      window_minutes: d.windowMinutes,
      signal_type: d.signalType,
      verification: d.verification ?? (await this.compute(d, now)),
      regression_proposal_id: d.regressionProposalId,
      created_at: d.createdAt.toISOString(),
    };
  }
}

/**
 * The input of {@link DeploymentService.record} from the wire body of POST
 * /api/proposals/{id}/deployments (or the arguments of `record_deployment`).
 */
export function deploymentInput(body: CreateDeploymentBody): Parameters<DeploymentService['record']>[2] {
  return {
    ...(body.deployed_at !== undefined ? { deployedAt: new Date(body.deployed_at) } : {}),
    ...(body.version !== undefined ? { version: body.version } : {}),
    ...(body.note !== undefined && body.note !== '' ? { note: body.note } : {}),
    ...(body.window_minutes !== undefined ? { windowMinutes: body.window_minutes } : {}),
    ...(body.alpha !== undefined ? { alpha: body.alpha } : {}),
  };
}

/** When a deployment's after-window closes. */
export function afterWindowEnd(d: Pick<DeploymentRecord, 'deployedAt' | 'windowMinutes'>): Date {
  return new Date(d.deployedAt.getTime() + d.windowMinutes * 60_000);
}

const pct = (rate: number | null) => (rate === null ? 'n/a' : `${(rate * 100).toFixed(1)} %`);

/**
 * The proposal a regression raises (README, "Deployments and verification"): same product and context,
 * citing the deployment, with the figures as its evidence. Its evidence hash is the deployment's, so a
 * deployment never raises two.
 */
export function regressionProposal(d: DeploymentRecord, v: Verification): NewProposal {
  const what = d.signalType ? `"${d.signalType}" signals` : 'negative signals';
  const shipped = d.version ? `version ${d.version}` : `the change deployed at ${d.deployedAt.toISOString()}`;
  const evidence = {
    kind: 'regression',
    deployment_id: d.id,
    proposal_id: d.proposalId,
    signal_type: d.signalType,
    before: v.before,
    after: v.after,
    z: v.z,
    p_value: v.p_value,
    alpha: v.alpha,
    top_failing_types: d.signalType ? [{ type: d.signalType, count: v.after.negative }] : [],
  };
  return {
    productId: d.productId,
    contextId: d.contextId,
    priorityScore: Math.min(100, Math.round((50 + (v.after.negative_rate ?? 0) * 50) * 10) / 10),
    diagnosis: `Regression after ${shipped} of proposal ${d.proposalId}: the share of ${what} rose from ${pct(v.before.negative_rate)} to ${pct(v.after.negative_rate)}.`,
    currentState: `Before the deployment: ${v.before.negative} of ${v.before.signals} signals were ${what}.\nAfter it: ${v.after.negative} of ${v.after.signals}.`,
    proposedChange: `Review or roll back deployment ${d.id} (${shipped}) and address what made ${what} more frequent.`,
    evidenceSummary: `Deployment ${d.id}: ${what} ${pct(v.before.negative_rate)} -> ${pct(v.after.negative_rate)} over two ${d.windowMinutes}-minute windows (z = ${v.z}, p = ${v.p_value}, alpha ${v.alpha}).`,
    predictedImpact: `Bringing the share of ${what} back to ${pct(v.before.negative_rate)}.`,
    signalCount: v.after.signals,
    evidence,
    evidenceHash: createHash('sha256').update(`regression:${d.id}`).digest('hex'),
    source: 'evidence',
  };
}
