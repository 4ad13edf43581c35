import { createHash, createHmac } from 'node:crypto';
import {
  createGuardedDispatcher,
  findSsrfBlockedError,
  type LookupFunction,
  type SsrfPolicy,
} from '@repo/ssrf-guard';
import { backoffDelay, type Logger, type Loop } from '@repo/service-kit';
import { Webhook } from 'standardwebhooks';
import { request, type Dispatcher } from 'undici';
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

/**
 * The signature headers of one delivery attempt (README, "Webhooks (market-intel)"): the
 * `x-service-signature` and the Standard Webhooks trio.
 */
export interface WebhookSignatureHeaders {
  /** Lowercase hex HMAC-SHA256 of the body ({@link signWebhookBody}). */
  'x-service-signature': string;
  /** Stable per job and terminal state across retries ({@link webhookMessageId}). */
  'webhook-id': string;
  /** When this attempt was signed, in Unix seconds (decimal). */
  'webhook-timestamp': string;
  /** `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`. */
  'webhook-signature': string;
}

/**
 * Signs deliveries with the one configured secret, both ways (README, "Webhooks (market-intel)"). The
 * Standard Webhooks key is the secret's bytes, which for the printable-ASCII secrets the config
 * accepts equals `new Webhook(secret, { format: 'raw' })` and
 * `new Webhook('whsec_' + base64(secret))` on the receiving side.
 */
export class WebhookSigner {
  private readonly standard: Webhook;

  /** @param secret `WEBHOOK_SECRET` (printable ASCII, see `config.ts`) */
  constructor(private readonly secret: string) {
    this.standard = new Webhook(Buffer.from(secret, 'utf8'), { format: 'raw' });
  }

  /**
   * The headers of one attempt.
   * @param id the delivery's `webhook-id`
   * @param body the exact body sent
   * @param timestampSeconds when the attempt is made, in Unix seconds (an integer)
   */
  sign(id: string, body: string, timestampSeconds: number): WebhookSignatureHeaders {
    return {
      'x-service-signature': signWebhookBody(this.secret, body),
      'webhook-id': id,
      'webhook-timestamp': String(timestampSeconds),
      'webhook-signature': this.standard.sign(id, new Date(timestampSeconds * 1000), body),
    };
  }
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
export interface WebhookOptions extends WorkerLoopOptions {
  /** `WEBHOOK_SECRET`: keys both signatures ({@link WebhookSigner}). */
  secret: string;
  /** Outbound address policy: loopback, private, link-local and metadata addresses are refused unless allowlisted. */
  policy: SsrfPolicy;
  /** Per attempt: connect + response deadline, in milliseconds. */
  timeoutMs: number;
  /** Attempts before a delivery is given up (status `failed`). */
  maxAttempts: number;
  /** Delay before the second attempt, in milliseconds; doubles per attempt up to one hour. */
  retryBaseMs: number;
  /** How often due deliveries are looked for, in milliseconds. */
  pollIntervalMs: number;
  /** Resolver instead of the system's (`dns.lookup`), checked at every connection like it. */
  lookup?: LookupFunction;
}

interface DeliveryRow {
  id: bigint;
  job_id: string;
  url: string;
  body: string;
  attempts: number;
}

const MAX_DELAY_MS = 3_600_000;

/** The webhook dispatcher: the `webhook-dispatcher` loop, whose round is one {@link WebhookDispatcher.deliverDue}. */
export interface WebhookDispatcher extends Loop {
  /** Delivers every due webhook once; returns how many were attempted. */
  deliverDue(): Promise<number>;
}

/**
 * Delivers completion webhooks (table `webhook_deliveries`; README, "Webhooks (market-intel)"): a
 * signed POST of `{ jobId, status, result }` (+ `error` for failed jobs) with `x-service-signature`
 * and the Standard Webhooks headers (`webhook-id` stable across retries, `webhook-timestamp` and
 * `webhook-signature` new per attempt), retried with exponential backoff ({@link backoffDelay}:
 * `retryBaseMs` doubling per attempt, at most one hour) on any non-2xx answer or network error;
 * addresses are checked against SSRF at connect time (DNS rebinding included). Deliveries are
 * claimed with `FOR UPDATE SKIP LOCKED`, so replicas share them. Its `stop` also closes the
 * connection pool.
 */
export function createWebhookDispatcher(db: Db, options: WebhookOptions, logger: Logger): WebhookDispatcher {
  const dispatcher: Dispatcher = createGuardedDispatcher(options.policy, {
    connectTimeoutMs: options.timeoutMs,
    ...(options.lookup ? { lookup: options.lookup } : {}),
  });
  const signer = new WebhookSigner(options.secret);
  const retryBackoff = { initialDelayMs: options.retryBaseMs, maxDelayMs: MAX_DELAY_MS };

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
    let status: number | null = null;
    let error: string | null = null;
    let permanent = false;
    // Signed per attempt: a receiver's freshness window applies to each retry, not to the first attempt.
    const signature = signer.sign(
      webhookMessageId(row.job_id, statusOf(row.body)),
      row.body,
      Math.floor(Date.now() / 1000),
    );
    try {
      const response = await request(row.url, {
        method: 'POST',
        body: row.body,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'market-intel-webhooks/1',
          ...signature,
          'x-webhook-attempt': String(row.attempts),
        },
        dispatcher,
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
      });
      status = response.statusCode;
      await response.body.dump();
      if (status < 200 || status >= 300) error = `receiver answered ${status}`;
    } catch (err) {
      const blocked = findSsrfBlockedError(err);
      permanent = blocked !== undefined;
      error = blocked ? blocked.message : err instanceof Error ? err.message : String(err);
    }
    if (error === null) {
      await db.$executeRawUnsafe(
        `UPDATE webhook_deliveries SET status = 'delivered', delivered_at = now(), last_status = $2, last_error = NULL WHERE id = $1`,
        row.id,
        status,
      );
      logger.info({ jobId: row.job_id, attempts: row.attempts }, 'webhook delivered');
      return;
    }
    const giveUp = permanent || row.attempts >= options.maxAttempts;
    const delay = backoffDelay(retryBackoff, row.attempts - 1);
    await db.$executeRawUnsafe(
      `UPDATE webhook_deliveries SET status = $2, last_status = $3, last_error = $4,
         next_attempt_at = now() + ($5::int * interval '1 millisecond') WHERE id = $1`,
      row.id,
      giveUp ? 'failed' : 'pending',
      status,
      error.slice(0, 1000),
      delay,
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

  return {
    ...loop,
    async stop() {
      await loop.stop();
      await dispatcher.close();
    },
    deliverDue,
  };
}
