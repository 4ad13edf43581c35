import { createHash, createHmac } from 'node:crypto';
import {
  createWebhookSender,
  releaseOnStop,
  type Logger,
  type Loop,
  type WebhookSenderOptions,
} from '@repo/service-kit';
import type { Db } from '../../data/prisma';
import { workerLoop, type WorkerLoopOptions } from './worker-loop';

/**
 * The `x-service-signature` of a webhook body (README, "Webhooks (market-intel)"): lowercase hex of
 * HMAC-SHA256 over the exact bytes sent, keyed with the shared secret.
 * @param secret the signing secret (`WEBHOOK_SECRET`); the HMAC key is its UTF-8 bytes
 * @param rawBody the request body as sent
 * @returns 64 lowercase hex characters
 */
export function signWebhookBody(secret: string, rawBody: string | Buffer): string {
  return createHmac('sha256', secret).update(rawBody).digest('hex');
}

/**
 * The `webhook-id` of a delivery (README, "Webhooks (market-intel)"): `msg_` + 32 base64url
 * characters of SHA-256 over `<jobId>:<status>`. The same for every attempt of one job's terminal
 * state, so a receiver can deduplicate retries; hashed so that the job id, a capability token, does
 * not travel in a header that proxies and access logs record.
 * @param jobId the job the delivery reports on
 * @param status the terminal state it reports (`completed` or `failed`)
 */
export function webhookMessageId(jobId: string, status: string): string {
  const digest = createHash('sha256').update(`${jobId}:${status}`).digest('base64url');
  return `msg_${digest.slice(0, 32)}`;
}

/** The terminal state a stored body reports; every body is written by `JobRepository`, so this only guards. */
function statusOf(body: string): string {
  try {
    const parsed: unknown = JSON.parse(body);
    if (
      typeof parsed === 'object' &&
      parsed !== null &&
      'status' in parsed &&
      typeof parsed.status === 'string'
    )
      return parsed.status;
  } catch {
    // not JSON: still deliverable, under an id that stays stable
  }
  return 'unknown';
}

/** Options of {@link createWebhookDispatcher}. */
export interface WebhookOptions
  extends
    WorkerLoopOptions,
    Pick<WebhookSenderOptions, 'policy' | 'timeoutMs' | 'maxAttempts' | 'retryBaseMs' | 'lookup'> {
  /**
   * `WEBHOOK_SECRET`: keys both signatures, `x-service-signature` ({@link signWebhookBody}) and the
   * Standard Webhooks one, whose key is the secret's UTF-8 bytes (for the printable-ASCII secrets the
   * config accepts, `new Webhook('whsec_' + base64(secret))` on the receiving side).
   */
  secret: string;
  /** How often due deliveries are looked for, in milliseconds. */
  pollIntervalMs: number;
}

interface DeliveryRow {
  id: bigint;
  job_id: string;
  url: string;
  body: string;
  attempts: number;
}

/** The webhook dispatcher: the `webhook-dispatcher` loop, whose round is one {@link WebhookDispatcher.deliverDue}. */
export interface WebhookDispatcher extends Loop {
  /** Delivers every due webhook once; returns how many were attempted. */
  deliverDue(): Promise<number>;
}

/**
 * Delivers completion webhooks (table `webhook_deliveries`; README, "Webhooks (market-intel)"): a
 * signed POST of `{ jobId, status, result }` (+ `error` for failed jobs) with `x-service-signature`
 * and the Standard Webhooks headers (`webhook-id` stable across retries, `webhook-timestamp` and
 * `webhook-signature` new per attempt), retried with exponential backoff (`retryBaseMs` doubling per
 * attempt, at most one hour) on any non-2xx answer or network error; addresses are checked against
 * SSRF at connect time (DNS rebinding included). The attempts are `createWebhookSender`'s of
 * `@repo/service-kit`, shared with signal-feedback. Deliveries are
 * claimed with `FOR UPDATE SKIP LOCKED`, so replicas share them. Its `stop` also closes the
 * connection pool.
 */
export function createWebhookDispatcher(db: Db, options: WebhookOptions, logger: Logger): WebhookDispatcher {
  const sender = createWebhookSender({
    policy: options.policy,
    timeoutMs: options.timeoutMs,
    maxAttempts: options.maxAttempts,
    retryBaseMs: options.retryBaseMs,
    userAgent: 'market-intel-webhooks/1',
    ...(options.lookup ? { lookup: options.lookup } : {}),
  });
  const signingKey = Buffer.from(options.secret, 'utf8');

  const deliverDue = async (): Promise<number> => {
    // "Due" at the column's millisecond precision: a delivery stored just now may be rounded up.
    const rows = await db.$queryRawUnsafe<DeliveryRow[]>(
      `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = now() + ($1::int * interval '1 millisecond')
       WHERE id IN (SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= now()::timestamptz(3)
                    ORDER BY next_attempt_at LIMIT 20 FOR UPDATE SKIP LOCKED)
       RETURNING id, job_id, url, body, attempts`,
      options.timeoutMs * 3,
    );
    await Promise.all(rows.map((row) => deliver(row)));
    return rows.length;
  };

  const deliver = async (row: DeliveryRow): Promise<void> => {
    const outcome = await sender.send({
      url: row.url,
      body: row.body,
      messageId: webhookMessageId(row.job_id, statusOf(row.body)),
      secret: signingKey,
      attempt: row.attempts,
      headers: { 'x-service-signature': signWebhookBody(options.secret, row.body) },
    });
    if (outcome.delivered) {
      await db.$executeRawUnsafe(
        `UPDATE webhook_deliveries SET status = 'delivered', delivered_at = now(), last_status = $2, last_error = NULL WHERE id = $1`,
        row.id,
        outcome.status,
      );
      logger.info({ jobId: row.job_id, attempts: row.attempts }, 'webhook delivered');
      return;
    }
    const { status, error, giveUp, retryInMs } = outcome;
    await db.$executeRawUnsafe(
      `UPDATE webhook_deliveries SET status = $2, last_status = $3, last_error = $4,
         next_attempt_at = now() + ($5::int * interval '1 millisecond') WHERE id = $1`,
      row.id,
      giveUp ? 'failed' : 'pending',
      status,
      error.slice(0, 1000),
      retryInMs,
    );
    logger.warn({ jobId: row.job_id, attempts: row.attempts, error, giveUp }, 'webhook delivery failed');
  };

  const round = async (): Promise<boolean> => {
    const attempted = await deliverDue();
    return attempted > 0;
  };
  const loop = workerLoop(
    'webhook-dispatcher',
    round,
    { intervalMs: options.pollIntervalMs },
    options,
    logger,
  );

  return { ...releaseOnStop(loop, () => sender.close()), deliverDue };
}
