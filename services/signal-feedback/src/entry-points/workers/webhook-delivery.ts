import {
  createLoop,
  createWebhookSender,
  releaseOnStop,
  type Logger,
  type Loop,
  type LoopMetrics,
  type WebhookAttemptOutcome,
  type WebhookSenderOptions,
} from '@repo/service-kit';
import type { ClaimedDelivery, WebhookRepository } from '../../data/webhooks';

/** Options of {@link webhookDeliveryLoop}. */
export interface WebhookDeliveryOptions extends Pick<
  WebhookSenderOptions,
  'policy' | 'timeoutMs' | 'maxAttempts' | 'retryBaseMs' | 'lookup'
> {
  webhooks: Pick<WebhookRepository, 'claimDue' | 'delivered' | 'attemptFailed'>;
  /** How often due deliveries are looked for, ms (`WEBHOOK_POLL_INTERVAL_MS`). */
  pollIntervalMs: number;
  /** Told how each attempt ended (metrics). */
  onAttempt?: (outcome: 'delivered' | 'retry' | 'failed') => void;
  logger: Logger;
  metrics?: LoopMetrics;
}

/** The delivery worker: a {@link Loop} whose round is one {@link WebhookDelivery.deliverDue}. */
export interface WebhookDelivery extends Loop {
  /** Attempts every due delivery once (at most 20 a call); returns how many were attempted. */
  deliverDue(): Promise<number>;
}

const BATCH = 20;

/** A delivery whose product has no secret any more cannot be signed: it fails as given up, unsent. */
const NO_SECRET: WebhookAttemptOutcome = {
  delivered: false,
  status: null,
  error: 'the product has no webhook secret any more',
  giveUp: true,
  retryInMs: 0,
};

/**
 * Delivers the webhook outbox (README, "Webhooks (signal-feedback)"): a POST of each queued body to
 * the URL stored with it, signed with the product's secret in the Standard Webhooks way
 * (`webhook-id` stable across retries, `webhook-timestamp` and `webhook-signature` new per attempt),
 * retried with exponential backoff (`retryBaseMs` doubling, at most one hour) on a non-2xx answer
 * (redirects are not followed), a network error or a timeout, for `maxAttempts` in all. Every
 * connection goes through the SSRF guard (DNS rebinding included); a refused address is given up at
 * once. The attempts are `createWebhookSender`'s of `@repo/service-kit`, shared with market-intel. Replicas share the outbox through `FOR UPDATE SKIP LOCKED`. `stop` also closes
 * the outbound connection pool.
 */
export function webhookDeliveryLoop(options: WebhookDeliveryOptions): WebhookDelivery {
  const sender = createWebhookSender({
    policy: options.policy,
    timeoutMs: options.timeoutMs,
    maxAttempts: options.maxAttempts,
    retryBaseMs: options.retryBaseMs,
    userAgent: 'signal-feedback-webhooks/1',
    ...(options.lookup ? { lookup: options.lookup } : {}),
  });
  const { webhooks, logger } = options;

  const deliver = async (row: ClaimedDelivery): Promise<void> => {
    const outcome =
      row.secret === null
        ? NO_SECRET
        : await sender.send({
            url: row.url,
            body: row.body,
            messageId: row.messageId,
            secret: row.secret,
            attempt: row.attempts,
          });
    if (outcome.delivered) {
      await webhooks.delivered(row.id, outcome.status);
      options.onAttempt?.('delivered');
      logger.info({ webhookId: row.messageId, attempts: row.attempts }, 'webhook delivered');
      return;
    }
    const { status, error, giveUp, retryInMs } = outcome;
    await webhooks.attemptFailed(row.id, { status, error, giveUp, retryInMs });
    options.onAttempt?.(giveUp ? 'failed' : 'retry');
    logger.warn(
      { webhookId: row.messageId, attempts: row.attempts, error, giveUp },
      'webhook delivery failed',
    );
  };

  const deliverDue = async (): Promise<number> => {
    // The claim outlives an attempt's three deadlines (connect, headers, body) before another replica may retry it.
    const rows = await webhooks.claimDue(BATCH, options.timeoutMs * 3);
    await Promise.all(rows.map((row) => deliver(row)));
    return rows.length;
  };

  const loop = createLoop({
    name: 'webhook-delivery',
    intervalMs: options.pollIntervalMs,
    logger,
    metrics: options.metrics,
    // A full batch means more may be due: the next round runs at once.
    round: async () => (await deliverDue()) === BATCH,
  });
  return { ...releaseOnStop(loop, () => sender.close()), deliverDue };
}
