import type { Broker } from '@repo/queue';
import type { Logger, Loop } from '@repo/service-kit';
import type { Db } from '../../data/prisma';
import { workerLoop, type WorkerLoopOptions } from './worker-loop';

interface OutboxRow {
  id: bigint;
  exchange: string;
  routing_key: string;
  message_id: string;
  type: string;
  body: unknown;
}

/** Options of {@link createOutboxRelay}. */
export interface OutboxRelayOptions extends WorkerLoopOptions {
  /** How often the relay sweeps for rows nobody published (crash after commit), in milliseconds. */
  sweepIntervalMs: number;
  /** How long a claimed row stays invisible to other relays while it is being published, in milliseconds. */
  leaseMs: number;
  /** Rows per sweep. */
  batchSize: number;
}

/** The outbox relay: the `outbox-sweep` loop plus the publishing its users call. */
export interface OutboxRelay extends Loop {
  /**
   * Publishes the given rows now (after their transaction committed). Never rejects: a failure is
   * logged and the rows are left to the sweep.
   */
  publishNow(ids: readonly bigint[]): Promise<void>;
  /** Publishes every due row (one batch at a time) until none is left. */
  sweep(): Promise<void>;
  /** Rows still waiting to be published (for metrics and tests). */
  pending(): Promise<number>;
}

/**
 * Publishes the transactional outbox (a job message is published
 * only once its row is committed, and never a row without a message). The request that committed a
 * row publishes it at once ({@link OutboxRelay.publishNow}); a periodic sweep (the `outbox-sweep`
 * loop) publishes what a crash or a broker outage left behind. Rows are claimed with a lease
 * (`FOR UPDATE SKIP LOCKED`), so replicas share the work; a row is deleted only after the broker
 * confirmed it, so delivery is at least once and consumers deduplicate by `messageId`.
 */
export function createOutboxRelay(
  db: Db,
  broker: Broker,
  logger: Logger,
  options: OutboxRelayOptions = { sweepIntervalMs: 2000, leaseMs: 30_000, batchSize: 100 },
): OutboxRelay {
  const claim = (where: string, params: unknown[]): Promise<OutboxRow[]> =>
    db.$queryRawUnsafe<OutboxRow[]>(
      `UPDATE outbox_messages SET available_at = now() + ($1::int * interval '1 millisecond'), attempts = attempts + 1
       WHERE id IN (SELECT id FROM outbox_messages WHERE ${where} ORDER BY id LIMIT ${options.batchSize} FOR UPDATE SKIP LOCKED)
       RETURNING id, exchange, routing_key, message_id, type, body`,
      options.leaseMs,
      ...params,
    );

  const publishRows = async (rows: OutboxRow[]): Promise<void> => {
    const published: bigint[] = [];
    await Promise.all(
      rows.map(async (row) => {
        try {
          await broker.publish(row.exchange, row.routing_key, row.body, {
            messageId: row.message_id,
            type: row.type,
          });
          published.push(row.id);
        } catch (err) {
          logger.warn(
            { err: String(err), messageId: row.message_id },
            'outbox publish failed; the sweep retries it',
          );
        }
      }),
    );
    if (published.length > 0) {
      await db.$executeRawUnsafe(
        'DELETE FROM outbox_messages WHERE id = ANY($1::bigint[])',
        published.map(String),
      );
    }
  };

  const sweep = async (): Promise<void> => {
    for (;;) {
      const rows = await claim('available_at <= now()', []);
      if (rows.length === 0) return;
      await publishRows(rows);
      if (rows.length < options.batchSize) return;
    }
  };

  const loop = workerLoop('outbox-sweep', sweep, { intervalMs: options.sweepIntervalMs }, options, logger);

  return {
    ...loop,
    async publishNow(ids) {
      if (ids.length === 0) return;
      try {
        const rows = await claim('id = ANY($2::bigint[])', [ids.map(String)]);
        await publishRows(rows);
      } catch (err) {
        logger.warn({ err: String(err) }, 'outbox publish failed; the sweep will retry');
      }
    },
    sweep,
    async pending() {
      const rows = await db.$queryRawUnsafe<{ n: bigint }[]>('SELECT count(*) AS n FROM outbox_messages');
      return Number(rows[0]?.n ?? 0);
    },
  };
}
