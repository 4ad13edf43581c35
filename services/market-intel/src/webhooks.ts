import { createHmac } from 'node:crypto';
import { createGuardedDispatcher, findSsrfBlockedError, type SsrfPolicy } from '@repo/ssrf-guard';
import type { QueueLogger } from '@repo/queue';
import { request, type Dispatcher } from 'undici';
import type { Db } from './data/prisma';

/**
 * The `x-service-signature` of a webhook body (market-intel spec, "Events"): lowercase hex of
 * HMAC-SHA256 over the exact bytes sent, keyed with the shared secret.
 * @param secret the signing secret (`WEBHOOK_SECRET`)
 * @param rawBody the request body as sent
 */
export function signWebhookBody(secret: string, rawBody: string | Buffer): string {
  return createHmac('sha256', secret).update(rawBody).digest('hex');
}

/** Options of {@link WebhookDispatcher}. */
export interface WebhookOptions {
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
}

interface DeliveryRow {
  id: bigint;
  job_id: string;
  url: string;
  body: string;
  attempts: number;
}

const MAX_DELAY_MS = 3_600_000;

/**
 * Delivers completion webhooks (table `webhook_deliveries`): a signed POST of `{ jobId, status,
 * result }` (+ `error` for failed jobs) with `x-service-signature`, retried with exponential backoff
 * on any non-2xx answer or network error; addresses are checked against SSRF at connect time (DNS
 * rebinding included). Deliveries are claimed with `FOR UPDATE SKIP LOCKED`, so replicas share them.
 */
export class WebhookDispatcher {
  private readonly dispatcher: Dispatcher;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = true;
  private again = false;

  constructor(
    private readonly db: Db,
    private readonly options: WebhookOptions,
    private readonly logger: QueueLogger,
  ) {
    this.dispatcher = createGuardedDispatcher(options.policy, { connectTimeoutMs: options.timeoutMs });
  }

  /** Starts polling for due deliveries. */
  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Runs a delivery pass soon (a job just reached a terminal state). */
  kick(): void {
    if (this.stopped) return;
    if (this.running) this.again = true;
    else this.schedule(0);
  }

  /** Stops polling, waits for the pass in progress and closes the connection pool. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
    await this.dispatcher.close();
  }

  /** Delivers every due webhook once; returns how many were attempted. */
  async deliverDue(): Promise<number> {
    const rows = await this.db.$queryRawUnsafe<DeliveryRow[]>(
      `UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = now() + ($1::int * interval '1 millisecond')
       WHERE id IN (SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= now()
                    ORDER BY next_attempt_at LIMIT 20 FOR UPDATE SKIP LOCKED)
       RETURNING id, job_id, url, body, attempts`,
      this.options.timeoutMs * 3,
    );
    await Promise.all(rows.map((row) => this.deliver(row)));
    return rows.length;
  }

  private schedule(delayMs: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = (async () => {
        do {
          this.again = false;
          while ((await this.deliverDue()) > 0) {
            // keep going while deliveries were due
          }
        } while (this.again && !this.stopped);
      })()
        .catch((err: unknown) => this.logger.warn({ err: String(err) }, 'webhook pass failed'))
        .finally(() => {
          this.running = null;
          if (!this.stopped) this.schedule(this.options.pollIntervalMs);
        });
    }, delayMs);
  }

  private async deliver(row: DeliveryRow): Promise<void> {
    let status: number | null = null;
    let error: string | null = null;
    let permanent = false;
    try {
      const response = await request(row.url, {
        method: 'POST',
        body: row.body,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'market-intel-webhooks/1',
          'x-service-signature': signWebhookBody(this.options.secret, row.body),
          'x-webhook-attempt': String(row.attempts),
        },
        dispatcher: this.dispatcher,
        headersTimeout: this.options.timeoutMs,
        bodyTimeout: this.options.timeoutMs,
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
      await this.db.$executeRawUnsafe(
        `UPDATE webhook_deliveries SET status = 'delivered', delivered_at = now(), last_status = $2, last_error = NULL WHERE id = $1`,
        row.id,
        status,
      );
      this.logger.info({ jobId: row.job_id, attempts: row.attempts }, 'webhook delivered');
      return;
    }
    const giveUp = permanent || row.attempts >= this.options.maxAttempts;
    const delay = Math.min(MAX_DELAY_MS, this.options.retryBaseMs * 2 ** (row.attempts - 1));
    await this.db.$executeRawUnsafe(
      `UPDATE webhook_deliveries SET status = $2, last_status = $3, last_error = $4,
         next_attempt_at = now() + ($5::int * interval '1 millisecond') WHERE id = $1`,
      row.id,
      giveUp ? 'failed' : 'pending',
      status,
      error.slice(0, 1000),
      delay,
    );
    this.logger.warn({ jobId: row.job_id, attempts: row.attempts, error, giveUp }, 'webhook delivery failed');
  }
}
