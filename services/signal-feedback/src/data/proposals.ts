import type { Db } from './prisma';
import type { Prisma } from '../generated/prisma/client';
import type { DeploymentSummary, Proposal, ProposalStatus } from '../schemas';

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

/** A stored proposal as the wire shape (README, "Endpoints"). */
export function toWire(p: Row): Proposal {
  return {
    id: p.id,
    product_id: p.productId,
    context_id: p.contextId,
    status: p.status,
    priority_score: p.priorityScore,
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
  };
}

/** Proposals and the monthly proposal counters. */
export class ProposalRepository {
  /** @param db the Prisma client */
  constructor(private readonly db: Db) {}

  /**
   * Proposals visible to a product key or a user, highest priority first, then newest.
   * @param scope `productId` (API key) or `userId` (session, optionally one of the user's products)
   */
  async list(
    scope: { productId: string } | { userId: string; productId?: string },
    filter: { status?: ProposalStatus; limit: number },
  ): Promise<Proposal[]> {
    const where: Prisma.ProposalWhereInput = {
      ...('userId' in scope
        ? { product: { userId: scope.userId }, ...(scope.productId ? { productId: scope.productId } : {}) }
        : { productId: scope.productId }),
      ...(filter.status ? { status: filter.status } : {}),
    };
    const rows = await this.db.proposal.findMany({
      where,
      orderBy: [{ priorityScore: 'desc' }, { createdAt: 'desc' }],
      take: filter.limit,
      include: LINKS,
    });
    return rows.map(toWire);
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
    if (r.count === 1) return { updated: toWire(current) };
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
        const inserted = await tx.$queryRaw<{ id: string }[]>`
          INSERT INTO proposals (id, product_id, context_id, priority_score, diagnosis, current_state, proposed_change,
                                 evidence_summary, predicted_impact, signal_count, evidence, evidence_hash, source, updated_at)
          VALUES (gen_random_uuid(), ${p.productId}::uuid, ${p.contextId}::uuid, ${p.priorityScore}, ${p.diagnosis}, ${p.currentState},
                  ${p.proposedChange}, ${p.evidenceSummary}, ${p.predictedImpact}, ${p.signalCount}, ${JSON.stringify(p.evidence)}::jsonb,
                  ${p.evidenceHash}, ${p.source}, now())
          ON CONFLICT (context_id, evidence_hash) DO NOTHING
          RETURNING id`;
        const row = inserted[0];
        if (!row) return { skipped: 'duplicate' as const };
        const limit = owner.limit ?? 2_147_483_647;
        const counted = await tx.$queryRaw<{ proposals: number }[]>`
          INSERT INTO usage_counters AS u (user_id, month, signals, proposals)
          SELECT ${owner.userId}::uuid, ${owner.month}::date, 0, 1 WHERE 1 <= ${limit}::int
          ON CONFLICT (user_id, month) DO UPDATE SET proposals = u.proposals + 1 WHERE u.proposals + 1 <= ${limit}::int
          RETURNING u.proposals`;
        if (counted.length === 0) throw new QuotaReached();
        const created = await tx.proposal.findUniqueOrThrow({ where: { id: row.id }, include: LINKS });
        return { created: toWire(created) };
      })
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
