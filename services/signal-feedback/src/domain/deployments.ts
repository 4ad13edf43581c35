import { createHash } from 'node:crypto';
import { AppError, notFound, validationError, type ValidationIssue } from '@repo/errors';
import type { Logger } from '@repo/service-kit';
import type { DeploymentRecord, DeploymentRepository, DeploymentScope } from '../data/deployments';
import type { NewProposal } from '../data/proposals';
import { MAX_CONTROL_CONTEXTS, type CreateDeploymentBody, type Deployment } from '../schemas/deployments';
import { comparisonWindows } from './causal-statistics/windows';
import { SIGNAL_FEEDBACK_ERRORS } from './errors';
import { monthKey, nextMonthStart, PLAN_LIMITS } from './plans';
import { upgradeStoredVerification, verify, type Verification, type VerificationRules } from './verification';

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
  /**
   * The listing's stored figures (`DEPLOYMENT_LISTING_SNAPSHOTS`, README, "The open-window monitor"):
   * the monitor stores each open deployment's provisional figures, and a listing serves them while no
   * newer signal of the product exists and they are at most `maxAgeMs` old (two monitor periods);
   * undefined: nothing is stored and every listing computes.
   */
  listingSnapshots?: { maxAgeMs: number };
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
   * @param input as parsed by {@link CreateDeploymentBody} (which refuses a `deployed_at` in the future
   *   and bounds and de-duplicates the context lists): `deployedAt` defaults to now; `windowMinutes`
   *   and `alpha` to the service's defaults; `contexts` (treated) to the proposal's context;
   *   `controlContexts` to automatic (README, "Deployments and verification")
   * @param fields where the caller's fields are, for the paths of validation issues (`body` over HTTP,
   *   `arguments` over MCP)
   * @throws AppError `not_found` (404) when the scope has no such proposal; `invalid_request` (400,
   *   details.issues) when a named context is not one of the product's, or is both treated and control;
   *   `proposal_not_approved` (409, details.status) when the proposal is not approved;
   *   `quota_exceeded` (429, Retry-After until the month resets) past the plan's monthly deployments
   */
  async record(
    proposalId: string,
    scope: DeploymentScope,
    input: {
      deployedAt?: Date;
      version?: string;
      note?: string;
      windowMinutes?: number;
      alpha?: number;
      contexts?: string[];
      controlContexts?: string[];
    },
    fields: 'body' | 'arguments' = 'body',
  ): Promise<Deployment> {
    const now = this.now();
    const deployedAt = input.deployedAt ?? now;
    const targets = await this.deps.deployments.deploymentTargets(proposalId, scope);
    if (!targets) throw notFound('proposal');
    const treated = input.contexts ?? [targets.proposalContextId];
    const issues = contextIssues(
      { treated, controls: input.controlContexts ?? [], named: input.contexts !== undefined },
      new Set(targets.productContextIds),
      fields,
    );
    if (issues.length > 0) throw validationError(issues);
    const outcome = await this.deps.deployments.create({
      proposalId,
      scope,
      deployedAt,
      version: input.version ?? null,
      note: input.note ?? null,
      windowMinutes: input.windowMinutes ?? this.deps.defaults.windowMinutes,
      alpha: input.alpha ?? this.deps.defaults.alpha,
      treatedContextIds: treated,
      controlContextIds: input.controlContexts ?? [],
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
   * elapsed since `deployed_at` and an equal window before it: those the open-window monitor stored
   * while they are current (see {@link DeploymentServiceDeps.listingSnapshots}), else computed now.
   * @param limit the most deployments listed (the newest)
   * @throws AppError `not_found` (404) when the scope has no such proposal
   */
  async list(proposalId: string, scope: DeploymentScope, limit: number): Promise<Deployment[]> {
    const rows = await this.deps.deployments.listForProposal(proposalId, scope, limit);
    if (!rows) throw notFound('proposal');
    const now = this.now();
    const out: Deployment[] = [];
    for (const row of rows) {
      const d = await this.verifyIfDue(row, now);
      const stored = d.verification ? undefined : this.currentStoredFigures(d, now);
      out.push(await this.toWire(d, now, stored));
    }
    return out;
  }

  /**
   * An open deployment's stored provisional figures when they may be served as of `now` (README, "The
   * open-window monitor"): the switch is on, the row carries them, no newer signal of the product
   * exists, they are provisional, the after-window is still open and they are at most `maxAgeMs` old
   * (and not from the future of this replica's clock).
   */
  private currentStoredFigures(d: DeploymentRecord, now: Date): Verification | undefined {
    const snapshots = this.deps.listingSnapshots;
    const stored = d.storedFigures;
    if (!snapshots || !stored || stored.superseded || !stored.verification.provisional) return undefined;
    if (d.verdict !== 'pending' || afterWindowEnd(d).getTime() <= now.getTime()) return undefined;
    const age = now.getTime() - stored.computedAt.getTime();
    return age >= 0 && age <= snapshots.maxAgeMs ? stored.verification : undefined;
  }

  /**
   * The provisional verification of an open deployment, for the open-window monitor (README,
   * "Deployments and verification"): the figures over the time elapsed since `deployed_at` with
   * `monitor` (the always-valid regression check at the deployment's alpha), `verdict` `inconclusive`
   * and no fixed-horizon p-value. With `listingSnapshots`, it stores them on the deployment with the
   * newest signal of the product they cover, for the listing (README, "The open-window monitor").
   * @param deploymentId any deployment (the monitor's own reads: no scope)
   * @returns undefined when there is no such deployment, or its verdict is stored, or its after-window
   *   has closed (the scheduled verification decides it then)
   */
  async provisionalDecision(
    deploymentId: string,
  ): Promise<{ deployment: DeploymentRecord; verification: Verification } | undefined> {
    const d = await this.deps.deployments.get(deploymentId);
    const now = this.now();
    if (!d || d.verdict !== 'pending' || afterWindowEnd(d).getTime() <= now.getTime()) return undefined;
    if (!this.deps.listingSnapshots) return { deployment: d, verification: await this.compute(d, now) };
    // Read before the counts: the figures cover at least every signal up to this one.
    const covers = await this.deps.deployments.newestSignalId(d.productId);
    const verification = await this.compute(d, now);
    await this.deps.deployments.storeProvisional(d.id, verification, covers, now);
    return { deployment: d, verification };
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
      // Only a reliable regression raises a proposal: an unreliable one is already `inconclusive`.
      const regression =
        verification.verdict === 'regressed' && !verification.label.startsWith('unreliable')
          ? regressionProposal(d, verification)
          : undefined;
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
          label: verification.label,
          estimate: verification.effect?.estimate,
          pValue: verification.effect?.p_value,
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

  /**
   * The comparison as of `now`: final once the after-window closed, else over the elapsed time (the
   * windows of `comparisonWindows` for that length), in one counting query.
   */
  private async compute(d: DeploymentRecord, now: Date): Promise<Verification> {
    const windowMs = d.windowMinutes * 60_000;
    const at = d.deployedAt.getTime();
    const closed = at + windowMs <= now.getTime();
    // At least a millisecond: the windows of a deployment recorded this very instant are empty.
    const length = closed ? windowMs : Math.max(1, now.getTime() - at);
    const windows = comparisonWindows(d.deployedAt, length / 60_000);
    const rules: VerificationRules = { alpha: d.alpha, minSignals: this.deps.defaults.minSignals };
    const counts = await this.deps.deployments.windowSetCounts({
      productId: d.productId,
      treatedContextIds: d.treatedContextIds,
      controlContextIds: d.controlContextIds,
      signalTypes: d.signalTypes,
      windows,
      minSignals: rules.minSignals,
      maxControls: MAX_CONTROL_CONTEXTS,
    });
    return verify(
      {
        windows,
        counts,
        signalTypes: d.signalTypes,
        treatedContextIds: d.treatedContextIds,
        controlSelection: d.controlContextIds.length > 0 ? 'explicit' : 'automatic',
        rules,
        provisional: !closed,
      },
      now,
    );
  }

  /** @param stored provisional figures to show instead of computing them (the listing's fast path) */
  private async toWire(d: DeploymentRecord, now: Date, stored?: Verification): Promise<Deployment> {
    return {
      id: d.id,
      proposal_id: d.proposalId,
      deployed_at: d.deployedAt.toISOString(),
      version: d.version,
      note: d.note,
      window_minutes: d.windowMinutes,
      signal_type: d.signalType,
      contexts: d.treatedContextIds,
      control_contexts: d.controlContextIds.length > 0 ? d.controlContextIds : null,
      verification: d.verification
        ? upgradeStoredVerification(d.verification, d.treatedContextIds)
        : (stored ?? (await this.compute(d, now))),
      regression_proposal_id: d.regressionProposalId,
      regression_detected_at: d.regressionDetectedAt?.toISOString() ?? null,
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
    ...(body.contexts !== undefined ? { contexts: body.contexts } : {}),
    ...(body.control_contexts !== undefined ? { controlContexts: body.control_contexts } : {}),
  };
}

/**
 * What is wrong with a deployment's context lists: a context that is not one of the product's, or one
 * named both treated and control (when the treated default to the proposal's context, a control equal
 * to it).
 * @param lists.named whether the treated contexts were named (their issues point at `contexts`)
 * @returns one issue per problem, at `<fields>.contexts.<i>` or `<fields>.control_contexts.<i>`
 */
export function contextIssues(
  lists: { treated: readonly string[]; controls: readonly string[]; named: boolean },
  productContextIds: ReadonlySet<string>,
  fields: 'body' | 'arguments',
): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const unknown = "is not a context of the proposal's product";
  if (lists.named)
    lists.treated.forEach((id, i) => {
      if (!productContextIds.has(id))
        issues.push({ path: `${fields}.contexts.${i}`, code: 'invalid_value', message: unknown });
    });
  const treated = new Set(lists.treated);
  lists.controls.forEach((id, i) => {
    const path = `${fields}.control_contexts.${i}`;
    if (!productContextIds.has(id)) issues.push({ path, code: 'invalid_value', message: unknown });
    else if (treated.has(id))
      issues.push({
        path,
        code: 'custom',
        message: lists.named
          ? 'is also among `contexts`: a context is either treated or a control'
          : "is the proposal's context, which the change treats: name `contexts` to treat others instead",
      });
  });
  return issues;
}

/** When a deployment's after-window closes. */
export function afterWindowEnd(d: Pick<DeploymentRecord, 'deployedAt' | 'windowMinutes'>): Date {
  return new Date(d.deployedAt.getTime() + d.windowMinutes * 60_000);
}

const pct = (rate: number | null) => (rate === null ? 'n/a' : `${(rate * 100).toFixed(1)} %`);

/**
 * The proposal a reliable regression raises (README, "Deployments and verification"): same product and
 * context, citing the deployment, with the figures (effect, label, method, checks) as its evidence.
 * Its evidence hash is the deployment's, so a deployment never raises two.
 */
export function regressionProposal(d: DeploymentRecord, v: Verification): NewProposal {
  const what =
    d.signalTypes.length > 1
      ? `${d.signalTypes.map((t) => `"${t}"`).join(', ')} signals`
      : d.signalType
        ? `"${d.signalType}" signals`
        : 'negative signals';
  const shipped = d.version ? `version ${d.version}` : `the change deployed at ${d.deployedAt.toISOString()}`;
  const e = v.effect;
  const against =
    v.method.estimator === 'did'
      ? `against ${v.method.control_contexts.length} control context(s)`
      : 'before against after, without usable controls';
  const effect = e
    ? `odds ratio ${e.odds_ratio} (${Math.round((1 - v.alpha) * 100)} % interval ${e.odds_ratio_ci_low}–${e.odds_ratio_ci_high}), p = ${e.adjusted_p_value ?? e.p_value}, ${against}, ${v.label}`
    : v.label;
  const evidence = {
    kind: 'regression',
    deployment_id: d.id,
    proposal_id: d.proposalId,
    signal_type: d.signalType,
    signal_types: d.signalTypes,
    before: v.before,
    after: v.after,
    z: v.z,
    p_value: v.p_value,
    alpha: v.alpha,
    label: v.label,
    method: v.method.estimator,
    treated_contexts: v.method.treated_contexts,
    control_contexts: v.method.control_contexts.map((c) => c.context_id),
    effect: v.effect,
    placebo: v.placebo,
    traffic: v.traffic,
    top_failing_types: d.signalType ? [{ type: d.signalType, count: v.after.negative }] : [],
  };
  return {
    productId: d.productId,
    contextId: d.contextId,
    priorityScore: Math.min(100, Math.round((50 + (v.after.negative_rate ?? 0) * 50) * 10) / 10),
    diagnosis: `Regression after ${shipped} of proposal ${d.proposalId}: the share of ${what} rose from ${pct(v.before.negative_rate)} to ${pct(v.after.negative_rate)} (${effect}).`,
    currentState: `Before the deployment: ${v.before.negative} of ${v.before.signals} signals were ${what}.\nAfter it: ${v.after.negative} of ${v.after.signals}.`,
    proposedChange: `Review or roll back deployment ${d.id} (${shipped}) and address what made ${what} more frequent.`,
    evidenceSummary: `Deployment ${d.id}: ${what} ${pct(v.before.negative_rate)} -> ${pct(v.after.negative_rate)} over ${d.windowMinutes}-minute windows a week apart; ${effect}.`,
    predictedImpact: `Bringing the share of ${what} back to ${pct(v.before.negative_rate)}.`,
    signalCount: v.after.signals,
    evidence,
    evidenceHash: createHash('sha256').update(`regression:${d.id}`).digest('hex'),
    source: 'evidence',
  };
}
