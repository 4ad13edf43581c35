import {
  createGuardedDispatcher,
  findSsrfBlockedError,
  type LookupFunction,
  type SsrfPolicy,
} from '@repo/ssrf-guard';
import { Webhook } from 'standardwebhooks';
import { request, type Dispatcher } from 'undici';
import { backoffDelay, type BackoffPolicy } from './loop';

/** The longest wait between two attempts of one delivery: one hour, in milliseconds. */
const MAX_RETRY_DELAY_MS = 3_600_000;

/** Options of {@link createWebhookSender}. */
export interface WebhookSenderOptions {
  /** Outbound address policy: loopback, private, link-local and metadata addresses are refused unless allowlisted. */
  policy: SsrfPolicy;
  /** Per attempt: the connect, headers and body deadline, in milliseconds. */
  timeoutMs: number;
  /** Attempts before a delivery is given up. */
  maxAttempts: number;
  /** Wait before the second attempt, in milliseconds; doubles after each failed one, at most one hour. */
  retryBaseMs: number;
  /** The `user-agent` of every attempt, e.g. `market-intel-webhooks/1`. */
  userAgent: string;
  /** Resolver instead of the system's, checked at every connection like it (tests). */
  lookup?: LookupFunction;
}

/** One attempt of one delivery. */
export interface WebhookAttempt {
  url: string;
  /** The exact body sent and signed (JSON). */
  body: string;
  /** The Standard Webhooks `webhook-id`: the same on every attempt of one delivery. */
  messageId: string;
  /**
   * The Standard Webhooks signing key: a `whsec_` secret (base64 of the key bytes) or the raw key
   * bytes.
   */
  secret: string | Uint8Array;
  /** This attempt's number, 1 for the first: sent as `x-webhook-attempt`; decides the give-up and the next wait. */
  attempt: number;
  /** Headers sent beside the Standard Webhooks ones (market-intel's `x-service-signature`). */
  headers?: Record<string, string>;
}

/**
 * How an attempt ended: delivered (a 2xx answer), or failed with the receiver's status (null without
 * an answer), a short reason, whether the delivery is given up (the address was refused, or this was
 * the last attempt) and the wait before the next attempt in milliseconds.
 */
export type WebhookAttemptOutcome =
  | { delivered: true; status: number }
  | { delivered: false; status: number | null; error: string; giveUp: boolean; retryInMs: number };

/** Sends webhook attempts; see {@link createWebhookSender}. */
export interface WebhookSender {
  /** Makes one attempt; never throws for a failed delivery (the outcome says why). */
  send(attempt: WebhookAttempt): Promise<WebhookAttemptOutcome>;
  /** Closes the outbound connection pool. */
  close(): Promise<void>;
}

/**
 * The outbound side of a webhook outbox (docs/architecture.md, "Runtime"): each attempt is a
 * POST of the body to a caller-chosen URL through the SSRF guard (checked at every connection, DNS
 * rebinding included; redirects are not followed), with a deadline of `timeoutMs` for connecting,
 * for the headers and for the body, signed the Standard Webhooks way (`webhook-id` stable across
 * attempts, `webhook-timestamp` in Unix seconds and `webhook-signature` new per attempt, so a
 * receiver's freshness window applies to each retry), with `content-type: application/json`, the
 * `user-agent` and `x-webhook-attempt`. A non-2xx answer (3xx included), a network error or a timeout
 * fails the attempt; the next waits `retryBaseMs` doubled per failed attempt, at most one hour
 * ({@link backoffDelay}, cockatiel's exponential backoff without jitter), and the delivery is given up
 * after `maxAttempts` attempts, or at once when the guard refused the address.
 */
export function createWebhookSender(options: WebhookSenderOptions): WebhookSender {
  const dispatcher: Dispatcher = createGuardedDispatcher(options.policy, {
    connectTimeoutMs: options.timeoutMs,
    ...(options.lookup ? { lookup: options.lookup } : {}),
  });
  const retry: BackoffPolicy = { initialDelayMs: options.retryBaseMs, maxDelayMs: MAX_RETRY_DELAY_MS };

  const send = async (a: WebhookAttempt): Promise<WebhookAttemptOutcome> => {
    let status: number | null = null;
    let error: string | null = null;
    let permanent = false;
    try {
      const timestamp = Math.floor(Date.now() / 1000);
      const signer =
        typeof a.secret === 'string' ? new Webhook(a.secret) : new Webhook(a.secret, { format: 'raw' });
      const response = await request(a.url, {
        method: 'POST',
        body: a.body,
        headers: {
          'content-type': 'application/json',
          'user-agent': options.userAgent,
          ...a.headers,
          'webhook-id': a.messageId,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signer.sign(a.messageId, new Date(timestamp * 1000), a.body),
          'x-webhook-attempt': String(a.attempt),
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
    if (error === null && status !== null) return { delivered: true, status };
    return {
      delivered: false,
      status,
      error: error ?? 'no answer',
      giveUp: permanent || a.attempt >= options.maxAttempts,
      retryInMs: backoffDelay(retry, a.attempt - 1),
    };
  };

  return { send, close: () => dispatcher.close() };
}
