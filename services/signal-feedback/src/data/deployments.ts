import type { Db } from './prisma';
import type { NewProposal } from './proposals';
import type { PlanName, ProposalStatus, VerificationResult } from '../schemas';

/** Signals of one compared window: all of the context's signals, and those of the failing type. */
export interface WindowCounts {
  /** Every signal of the proposal's context in the window. */
  signals: number;
  /** The signals of the compared failing type (or every negative signal when the deployment has none). */
  negative: number;
}

/** A stored deployment with what its verification needs to know about its proposal. */
export interface DeploymentRecord {
  id: string;
  proposalId: string;
  contextId: string;
  productId: string;
  userId: string;
  plan: PlanName;
  deployedAt: Date;
  version: string | null;
  note: string | null;
  windowMinutes: number;
  signalType: string | null;
  alpha: number;
  /**
   * The contexts the change touched (the treated group): the proposal's context unless the
   * deployment named others.
   */
  treatedContextIds: string[];
  /** The control contexts the deployment named; empty: chosen automatically at each verification. */
  controlContextIds: string[];
  /**
   * The failing signal types the verdict covers: the proposal's leading failing types when it was
   * deployed (at most {@link MAX_COVERED_TYPES}); empty: every negative signal, as `signalType` null.
   */
  signalTypes: string[];
  verdict: 'pending' | VerificationResult['verdict'];
  /** The stored figures once the after-window closed. */
  verification: VerificationResult | null;
  regressionProposalId: string | null;
  /** When the open-window monitor detected a regression; null: it did not. */
  regressionDetectedAt: Date | null;
  createdAt: Date;
}

/** The JSON one {@link DeploymentRepository.windowSetCounts} query answers. */
interface QueryResult {
  /** `[treated, window 0|1|2, hour of week, failing type or null, signals]` */
  cells: [boolean, number, number, string | null, number][];
  /** `[context id, before-window signals, after-window signals]` */
  controls: [string, number, number][];
}

/** Who asks: a product key sees its product's proposals, a session all of its user's. */
export type DeploymentScope = { productId: string } | { userId: string };

/** Outcome of {@link DeploymentRepository.create}. */
export type DeploymentCreateOutcome =
  | { created: DeploymentRecord }
  | { notFound: true }
  | { notApproved: ProposalStatus }
  | { quota: { plan: PlanName; limit: number } };

type Row = {
  id: string;
  proposal_id: string;
  context_id: string;
  product_id: string;
  user_id: string;
  plan: PlanName;
  deployed_at: Date;
  version: string | null;
  note: string | null;
  window_minutes: number;
  signal_type: string | null;
  alpha: number;
  treated_context_ids: string[];
  control_context_ids: string[];
  signal_types: string[];
  verdict: DeploymentRecord['verdict'];
  verification: VerificationResult | null;
  regression_proposal_id: string | null;
  regression_detected_at: Date | null;
  created_at: Date;
};

const SELECT = `SELECT d.id, d.proposal_id, p.context_id, p.product_id, pr.user_id, u.plan::text AS plan, d.deployed_at,
         d.version, d.note, d.window_minutes, d.signal_type, d.alpha, coalesce(d.treated_context_ids::text[], '{}') AS treated_context_ids,
         coalesce(d.control_context_ids::text[], '{}') AS control_context_ids,
         coalesce(d.signal_types::text[], '{}') AS signal_types,
         d.verdict::text AS verdict, d.verification,
         (SELECT r.id FROM proposals r WHERE r.regression_of_id = d.id LIMIT 1) AS regression_proposal_id, d.regression_detected_at, d.created_at
    FROM deployments d JOIN proposals p ON p.id = d.proposal_id
    JOIN products pr ON pr.id = p.product_id JOIN users u ON u.id = pr.user_id`;

/** `$n` matches the scope: a product id or the owning user's id. */
const scopeClause = (scope: DeploymentScope, n: number) =>
  'userId' in scope ? `pr.user_id = $${n}::uuid` : `p.product_id = $${n}::uuid`;
const scopeValue = (scope: DeploymentScope) => ('userId' in scope ? scope.userId : scope.productId);

const toRecord = (r: Row): DeploymentRecord => ({
  id: r.id,
  proposalId: r.proposal_id,
  contextId: r.context_id,
  productId: r.product_id,
  userId: r.user_id,
  plan: r.plan,
  deployedAt: r.deployed_at,
  version: r.version,
  note: r.note,
  windowMinutes: r.window_minutes,
  signalType: r.signal_type,
  alpha: r.alpha,
  // Deployments recorded before treated contexts were stored treat the proposal's context.
  treatedContextIds: r.treated_context_ids.length > 0 ? r.treated_context_ids : [r.context_id],
  controlContextIds: r.control_context_ids,
  signalTypes: r.signal_types.length > 0 ? r.signal_types : r.signal_type !== null ? [r.signal_type] : [],
  verdict: r.verdict,
  verification: r.verification,
  regressionProposalId: r.regression_proposal_id,
  regressionDetectedAt: r.regression_detected_at,
  createdAt: r.created_at,
});

/**
 * The most failing types one verdict covers: the proposal's leading ones (README, "Deployments and
 * verification"). The analysis fingerprints a proposal by its first three.
 */
export const MAX_COVERED_TYPES = 3;

/** Hour-of-week buckets: 168, bucket 0 = Monday 00:00–01:00 UTC. */
export const HOURS_PER_WEEK = 168;

/** A half-open time window `[from, to)`. */
export interface TimeWindow {
  from: Date;
  to: Date;
}

/** Signals of one group in one window per hour-of-week bucket (168 entries each). */
export interface HourOfWeekCells {
  /** Every signal of the group's contexts, per bucket. */
  signals: number[];
  /**
   * Failing signals per covered type, per bucket; the key `''` holds every negative signal when the
   * deployment covers no named type.
   */
  failing: Record<string, number[]>;
}

/** One control context the counts used, with its signals in the before- and after-window. */
export interface UsedControl {
  contextId: string;
  beforeSignals: number;
  afterSignals: number;
}

/** Outcome of {@link DeploymentRepository.windowSetCounts}. */
export interface WindowSetCounts {
  treated: { placeboBefore: HourOfWeekCells; before: HourOfWeekCells; after: HourOfWeekCells };
  /** The pooled control contexts; their cells are all zero when none was usable. */
  control: { placeboBefore: HourOfWeekCells; before: HourOfWeekCells; after: HourOfWeekCells };
  /** The control contexts counted, most signals first. */
  controls: UsedControl[];
}

const emptyCells = (types: readonly string[]): HourOfWeekCells => ({
  signals: new Array<number>(HOURS_PER_WEEK).fill(0),
  failing: Object.fromEntries(
    (types.length > 0 ? types : ['']).map((t) => [t, new Array<number>(HOURS_PER_WEEK).fill(0)]),
  ),
});

/** Deployments of approved proposals, their verification leases and the window counts they compare. */
export class DeploymentRepository {
  /** @param db the Prisma client */
  constructor(private readonly db: Db) {}

  /**
   * What a new deployment of a proposal may name: the proposal's context and every context of its
   * product (checked before the deployment is recorded).
   * @returns undefined when the scope has no such proposal
   */
  async deploymentTargets(
    proposalId: string,
    scope: DeploymentScope,
  ): Promise<{ proposalContextId: string; productContextIds: string[] } | undefined> {
    const rows = await this.db.$queryRawUnsafe<{ context_id: string; product_context_ids: string[] }[]>(
      `SELECT p.context_id, ARRAY(SELECT c.id::text FROM contexts c WHERE c.product_id = p.product_id) AS product_context_ids
         FROM proposals p JOIN products pr ON pr.id = p.product_id
        WHERE p.id = $1::uuid AND ${scopeClause(scope, 2)}`,
      proposalId,
      scopeValue(scope),
    );
    const r = rows[0];
    return r ? { proposalContextId: r.context_id, productContextIds: r.product_context_ids } : undefined;
  }

  /**
   * The hour-of-week counts of one window set, in one query over the product's signals by
   * `(product_id, created_at)`: per group (the treated contexts; the control contexts pooled), per
   * window (placebo-before, before, after; they may overlap), per hour-of-week bucket (UTC), every
   * signal and those of each covered failing type (every negative signal when `signalTypes` is empty).
   * The controls are `controlContextIds`, or when it is empty every other context of the product
   * with at least `minSignals` signals in both the before- and the after-window (at most
   * `maxControls`, the busiest).
   * @param productId the product whose contexts are counted
   */
  async windowSetCounts(args: {
    productId: string;
    treatedContextIds: readonly string[];
    controlContextIds: readonly string[];
    signalTypes: readonly string[];
    windows: { placeboBefore: TimeWindow; before: TimeWindow; after: TimeWindow };
    minSignals: number;
    maxControls: number;
  }): Promise<WindowSetCounts> {
    const w = args.windows;
    const all = [w.placeboBefore, w.before, w.after];
    const from = new Date(Math.min(...all.map((x) => x.from.getTime())));
    const to = new Date(Math.max(...all.map((x) => x.to.getTime())));
    const rows = await this.db.$queryRawUnsafe<{ result: QueryResult }[]>(
      `WITH win(k, f, t) AS (VALUES (0, $5::timestamptz, $6::timestamptz), (1, $7::timestamptz, $8::timestamptz),
                                    (2, $9::timestamptz, $10::timestamptz)),
            -- One pass over the signals, down to (context, window, hour of week, failing type) counts.
            s AS (
              SELECT s.context_id, win.k,
                     -- Hour-of-week from the epoch, which began on a Thursday (72 hours after a Monday).
                     ((floor(date_part('epoch', s.created_at) / 3600)::bigint + 72) % 168)::int AS how,
                     CASE WHEN cardinality($4::text[]) = 0 THEN CASE WHEN s.sentiment = 'negative' THEN '' END
                          WHEN s.type = ANY($4::text[]) THEN s.type END AS ftype,
                     count(*)::int AS n
                FROM signals s JOIN win ON s.created_at >= win.f AND s.created_at < win.t
               WHERE s.product_id = $1::uuid AND s.created_at >= $11::timestamptz AND s.created_at < $12::timestamptz
                 AND s.context_id IS NOT NULL
                 AND (s.context_id = ANY($2::uuid[])
                      OR (cardinality($3::uuid[]) = 0 OR s.context_id = ANY($3::uuid[])))
               GROUP BY 1, 2, 3, 4),
            per_context AS (
              SELECT context_id, coalesce(sum(n) FILTER (WHERE k = 1), 0)::int AS before_n,
                     coalesce(sum(n) FILTER (WHERE k = 2), 0)::int AS after_n
                FROM s WHERE NOT (context_id = ANY($2::uuid[])) GROUP BY context_id),
            controls AS (
              SELECT context_id, before_n, after_n FROM per_context
               WHERE cardinality($3::uuid[]) > 0 OR (before_n >= $13 AND after_n >= $13)
               ORDER BY before_n + after_n DESC, context_id LIMIT $14),
            cells AS (
              SELECT s.context_id = ANY($2::uuid[]) AS treated, s.k, s.how, s.ftype, sum(s.n)::int AS n
                FROM s
               WHERE s.context_id = ANY($2::uuid[]) OR s.context_id IN (SELECT context_id FROM controls)
               GROUP BY 1, 2, 3, 4)
       SELECT json_build_object(
                'cells', coalesce((SELECT json_agg(json_build_array(treated, k, how, ftype, n)) FROM cells), '[]'::json),
                'controls', coalesce((SELECT json_agg(json_build_array(context_id, before_n, after_n)
                                               ORDER BY before_n + after_n DESC, context_id) FROM controls), '[]'::json)
              ) AS result`,
      args.productId,
      args.treatedContextIds,
      args.controlContextIds,
      args.signalTypes,
      w.placeboBefore.from,
      w.placeboBefore.to,
      w.before.from,
      w.before.to,
      w.after.from,
      w.after.to,
      from,
      to,
      args.minSignals,
      args.maxControls,
    );
    const result = rows[0]?.result ?? { cells: [], controls: [] };
    const group = () => ({
      placeboBefore: emptyCells(args.signalTypes),
      before: emptyCells(args.signalTypes),
      after: emptyCells(args.signalTypes),
    });
    const out: WindowSetCounts = {
      treated: group(),
      control: group(),
      controls: result.controls.map(([contextId, beforeSignals, afterSignals]) => ({
        contextId,
        beforeSignals,
        afterSignals,
      })),
    };
    const windowKeys = ['placeboBefore', 'before', 'after'] as const;
    for (const [treated, k, how, ftype, n] of result.cells) {
      const key = windowKeys[k];
      if (key === undefined || how < 0 || how >= HOURS_PER_WEEK) continue;
      const cells = (treated ? out.treated : out.control)[key];
      cells.signals[how] = (cells.signals[how] ?? 0) + n;
      const failing = ftype === null ? undefined : cells.failing[ftype];
      if (failing) failing[how] = (failing[how] ?? 0) + n;
    }
    return out;
  }

  /**
   * Records a deployment of an approved proposal under the owner's monthly deployment quota, in one
   * transaction that holds the proposal row (`FOR SHARE`) so its status cannot change meanwhile.
   * @param args.month first day of the UTC month, `YYYY-MM-01`
   * @param args.limitOf the plan's monthly deployment limit; null: unlimited
   */
  async create(args: {
    proposalId: string;
    scope: DeploymentScope;
    deployedAt: Date;
    version: string | null;
    note: string | null;
    windowMinutes: number;
    alpha: number;
    /** The treated contexts; undefined: the proposal's context. */
    treatedContextIds?: string[];
    /** The named control contexts; empty: automatic. */
    controlContextIds: string[];
    month: string;
    limitOf: (plan: PlanName) => number | null;
  }): Promise<DeploymentCreateOutcome> {
    return this.db.$transaction(async (tx) => {
      const found = await tx.$queryRawUnsafe<
        {
          status: ProposalStatus;
          user_id: string;
          plan: PlanName;
          context_id: string;
          failing: string | null;
          types: string[];
        }[]
      >(
        `SELECT p.status::text AS status, pr.user_id, u.plan::text AS plan, p.context_id,
                p.evidence #>> '{top_failing_types,0,type}' AS failing,
                ARRAY(SELECT t.value ->> 'type'
                        FROM jsonb_array_elements(CASE WHEN jsonb_typeof(p.evidence -> 'top_failing_types') = 'array'
                                                       THEN p.evidence -> 'top_failing_types' ELSE '[]'::jsonb END)
                             WITH ORDINALITY AS t(value, i)
                       WHERE t.value ->> 'type' IS NOT NULL
                       ORDER BY t.i LIMIT ${MAX_COVERED_TYPES}) AS types
           FROM proposals p JOIN products pr ON pr.id = p.product_id JOIN users u ON u.id = pr.user_id
          WHERE p.id = $1::uuid AND ${scopeClause(args.scope, 2)}
            FOR SHARE OF p`,
        args.proposalId,
        scopeValue(args.scope),
      );
      const proposal = found[0];
      if (!proposal) return { notFound: true as const };
      if (proposal.status !== 'approved') return { notApproved: proposal.status };
      const limit = args.limitOf(proposal.plan);
      const counted = await tx.$queryRawUnsafe<unknown[]>(
        `INSERT INTO usage_counters AS u (user_id, month, signals, proposals, deployments)
         SELECT $1::uuid, $2::date, 0, 0, 1 WHERE 1 <= $3::int
         ON CONFLICT (user_id, month) DO UPDATE SET deployments = u.deployments + 1 WHERE u.deployments + 1 <= $3::int
         RETURNING u.deployments`,
        proposal.user_id,
        args.month,
        limit ?? 2_147_483_647,
      );
      if (counted.length === 0) return { quota: { plan: proposal.plan, limit: limit ?? 0 } };
      const inserted = await tx.$queryRawUnsafe<{ id: string }[]>(
        `INSERT INTO deployments (id, proposal_id, deployed_at, version, note, window_minutes, signal_type, alpha,
                                  treated_context_ids, control_context_ids, signal_types)
         VALUES (gen_random_uuid(), $1::uuid, $2, $3, $4, $5, $6, $7, $8::uuid[], $9::uuid[], $10::varchar(100)[])
         RETURNING id`,
        args.proposalId,
        args.deployedAt,
        args.version,
        args.note,
        args.windowMinutes,
        proposal.failing,
        args.alpha,
        args.treatedContextIds ?? [proposal.context_id],
        args.controlContextIds,
        proposal.types,
      );
      const rows = await tx.$queryRawUnsafe<Row[]>(`${SELECT} WHERE d.id = $1::uuid`, inserted[0]!.id);
      return { created: toRecord(rows[0]!) };
    });
  }

  /**
   * A proposal's deployments, newest first.
   * @param limit the most returned
   * @returns undefined when the scope has no such proposal
   */
  async listForProposal(
    proposalId: string,
    scope: DeploymentScope,
    limit: number,
  ): Promise<DeploymentRecord[] | undefined> {
    const owned = await this.db.$queryRawUnsafe<unknown[]>(
      `SELECT 1 FROM proposals p JOIN products pr ON pr.id = p.product_id WHERE p.id = $1::uuid AND ${scopeClause(scope, 2)}`,
      proposalId,
      scopeValue(scope),
    );
    if (owned.length === 0) return undefined;
    const rows = await this.db.$queryRawUnsafe<Row[]>(
      `${SELECT} WHERE d.proposal_id = $1::uuid ORDER BY d.deployed_at DESC, d.created_at DESC LIMIT $2`,
      proposalId,
      limit,
    );
    return rows.map(toRecord);
  }

  /** One deployment, whoever owns it (the verification's own reads). */
  async get(id: string): Promise<DeploymentRecord | undefined> {
    const rows = await this.db.$queryRawUnsafe<Row[]>(`${SELECT} WHERE d.id = $1::uuid`, id);
    return rows[0] ? toRecord(rows[0]) : undefined;
  }

  /**
   * The counts of the two windows a verification compares, in one scan: every signal of the context in
   * `[deployedAt - length, deployedAt)` and `[deployedAt, deployedAt + length)`, and those of
   * `signalType` (every negative signal when null).
   * @param lengthMs the length of each window, ms
   */
  async windowCounts(
    contextId: string,
    signalType: string | null,
    deployedAt: Date,
    lengthMs: number,
  ): Promise<{ before: WindowCounts; after: WindowCounts }> {
    const rows = await this.db.$queryRawUnsafe<
      { before_signals: number; before_negative: number; after_signals: number; after_negative: number }[]
    >(
      `SELECT count(*) FILTER (WHERE created_at < $3)::int AS before_signals,
              count(*) FILTER (WHERE created_at < $3 AND failing)::int AS before_negative,
              count(*) FILTER (WHERE created_at >= $3)::int AS after_signals,
              count(*) FILTER (WHERE created_at >= $3 AND failing)::int AS after_negative
         FROM (SELECT created_at,
                      CASE WHEN $2::text IS NULL THEN sentiment = 'negative' ELSE type = $2::text END AS failing
                 FROM signals
                WHERE context_id = $1::uuid AND created_at >= $3::timestamptz - $4 * interval '1 millisecond'
                  AND created_at < $3::timestamptz + $4 * interval '1 millisecond') AS w`,
      contextId,
      signalType,
      deployedAt,
      lengthMs,
    );
    const r = rows[0];
    return {
      before: { signals: r?.before_signals ?? 0, negative: r?.before_negative ?? 0 },
      after: { signals: r?.after_signals ?? 0, negative: r?.after_negative ?? 0 },
    };
  }

  /**
   * Claims pending deployments whose after-window has closed, until `until`, skipping those another
   * replica holds (`FOR UPDATE SKIP LOCKED`, so two replicas never claim the same one).
   * @param only restrict to this deployment (an on-demand verification)
   * @returns the claimed deployments, oldest first
   */
  async claimDue(now: Date, until: Date, limit: number, only?: string): Promise<DeploymentRecord[]> {
    const claimed = await this.db.$queryRawUnsafe<{ id: string }[]>(
      `UPDATE deployments SET lease_until = $2
        WHERE id IN (SELECT id FROM deployments
                      WHERE verdict = 'pending' AND deployed_at + make_interval(mins => window_minutes) <= $1
                        AND (lease_until IS NULL OR lease_until <= $1) AND ($4::uuid IS NULL OR id = $4::uuid)
                      ORDER BY deployed_at LIMIT $3 FOR UPDATE SKIP LOCKED)
        RETURNING id`,
      now,
      until,
      limit,
      only ?? null,
    );
    if (claimed.length === 0) return [];
    const rows = await this.db.$queryRawUnsafe<Row[]>(
      `${SELECT} WHERE d.id = ANY($1::uuid[]) ORDER BY d.deployed_at`,
      claimed.map((c) => c.id),
    );
    return rows.map(toRecord);
  }

  /** Gives a claimed deployment back (its verification failed; another pass retries it). */
  async release(id: string): Promise<void> {
    await this.db.$executeRawUnsafe(
      `UPDATE deployments SET lease_until = NULL WHERE id = $1::uuid AND verdict = 'pending'`,
      id,
    );
  }

  /**
   * Stores the final verification of a pending deployment and, for a regression, the proposal it
   * raises, in one transaction. The proposal counts against the owner's monthly proposal quota like
   * any other (skipped, with the verdict still stored, when the quota is used up).
   * @param regression the proposal to raise (only with a `regressed` verdict)
   * @param owner the month (`YYYY-MM-01`) and the plan's monthly proposal limit (null: unlimited)
   * @returns whether this call stored the verdict (false: already verified elsewhere) and the raised
   *   proposal's id
   */
  async complete(
    id: string,
    verification: VerificationResult,
    regression?: { proposal: NewProposal; userId: string; month: string; limit: number | null },
  ): Promise<{ stored: boolean; regressionProposalId: string | null }> {
    return this.db.$transaction(async (tx) => {
      const updated = await tx.$executeRawUnsafe(
        `UPDATE deployments SET verdict = $2::"Verdict", verification = $3::jsonb, verified_at = now(), lease_until = NULL
          WHERE id = $1::uuid AND verdict = 'pending'`,
        id,
        verification.verdict,
        JSON.stringify(verification),
      );
      if (updated !== 1) return { stored: false, regressionProposalId: null };
      if (!regression) return { stored: true, regressionProposalId: null };
      const counted = await tx.$queryRawUnsafe<unknown[]>(
        `INSERT INTO usage_counters AS u (user_id, month, signals, proposals)
         SELECT $1::uuid, $2::date, 0, 1 WHERE 1 <= $3::int
         ON CONFLICT (user_id, month) DO UPDATE SET proposals = u.proposals + 1 WHERE u.proposals + 1 <= $3::int
         RETURNING u.proposals`,
        regression.userId,
        regression.month,
        regression.limit ?? 2_147_483_647,
      );
      if (counted.length === 0) return { stored: true, regressionProposalId: null };
      const inserted = await insertRegressionProposal(tx, regression.proposal, id);
      const raised = inserted[0]?.id ?? null;
      // The same proposal was raised already (the open-window monitor's evidence): nothing new to count.
      if (raised === null) {
        await tx.$executeRawUnsafe(
          `UPDATE usage_counters SET proposals = proposals - 1 WHERE user_id = $1::uuid AND month = $2::date`,
          regression.userId,
          regression.month,
        );
      }
      return { stored: true, regressionProposalId: raised };
    });
  }
}

/**
 * Inserts the proposal a regression of deployment `deploymentId` raises (`regression_of_id`), unless
 * the same one (context and evidence hash) exists: the verdict's and the open-window monitor's share it.
 * @returns the new proposal's id in a one-row array, or an empty array when it existed
 */
export function insertRegressionProposal(
  tx: Pick<Db, '$queryRawUnsafe'>,
  p: NewProposal,
  deploymentId: string,
): Promise<{ id: string }[]> {
  return tx.$queryRawUnsafe<{ id: string }[]>(
    `INSERT INTO proposals (id, product_id, context_id, priority_score, diagnosis, current_state, proposed_change,
                            evidence_summary, predicted_impact, signal_count, evidence, evidence_hash, source,
                            regression_of_id, updated_at)
     VALUES (gen_random_uuid(), $1::uuid, $2::uuid, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $12, $13::uuid, now())
     ON CONFLICT (context_id, evidence_hash) DO NOTHING
     RETURNING id`,
    p.productId,
    p.contextId,
    p.priorityScore,
    p.diagnosis,
    p.currentState,
    p.proposedChange,
    p.evidenceSummary,
    p.predictedImpact,
    p.signalCount,
    JSON.stringify(p.evidence),
    p.evidenceHash,
    p.source,
    deploymentId,
  );
}
