import type { Db } from './prisma';
import type { Prisma } from '../generated/prisma/client';
import type { DeploymentSummary } from '../schemas/deployments';
import type { Proposal, ProposalStatus } from '../schemas/proposals';

/** The wire fields of a proposal that its analysis computes, as stored (README, "Endpoints"). */
export interface ProposalFields {
  productId: string;
  contextId: string;
  priorityScore: number;
  diagnosis: string;
  currentState: string;
  proposedChange: string;
  evidenceSummary: string;
  predictedImpact: string;
  signalCount: number;
}

/** A proposal to store (the wire fields the analysis computes, plus its evidence). */
export interface NewProposal extends ProposalFields {
  evidence: Record<string, unknown>;
  evidenceHash: string;
  /** `llm` or `evidence`. */
  source: 'llm' | 'evidence';
}

/** Outcome of {@link ProposalRepository.insertWithinQuota}. */
export type ProposalInsertOutcome = { created: Proposal } | { skipped: 'duplicate' | 'quota' };

/**
 * The latest deployment of a proposal's kind: any proposal of the same context whose compared failing
 * type is this proposal's most frequent failing type (README, "Priority feedback").
 */
export interface LastChange {
  deploymentId: string;
  proposalId: string;
  deployedAt: Date;
  version: string | null;
  verdict: 'pending' | 'improved' | 'regressed' | 'inconclusive';
  /** Whether the open-window monitor detected a regression. */
  regressionDetected: boolean;
}

/**
 * The priority feedback as the repository applies it (README, "Priority feedback"); the composition
 * passes the domain's rule (`domain/proposal-priority.ts`). Without it, scores are the analysis's.
 */
export interface PriorityFeedback {
  /** The outcome a last change stands for. */
  outcome(verdict: LastChange['verdict'], regressionDetected: boolean): ChangeOutcome;
  /** The factor of an outcome (1: unchanged); the listing orders by `score × factor`. */
  factor(outcome: ChangeOutcome | null): number;
  /** The scaled score on the wire, 0 to 100. */
  score(base: number, outcome: ChangeOutcome | null, isRevert: boolean): number;
}

/** What happened to a change, as the feedback reads it. */
export type ChangeOutcome = 'improved' | 'regressed' | 'inconclusive' | 'pending';

/** No feedback: the analysis's score, unscaled. */
const NO_FEEDBACK: PriorityFeedback = {
  outcome: (verdict) => verdict,
  factor: () => 1,
  score: (base) => base,
};

/**
 * The latest deployment of each kind (context, compared failing type) among the proposals matching
 * `$1` (a product id, or a user id with `$2` an optional product id), as SQL. Deployments are few (a
 * monthly plan limit), so this is small whatever the number of proposals.
 */
const lastChangeOfKind = (scope: 'product' | 'user') => `
  SELECT DISTINCT ON (q.context_id, d.signal_type)
         q.context_id, d.signal_type, d.id AS deployment_id, d.proposal_id, d.deployed_at, d.version,
         d.verdict::text AS verdict, d.regression_detected_at IS NOT NULL AS regression_detected
    FROM deployments d JOIN proposals q ON q.id = d.proposal_id
   WHERE ${
     scope === 'product'
       ? 'q.product_id = $1::uuid'
       : 'q.product_id IN (SELECT id FROM products WHERE user_id = $1::uuid) AND ($2::uuid IS NULL OR q.product_id = $2::uuid)'
   }
   ORDER BY q.context_id, d.signal_type, d.deployed_at DESC, d.created_at DESC`;

/** A proposal's kind: its most frequent failing type (null when it has none). */
const KIND_TYPE = `(p.evidence #>> '{top_failing_types,0,type}')`;

/** Outcome of {@link ProposalRepository.changeStatus}. */
export type StatusChangeOutcome = { updated: Proposal } | { notFound: true } | { conflict: ProposalStatus };

type Row = ProposalFields & {
  id: string;
  status: ProposalStatus;
  createdAt: Date;
  deployments?: {
    id: string;
    deployedAt: Date;
    version: string | null;
    verdict: DeploymentSummary['verdict'];
  }[];
  regressionOf?: { id: string; proposalId: string } | null;
  regressionOfId?: string | null;
};

/** What a listed proposal carries beside its row: its latest deployment and the deployment it cites. */
const LINKS = {
  deployments: {
    select: { id: true, deployedAt: true, version: true, verdict: true },
    orderBy: [{ deployedAt: 'desc' }, { createdAt: 'desc' }],
    take: 1,
  },
  regressionOf: { select: { id: true, proposalId: true } },
} satisfies Prisma.ProposalInclude;

/**
 * A stored proposal as the wire shape (README, "Endpoints"), its score scaled by the priority feedback
 * (README, "Priority feedback").
 * @param last the latest deployment of its kind; null: none; undefined: not looked up (score unscaled)
 */
export function toWire(p: Row, last?: LastChange | null, feedback: PriorityFeedback = NO_FEEDBACK): Proposal {
  const outcome = last ? feedback.outcome(last.verdict, last.regressionDetected) : null;
  const isRevert = (p.regressionOfId ?? p.regressionOf?.id ?? null) !== null;
  return {
    id: p.id,
    product_id: p.productId,
    context_id: p.contextId,
    status: p.status,
    priority_score: last === undefined ? p.priorityScore : feedback.score(p.priorityScore, outcome, isRevert),
    base_priority_score: p.priorityScore,
    diagnosis: p.diagnosis,
    current_state: p.currentState,
    proposed_change: p.proposedChange,
    evidence_summary: p.evidenceSummary,
    predicted_impact: p.predictedImpact,
    signal_count: p.signalCount,
    created_at: p.createdAt.toISOString(),
    ...(p.deployments?.[0]
      ? {
          deployment: {
            id: p.deployments[0].id,
            deployed_at: p.deployments[0].deployedAt.toISOString(),
            version: p.deployments[0].version,
            verdict: p.deployments[0].verdict,
          },
        }
      : {}),
    ...(p.regressionOf
      ? { regression_of: { deployment_id: p.regressionOf.id, proposal_id: p.regressionOf.proposalId } }
      : {}),
    ...(last !== undefined
      ? {
          last_change_of_kind: last && {
            deployment_id: last.deploymentId,
            proposal_id: last.proposalId,
            deployed_at: last.deployedAt.toISOString(),
            version: last.version,
            verdict: last.verdict,
            regression_detected: last.regressionDetected,
            outcome: outcome ?? last.verdict,
          },
        }
      : {}),
  };
}

type LastChangeRow = {
  context_id: string;
  signal_type: string | null;
  deployment_id: string;
  proposal_id: string;
  deployed_at: Date;
  version: string | null;
  verdict: LastChange['verdict'];
  regression_detected: boolean;
};

const toLastChange = (r: LastChangeRow): LastChange => ({
  deploymentId: r.deployment_id,
  proposalId: r.proposal_id,
  deployedAt: r.deployed_at,
  version: r.version,
  verdict: r.verdict,
  regressionDetected: r.regression_detected,
});

/** The kind of a stored proposal: its context and most frequent failing type. */
function kindOf(p: { contextId: string; evidence?: unknown }): string {
  const evidence = p.evidence as { top_failing_types?: { type?: unknown }[] } | null | undefined;
  const type = evidence?.top_failing_types?.[0]?.type;
  return `${p.contextId}\u0000${typeof type === 'string' ? type : ''}`;
}

/** Proposals and the monthly proposal counters. */
export class ProposalRepository {
  /**
   * @param db the Prisma client
   * @param feedback the priority feedback (README, "Priority feedback"); default none
   */
  constructor(
    private readonly db: Db,
    private readonly feedback: PriorityFeedback = NO_FEEDBACK,
  ) {}

  /** The latest change of each kind among `rows`' products, keyed as {@link kindOf}. */
  private async lastChanges(productIds: readonly string[]): Promise<Map<string, LastChange>> {
    const out = new Map<string, LastChange>();
    for (const productId of new Set(productIds)) {
      const rows = await this.db.$queryRawUnsafe<LastChangeRow[]>(lastChangeOfKind('product'), productId);
      for (const r of rows) out.set(`${r.context_id}\u0000${r.signal_type ?? ''}`, toLastChange(r));
    }
    return out;
  }

  /** Rows as the wire shape with the priority feedback applied. */
  private async withFeedback(rows: (Row & { evidence: unknown; productId: string })[]): Promise<Proposal[]> {
    const last = await this.lastChanges(rows.map((r) => r.productId));
    return rows.map((r) => toWire(r, last.get(kindOf(r)) ?? null, this.feedback));
  }

  /**
   * Proposals visible to a product key or a user, highest priority first, then newest.
   * @param scope `productId` (API key) or `userId` (session, optionally one of the user's products)
   */
  async list(
    scope: { productId: string } | { userId: string; productId?: string },
    filter: { status?: ProposalStatus; limit: number },
  ): Promise<Proposal[]> {
    // Ordered by the scaled score (README, "Priority feedback"): the outcome here is the one of
    // PriorityFeedback.outcome (a detected regression counts unless the verdict is improved).
    const byUser = 'userId' in scope;
    const ordered = await this.db.$queryRawUnsafe<{ id: string }[]>(
      `WITH kinds AS (${lastChangeOfKind(byUser ? 'user' : 'product')})
       SELECT p.id FROM proposals p
         LEFT JOIN kinds k ON k.context_id = p.context_id AND k.signal_type IS NOT DISTINCT FROM ${KIND_TYPE}
        WHERE ${byUser ? 'p.product_id IN (SELECT id FROM products WHERE user_id = $1::uuid) AND ($2::uuid IS NULL OR p.product_id = $2::uuid)' : 'p.product_id = $1::uuid AND $2::uuid IS NULL'}
          AND ($3::text IS NULL OR p.status::text = $3::text)
        ORDER BY LEAST(100, p.priority_score * CASE
                   WHEN p.regression_of_id IS NOT NULL OR k.verdict IS NULL THEN 1
                   WHEN k.verdict = 'improved' THEN $4::float8
                   WHEN k.verdict = 'regressed' OR k.regression_detected THEN $5::float8
                   ELSE 1 END) DESC, p.created_at DESC, p.id
        LIMIT $6`,
      byUser ? scope.userId : scope.productId,
      byUser ? (scope.productId ?? null) : null,
      filter.status ?? null,
      this.feedback.factor('improved'),
      this.feedback.factor('regressed'),
      filter.limit,
    );
    const ids = ordered.map((r) => r.id);
    const rows = await this.db.proposal.findMany({ where: { id: { in: ids } }, include: LINKS });
    const byId = new Map(rows.map((r) => [r.id, r]));
    return this.withFeedback(ids.flatMap((id) => byId.get(id) ?? []));
  }

  /**
   * Sets a proposal's status to `change.to` only while its current status is one of `change.from`,
   * atomically (a conditional UPDATE, so two concurrent changes cannot both apply).
   * @param scope the product (API key) or user (session) the proposal must belong to
   * @param change the new status and the statuses it may be reached from
   * @returns the updated proposal; `notFound` when the scope has no such proposal; `conflict` with the
   *   current status when it is not one of `change.from`
   */
  async changeStatus(
    id: string,
    scope: { productId: string } | { userId: string },
    change: { to: ProposalStatus; from: readonly ProposalStatus[] },
  ): Promise<StatusChangeOutcome> {
    const owned: Prisma.ProposalWhereInput =
      'userId' in scope ? { product: { userId: scope.userId } } : { productId: scope.productId };
    const r = await this.db.proposal.updateMany({
      where: { id, ...owned, status: { in: [...change.from] } },
      data: { status: change.to },
    });
    const current = await this.db.proposal.findFirst({ where: { id, ...owned }, include: LINKS });
    if (!current) return { notFound: true };
    if (r.count === 1) return { updated: (await this.withFeedback([current]))[0]! };
    return { conflict: current.status };
  }

  /**
   * Stores a proposal unless the context already has one with the same evidence hash, counting it
   * against the owner's monthly proposal quota in the same transaction (conditional counter update).
   * @param month first day of the UTC month, `YYYY-MM-01`
   * @param limit the plan's monthly proposal limit; null: unlimited
   */
  async insertWithinQuota(
    p: NewProposal,
    owner: { userId: string; month: string; limit: number | null },
  ): Promise<ProposalInsertOutcome> {
    return this.db
      .$transaction(async (tx) => {
        const row = (await insertProposal(tx, p, null))[0];
        if (!row) return { skipped: 'duplicate' as const };
        if (!(await countProposal(tx, owner))) throw new QuotaReached();
        const created = await tx.proposal.findUniqueOrThrow({ where: { id: row.id }, include: LINKS });
        return { created };
      })
      .then(async (outcome): Promise<ProposalInsertOutcome> =>
        outcome.created
          ? { created: (await this.withFeedback([outcome.created]))[0]! }
          : { skipped: 'duplicate' },
      )
      .catch((err: unknown) => {
        if (err instanceof QuotaReached) return { skipped: 'quota' as const };
        throw err;
      });
  }

  /** Whether the context already has a proposal with this evidence hash. */
  async exists(contextId: string, evidenceHash: string): Promise<boolean> {
    return (await this.db.proposal.count({ where: { contextId, evidenceHash } })) > 0;
  }

  /** Proposals counted this month for the user. */
  async monthlyProposals(userId: string, month: string): Promise<number> {
    const c = await this.db.usageCounter.findUnique({
      where: { userId_month: { userId, month: new Date(`${month}T00:00:00Z`) } },
    });
    return c?.proposals ?? 0;
  }
}

/** Rolls the proposal transaction back when the monthly quota is used up. */
class QuotaReached extends Error {}

/**
 * Inserts a proposal unless its context already has one with the same evidence hash (README, "Routing,
 * classification and analysis": no new proposal for unchanged evidence). The analysis's proposals and
 * those a deployment's regression raises (the verdict's and the open-window monitor's) share it.
 * @param regressionOfId the deployment whose regression raised it; null for the analysis's
 * @returns the new proposal's id in a one-row array, or an empty array when it existed
 */
export function insertProposal(
  tx: Pick<Db, '$queryRawUnsafe'>,
  p: NewProposal,
  regressionOfId: string | null,
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
    regressionOfId,
  );
}

/**
 * Counts one proposal in the owner's month of `usage_counters` unless that would pass the plan's limit
 * (README, "Plans and quotas": a conditional upsert, so concurrent proposals cannot pass it together).
 * @param owner.month first day of the UTC month, `YYYY-MM-01`
 * @param owner.limit the plan's monthly proposal limit; null: unlimited
 * @returns whether it was counted (false: the month's proposals are used up)
 */
export async function countProposal(
  tx: Pick<Db, '$queryRawUnsafe'>,
  owner: { userId: string; month: string; limit: number | null },
): Promise<boolean> {
  const counted = await tx.$queryRawUnsafe<unknown[]>(
    `INSERT INTO usage_counters AS u (user_id, month, signals, proposals)
     SELECT $1::uuid, $2::date, 0, 1 WHERE 1 <= $3::int
     ON CONFLICT (user_id, month) DO UPDATE SET proposals = u.proposals + 1 WHERE u.proposals + 1 <= $3::int
     RETURNING u.proposals`,
    owner.userId,
    owner.month,
    owner.limit ?? 2_147_483_647,
  );
  return counted.length > 0;
}
