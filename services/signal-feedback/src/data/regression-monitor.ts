import { insertRegressionProposal, type DeploymentRecord, type DeploymentRepository } from './deployments';
import type { Db } from './prisma';
import type { NewProposal } from './proposals';
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
   * @param month the UTC month the revert proposal counts in, `YYYY-MM-01`
   * @param figures the monitor's figures, stored as `regression_evidence`
   * @param webhook builds the event from the revert proposal's id (null: the deployment had raised one already)
   * @returns whether this call recorded it, the revert proposal's id and whether a webhook was queued
   */
  recordRegression(
    d: DeploymentRecord,
    detectedAt: Date,
    month: string,
    figures: Record<string, unknown>,
    proposal: NewProposal,
    webhook: (revertProposalId: string | null) => { messageId: string; body: string },
  ): Promise<{ recorded: boolean; revertProposalId: string | null; webhookQueued: boolean }>;
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
  async recordRegression(
    d: DeploymentRecord,
    detectedAt: Date,
    month: string,
    figures: Record<string, unknown>,
    p: NewProposal,
    webhook: (revertProposalId: string | null) => { messageId: string; body: string },
  ): Promise<{ recorded: boolean; revertProposalId: string | null; webhookQueued: boolean }> {
    return this.db.$transaction(async (tx) => {
      const updated = await tx.$executeRawUnsafe(
        `UPDATE deployments SET regression_detected_at = $2, regression_evidence = $3::jsonb
          WHERE id = $1::uuid AND regression_detected_at IS NULL AND verdict = 'pending'`,
        d.id,
        detectedAt,
        JSON.stringify(figures),
      );
      if (updated !== 1) return { recorded: false, revertProposalId: null, webhookQueued: false };
      const inserted = await insertRegressionProposal(tx, p, d.id);
      const revertProposalId = inserted[0]?.id ?? null;
      if (revertProposalId) {
        await tx.$executeRawUnsafe(
          `INSERT INTO usage_counters AS u (user_id, month, signals, proposals) VALUES ($1::uuid, $2::date, 0, 1)
           ON CONFLICT (user_id, month) DO UPDATE SET proposals = u.proposals + 1`,
          d.userId,
          month,
        );
      }
      const product = await tx.$queryRawUnsafe<{ webhook_url: string | null }[]>(
        `SELECT webhook_url FROM products WHERE id = $1::uuid`,
        d.productId,
      );
      const url = product[0]?.webhook_url ?? null;
      let webhookQueued = false;
      if (url !== null) {
        const event = webhook(revertProposalId);
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
