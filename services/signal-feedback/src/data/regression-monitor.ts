import type { DeploymentRecord, DeploymentRepository } from './deployments';
import type { Db } from './prisma';
import { countProposal, insertProposal, type NewProposal } from './proposals';
import { queueWebhook } from './webhooks';

/** What the open-window monitor needs of the database (README, "The open-window monitor"). */
export interface MonitorStore {
  /**
   * Claims up to `limit` open deployments not looked at since `staleBefore` (sets `monitored_at =
   * now`, `FOR UPDATE SKIP LOCKED`), whose regression is not yet detected.
   */
  claimOpen(now: Date, staleBefore: Date, limit: number): Promise<DeploymentRecord[]>;
  /**
   * Records the crossing once (conditional update), raises the revert proposal and queues the webhook,
   * in one transaction.
   * @returns whether this call recorded it, the revert proposal's id and whether a webhook was queued
   */
  recordRegression(r: RegressionRecord): Promise<RegressionRecorded>;
}

/** A regression the open-window monitor detected, as {@link MonitorStore.recordRegression} records it. */
export interface RegressionRecord {
  deployment: DeploymentRecord;
  detectedAt: Date;
  /** The UTC month the revert proposal counts in, `YYYY-MM-01`. */
  month: string;
  /** The monitor's figures, stored as `regression_evidence`. */
  figures: Record<string, unknown>;
  /** The revert proposal. */
  proposal: NewProposal;
  /** Builds the event from the revert proposal's id (null: the deployment had raised one already). */
  webhook: (revertProposalId: string | null) => { messageId: string; body: string };
}

/** Outcome of {@link MonitorStore.recordRegression}. */
export interface RegressionRecorded {
  recorded: boolean;
  revertProposalId: string | null;
  webhookQueued: boolean;
}

/**
 * The open-window monitor's queries (README, "The open-window monitor"): the claim of open deployments
 * and the one transaction that records a crossing.
 */
export class MonitorRepository implements MonitorStore {
  /**
   * @param db the Prisma client
   * @param deployments reads a claimed deployment with what its verification needs
   */
  constructor(
    private readonly db: Db,
    private readonly deployments: Pick<DeploymentRepository, 'get'>,
  ) {}

  /**
   * Claims open deployments (deployed, after-window not closed, verdict pending, no regression
   * detected) not looked at since `staleBefore`, setting `monitored_at = now`; `FOR UPDATE SKIP LOCKED`
   * keeps two replicas off the same one, and `monitored_at` spaces the looks.
   */
  async claimOpen(now: Date, staleBefore: Date, limit: number): Promise<DeploymentRecord[]> {
    const claimed = await this.db.$queryRawUnsafe<{ id: string }[]>(
      `UPDATE deployments SET monitored_at = $1
        WHERE id IN (SELECT id FROM deployments
                      WHERE verdict = 'pending' AND regression_detected_at IS NULL AND deployed_at <= $1
                        AND deployed_at + make_interval(mins => window_minutes) > $1
                        AND (monitored_at IS NULL OR monitored_at <= $2)
                      ORDER BY monitored_at NULLS FIRST, deployed_at LIMIT $3 FOR UPDATE SKIP LOCKED)
        RETURNING id`,
      now,
      staleBefore,
      limit,
    );
    const out: DeploymentRecord[] = [];
    for (const { id } of claimed) {
      const d = await this.deployments.get(id);
      if (d) out.push(d);
    }
    return out;
  }

  /**
   * In one transaction: sets `regression_detected_at` and `regression_evidence` only while unset and
   * the verdict pending (so once across replicas), stores the revert proposal (counted in the month's
   * proposals but never refused by the quota: a revert must not wait for next month) unless the
   * deployment already raised one, and queues the webhook when the product has a URL.
   */
  async recordRegression(r: RegressionRecord): Promise<RegressionRecorded> {
    const { deployment: d, month } = r;
    return this.db.$transaction(async (tx) => {
      const updated = await tx.$executeRawUnsafe(
        `UPDATE deployments SET regression_detected_at = $2, regression_evidence = $3::jsonb
          WHERE id = $1::uuid AND regression_detected_at IS NULL AND verdict = 'pending'`,
        d.id,
        r.detectedAt,
        JSON.stringify(r.figures),
      );
      if (updated !== 1) return { recorded: false, revertProposalId: null, webhookQueued: false };
      const inserted = await insertProposal(tx, r.proposal, d.id);
      const revertProposalId = inserted[0]?.id ?? null;
      // Counted, never refused: a revert must not wait for next month.
      if (revertProposalId) await countProposal(tx, { userId: d.userId, month, limit: null });
      const product = await tx.$queryRawUnsafe<{ webhook_url: string | null }[]>(
        `SELECT webhook_url FROM products WHERE id = $1::uuid`,
        d.productId,
      );
      const url = product[0]?.webhook_url ?? null;
      let webhookQueued = false;
      if (url !== null) {
        const event = r.webhook(revertProposalId);
        webhookQueued = await queueWebhook(tx, {
          productId: d.productId,
          eventType: 'regression_detected',
          messageId: event.messageId,
          url,
          body: event.body,
        });
      }
      return { recorded: true, revertProposalId, webhookQueued };
    });
  }
}
