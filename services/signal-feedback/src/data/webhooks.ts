import type { Db } from './prisma';

/** A product's webhook settings as the owner sees them (the secret itself is never read back). */
export interface WebhookSettings {
  productId: string;
  /** Null: no webhooks are sent. */
  url: string | null;
  /** Whether a signing secret is stored. */
  secretSet: boolean;
}

/** One recent delivery of a product's webhooks (the dashboard's list). */
export interface WebhookDeliveryRecord {
  id: string;
  eventType: string;
  messageId: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: Date;
  deliveredAt: Date | null;
}

/** A delivery claimed by {@link WebhookRepository.claimDue}, with the product's current secret. */
export interface ClaimedDelivery {
  id: bigint;
  messageId: string;
  url: string;
  body: string;
  /** The attempt this claim makes (1 for the first). */
  attempts: number;
  /** Null when the product's webhook was removed since the event was queued (the delivery is dropped). */
  secret: string | null;
}

/** An event to queue in the outbox (README, "Webhooks (signal-feedback)"). */
export interface OutboxEvent {
  productId: string;
  eventType: string;
  messageId: string;
  url: string;
  body: string;
}

/** The transaction client of Prisma's interactive transactions (what `$transaction(fn)` hands to `fn`). */
export type Tx = Parameters<Parameters<Db['$transaction']>[0]>[0];

/**
 * Queues an event in the outbox inside the caller's transaction, so the event is sent exactly when the
 * change it reports commits. A second event with the same `messageId` is ignored.
 * @returns whether this call queued it
 */
export async function queueWebhook(tx: Tx, event: OutboxEvent): Promise<boolean> {
  const n = await tx.$executeRawUnsafe(
    `INSERT INTO webhook_deliveries (product_id, event_type, message_id, url, body)
     VALUES ($1::uuid, $2, $3, $4, $5) ON CONFLICT (message_id) DO NOTHING`,
    event.productId,
    event.eventType,
    event.messageId,
    event.url,
    event.body,
  );
  return n === 1;
}

/** Product webhook settings and the webhook outbox (table `webhook_deliveries`). */
export class WebhookRepository {
  /** @param db the Prisma client */
  constructor(private readonly db: Db) {}

  /**
   * A product's webhook settings.
   * @returns undefined when the user has no such product
   */
  async settings(userId: string, productId: string): Promise<WebhookSettings | undefined> {
    const p = await this.db.product.findFirst({
      where: { id: productId, userId },
      select: { id: true, webhookUrl: true, webhookSecret: true },
    });
    return p ? { productId: p.id, url: p.webhookUrl, secretSet: p.webhookSecret !== null } : undefined;
  }

  /**
   * Sets a product's webhook URL and signing secret.
   * @param secret the new secret; null keeps the stored one
   * @returns false when the user has no such product
   */
  async setWebhook(userId: string, productId: string, url: string, secret: string | null): Promise<boolean> {
    const r = await this.db.product.updateMany({
      where: { id: productId, userId },
      data: { webhookUrl: url, ...(secret !== null ? { webhookSecret: secret } : {}) },
    });
    return r.count === 1;
  }

  /**
   * Removes a product's webhook URL and secret; deliveries not yet sent are dropped.
   * @returns false when the user has no such product
   */
  async removeWebhook(userId: string, productId: string): Promise<boolean> {
    return this.db.$transaction(async (tx) => {
      const r = await tx.product.updateMany({
        where: { id: productId, userId },
        data: { webhookUrl: null, webhookSecret: null },
      });
      if (r.count !== 1) return false;
      await tx.webhookDelivery.updateMany({
        where: { productId, status: 'pending' },
        data: { status: 'failed', lastError: 'the webhook was removed' },
      });
      return true;
    });
  }

  /** The product's latest deliveries, newest first. */
  async recentDeliveries(productId: string, limit: number): Promise<WebhookDeliveryRecord[]> {
    const rows = await this.db.webhookDelivery.findMany({
      where: { productId },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: limit,
    });
    return rows.map((r) => ({
      id: r.id.toString(),
      eventType: r.eventType,
      messageId: r.messageId,
      status: r.status as WebhookDeliveryRecord['status'],
      attempts: r.attempts,
      lastStatus: r.lastStatus,
      lastError: r.lastError,
      createdAt: r.createdAt,
      deliveredAt: r.deliveredAt,
    }));
  }

  /**
   * Claims up to `limit` due deliveries (`FOR UPDATE SKIP LOCKED`, so replicas share them), counts the
   * attempt and pushes `next_attempt_at` past `leaseMs`, so a replica that dies mid-attempt leaves the
   * delivery to be retried after that.
   * @param leaseMs how long the claim holds, ms
   */
  async claimDue(limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    // "Due" at the column's millisecond precision: a delivery stored just now may be rounded up.
    const rows = await this.db.$queryRawUnsafe<
      { id: bigint; message_id: string; url: string; body: string; attempts: number; secret: string | null }[]
    >(
      `WITH claimed AS (
         UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = now() + ($2::int * interval '1 millisecond')
          WHERE id IN (SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= now()::timestamptz(3)
                        ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED)
          RETURNING id, product_id, message_id, url, body, attempts)
       SELECT c.id, c.message_id, c.url, c.body, c.attempts, p.webhook_secret AS secret
         FROM claimed c JOIN products p ON p.id = c.product_id`,
      limit,
      leaseMs,
    );
    return rows.map((r) => ({
      id: r.id,
      messageId: r.message_id,
      url: r.url,
      body: r.body,
      attempts: r.attempts,
      secret: r.secret,
    }));
  }

  /** Marks a delivery delivered with the receiver's status. */
  async delivered(id: bigint, status: number): Promise<void> {
    await this.db.$executeRawUnsafe(
      `UPDATE webhook_deliveries SET status = 'delivered', delivered_at = now(), last_status = $2, last_error = NULL WHERE id = $1`,
      id,
      status,
    );
  }

  /**
   * Records a failed attempt: retried after `retryInMs`, or given up (`failed`).
   * @param status the receiver's HTTP status, null when none came
   */
  async attemptFailed(
    id: bigint,
    outcome: { status: number | null; error: string; giveUp: boolean; retryInMs: number },
  ): Promise<void> {
    await this.db.$executeRawUnsafe(
      `UPDATE webhook_deliveries SET status = $2, last_status = $3, last_error = $4,
         next_attempt_at = now() + ($5::int * interval '1 millisecond') WHERE id = $1`,
      id,
      outcome.giveUp ? 'failed' : 'pending',
      outcome.status,
      outcome.error.slice(0, 1000),
      outcome.retryInMs,
    );
  }
}
