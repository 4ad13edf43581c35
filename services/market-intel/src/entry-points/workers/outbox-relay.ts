import type { Broker } from '@repo/queue';
import type { Logger, LoopMetrics } from '@repo/service-kit';
import type { Db } from '../../data/prisma';
import { LoopWorker } from './restartable-loop';

interface OutboxRow {
  id: bigint;
  exchange: string;
  routing_key: string;
  message_id: string;
  type: string;
  body: unknown;
}

/** Options of {@link OutboxRelay}. */
export interface OutboxRelayOptions {
  /** How often the relay sweeps for rows nobody published (crash after commit), in milliseconds. */
  sweepIntervalMs: number;
  /** How long a claimed row stays invisible to other relays while it is being published, in milliseconds. */
  leaseMs: number;
  /** Rows per sweep. */
  batchSize: number;
  /** Series the sweep loop reports into (`background_loop_*`). */
  loopMetrics?: LoopMetrics;
}

/**
 * Publishes the transactional outbox (a job message is published
 * only once its row is committed, and never a row without a message). The request that committed a
 * row publishes it at once ({@link OutboxRelay.publishNow}); a periodic sweep publishes what a crash
 * or a broker outage left behind. Rows are claimed with a lease (`FOR UPDATE SKIP LOCKED`), so
 * replicas share the work; a row is deleted only after the broker confirmed it, so delivery is
 * at least once and consumers deduplicate by `messageId`.
 */
export class OutboxRelay extends LoopWorker {
  constructor(
    private readonly db: Db,
    private readonly broker: Broker,
    private readonly logger: Logger,
    private readonly options: OutboxRelayOptions = { sweepIntervalMs: 2000, leaseMs: 30_000, batchSize: 100 },
  ) {
    super({
      name: 'outbox-sweep',
      intervalMs: options.sweepIntervalMs,
      round: () => this.sweep(),
      logger,
      ...(options.loopMetrics ? { metrics: options.loopMetrics } : {}),
    });
  }

  /**
   * Publishes the given rows now (after their transaction committed). Never rejects: a failure is
   * logged and the rows are left to the sweep.
   */
  async publishNow(ids: readonly bigint[]): Promise<void> {
    if (ids.length === 0) return;
    try {
      const rows = await this.claim('id = ANY($2::bigint[])', [ids.map(String)]);
      await this.publishRows(rows);
    } catch (err) {
      this.logger.warn({ err: String(err) }, 'outbox publish failed; the sweep will retry');
    }
  }

  /** Publishes every due row (one batch at a time) until none is left. */
  async sweep(): Promise<void> {
    for (;;) {
      const rows = await this.claim('available_at <= now()', []);
      if (rows.length === 0) return;
      await this.publishRows(rows);
      if (rows.length < this.options.batchSize) return;
    }
  }

  /** Rows still waiting to be published (for metrics and tests). */
  async pending(): Promise<number> {
    const rows = await this.db.$queryRawUnsafe<{ n: bigint }[]>('SELECT count(*) AS n FROM outbox_messages');
    return Number(rows[0]?.n ?? 0);
  }

  private async claim(where: string, params: unknown[]): Promise<OutboxRow[]> {
    return this.db.$queryRawUnsafe<OutboxRow[]>(
      `UPDATE outbox_messages SET available_at = now() + ($1::int * interval '1 millisecond'), attempts = attempts + 1
       WHERE id IN (SELECT id FROM outbox_messages WHERE ${where} ORDER BY id LIMIT ${this.options.batchSize} FOR UPDATE SKIP LOCKED)
       RETURNING id, exchange, routing_key, message_id, type, body`,
      this.options.leaseMs,
      ...params,
    );
  }

  private async publishRows(rows: OutboxRow[]): Promise<void> {
    const published: bigint[] = [];
    await Promise.all(
      rows.map(async (row) => {
        try {
          await this.broker.publish(row.exchange, row.routing_key, row.body, {
            messageId: row.message_id,
            type: row.type,
          });
          published.push(row.id);
        } catch (err) {
          this.logger.warn(
            { err: String(err), messageId: row.message_id },
            'outbox publish failed; the sweep retries it',
          );
        }
      }),
    );
    if (published.length > 0) {
      await this.db.$executeRawUnsafe(
        'DELETE FROM outbox_messages WHERE id = ANY($1::bigint[])',
        published.map(String),
      );
    }
  }
}
