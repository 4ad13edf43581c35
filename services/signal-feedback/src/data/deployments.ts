import { countWindowSet, type WindowSetCounts, type WindowSetQuery } from './deployment-windows';
import type { Db } from './prisma';
import { countProposal, insertProposal, type NewProposal } from './proposals';
import type { PlanName } from '../schemas/accounts';
import type { ProposalStatus } from '../schemas/proposals';
import type { VerificationResult } from '../schemas/verification';

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
  /**
   * The open-window monitor's stored provisional figures, read only by a listing
   * ({@link DeploymentRepository.listForProposal}); undefined elsewhere, null when none are stored.
   */
  storedFigures?: StoredFigures | null;
}

/**
 * An open deployment's provisional verification as the open-window monitor stored it (README, "The
 * open-window monitor"), with what it covers: read from the deployment's row, never from memory, so
 * every replica judges it alike.
 */
export interface StoredFigures {
  /** The provisional verification, exactly as it was computed. */
  verification: VerificationResult;
  /** When it was computed (its `computed_at`). */
  computedAt: Date;
  /**
   * Whether the deployment's product has a signal newer (a greater id: the arrival order) than the
   * newest it had when the figures were computed; true: they may miss it.
   */
  superseded: boolean;
}

/** Who asks: a product key sees its product's proposals, a session all of its user's. */
export type DeploymentScope = { productId: string } | { userId: string };

/** Outcome of {@link DeploymentRepository.create}. */
export type DeploymentCreateOutcome =
  | { created: DeploymentRecord }
  | { notFound: true }
  | { notApproved: ProposalStatus }
  | { quota: { plan: PlanName; limit: number } };

type StoredFiguresRow = {
  provisional_figures: VerificationResult | null;
  provisional_at: Date | null;
  provisional_signal_id: string | null;
};

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

const COLUMNS = `SELECT d.id, d.proposal_id, p.context_id, p.product_id, pr.user_id, u.plan::text AS plan, d.deployed_at,
         d.version, d.note, d.window_minutes, d.signal_type, d.alpha, coalesce(d.treated_context_ids::text[], '{}') AS treated_context_ids,
         coalesce(d.control_context_ids::text[], '{}') AS control_context_ids,
         coalesce(d.signal_types::text[], '{}') AS signal_types,
         d.verdict::text AS verdict, d.verification,
         (SELECT r.id FROM proposals r WHERE r.regression_of_id = d.id LIMIT 1) AS regression_proposal_id, d.regression_detected_at, d.created_at`;
const FROM = `
    FROM deployments d JOIN proposals p ON p.id = d.proposal_id
    JOIN products pr ON pr.id = p.product_id JOIN users u ON u.id = pr.user_id`;
const SELECT = COLUMNS + FROM;
/** The stored figures and the newest signal they cover. */
const STORED_FIGURES = `, d.provisional_figures, d.provisional_at, d.provisional_signal_id::text AS provisional_signal_id`;

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
  /** The hour-of-week counts of one window set: {@link countWindowSet}. */
  windowSetCounts(args: WindowSetQuery): Promise<WindowSetCounts> {
    return countWindowSet(this.db, args);
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
    const rows = await this.db.$queryRawUnsafe<(Row & StoredFiguresRow)[]>(
      `${COLUMNS}${STORED_FIGURES}${FROM} WHERE d.proposal_id = $1::uuid ORDER BY d.deployed_at DESC, d.created_at DESC LIMIT $2`,
      proposalId,
      limit,
    );
    const newest = await this.newestSignalsAbove(rows);
    return rows.map((r) => {
      const covers = BigInt(r.provisional_signal_id ?? 0);
      const latest = newest.get(r.product_id);
      return {
        ...toRecord(r),
        storedFigures:
          r.provisional_figures && r.provisional_at
            ? {
                verification: r.provisional_figures,
                computedAt: r.provisional_at,
                superseded: latest !== undefined && latest > covers,
              }
            : null,
      };
    });
  }

  /**
   * Per product of `rows` with stored figures, its newest signal above the oldest those figures cover
   * (absent: none arrived since): one query per product, with the values in it so PostgreSQL plans
   * the `id >` bound as the short range it is. The product is the deployment's own.
   */
  private async newestSignalsAbove(rows: readonly (Row & StoredFiguresRow)[]): Promise<Map<string, bigint>> {
    const oldest = new Map<string, bigint>();
    for (const r of rows) {
      if (!r.provisional_figures) continue;
      const covers = BigInt(r.provisional_signal_id ?? 0);
      const seen = oldest.get(r.product_id);
      if (seen === undefined || covers < seen) oldest.set(r.product_id, covers);
    }
    const newest = new Map<string, bigint>();
    for (const [productId, covers] of oldest) {
      const found = await this.db.$queryRawUnsafe<{ id: string | null }[]>(
        `SELECT max(id)::text AS id FROM signals WHERE product_id = $1::uuid AND id > $2::bigint`,
        productId,
        covers.toString(),
      );
      if (found[0]?.id) newest.set(productId, BigInt(found[0].id));
    }
    return newest;
  }

  /**
   * The id of the product's newest signal (the arrival order), read before figures are computed so
   * that they cover at least every signal up to it; null when the product has none. Signals of one
   * owner are stored under the row lock of their monthly counter (`insertWithinQuota`), so their ids
   * commit in order and none below this one can appear later.
   * @returns the id as a decimal string (a bigint)
   */
  async newestSignalId(productId: string): Promise<string | null> {
    const rows = await this.db.$queryRawUnsafe<{ id: string | null }[]>(
      `SELECT max(id)::text AS id FROM signals WHERE product_id = $1::uuid`,
      productId,
    );
    return rows[0]?.id ?? null;
  }

  /**
   * Stores an open deployment's provisional figures for the listing (README, "The open-window
   * monitor"), with the newest signal they cover and when they were computed; never over newer
   * figures another replica stored, and never once the verdict is stored.
   * @param coversSignalId {@link newestSignalId} read before the figures were computed
   * @returns whether they were stored
   */
  async storeProvisional(
    id: string,
    verification: VerificationResult,
    coversSignalId: string | null,
    computedAt: Date,
  ): Promise<boolean> {
    const updated = await this.db.$executeRawUnsafe(
      `UPDATE deployments SET provisional_figures = $2::jsonb, provisional_signal_id = $3::bigint, provisional_at = $4
        WHERE id = $1::uuid AND verdict = 'pending' AND (provisional_at IS NULL OR provisional_at <= $4)`,
      id,
      JSON.stringify(verification),
      coversSignalId,
      computedAt,
    );
    return updated === 1;
  }

  /** One deployment, whoever owns it (the verification's own reads). */
  async get(id: string): Promise<DeploymentRecord | undefined> {
    const rows = await this.db.$queryRawUnsafe<Row[]>(`${SELECT} WHERE d.id = $1::uuid`, id);
    return rows[0] ? toRecord(rows[0]) : undefined;
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
      if (!(await countProposal(tx, regression))) return { stored: true, regressionProposalId: null };
      const inserted = await insertProposal(tx, regression.proposal, id);
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
