// Verifying market-intel's completion webhooks on the receiving side (README, "Verifying webhooks"):
// the spec's x-service-signature and the Standard Webhooks headers, with one shared secret.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Webhook, WebhookVerificationError as StandardWebhookError } from 'standardwebhooks';
import type { JobRefund } from './jobs';

/**
 * The body of a completion webhook (services/market-intel/README.md, "Webhooks (market-intel)"):
 * `{ jobId, status: "completed", result }` or `{ jobId, status: "failed", result: null, error }`.
 */
export interface JobWebhookPayload {
  /** The job that ended. */
  jobId: string;
  /** Its terminal state. */
  status: 'completed' | 'failed';
  /** The result of a completed job; `null` for a failed one. */
  result: Record<string, unknown> | null;
  /** Why a failed job failed (`"<code>: <message> (step <n>)"`). */
  error?: string | null;
  /** Present when the service adds it; see the job endpoint for the refund. */
  refund?: JobRefund | null;
}

/** Options of {@link verifyWebhook}. */
export interface VerifyWebhookOptions {
  /**
   * The service's `WEBHOOK_SECRET`, as it is: its UTF-8 bytes key both signatures (never base64-decoded,
   * even when it starts with `whsec_`, as the service does).
   */
  secret: string;
  /** The request's headers (Node's `IncomingHttpHeaders`, a fetch `Headers`, or a plain record). */
  headers: Headers | Record<string, string | string[] | undefined>;
  /** The raw body exactly as received (not re-serialised JSON). */
  body: string | Uint8Array;
  /**
   * Also require and check the Standard Webhooks headers (`webhook-id`, `webhook-timestamp` within 5
   * minutes of now, `webhook-signature`); default true. Set false only for a sender that signs with
   * `x-service-signature` alone, as the spec's minimum: such a delivery can be replayed.
   */
  standardWebhooks?: boolean;
}

/** The delivery is not authentic: a signature is missing or wrong, or the timestamp is too old or new. */
export class WebhookVerificationError extends Error {
  /** `missing_secret`, `missing_signature`, `bad_signature`, `bad_standard_signature` or `invalid_body`. */
  readonly code: string;

  /**
   * @param code stable code
   * @param message explanation
   */
  constructor(code: string, message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
    this.code = code;
  }
}

/**
 * Verifies a completion webhook of market-intel (services/market-intel/README.md, "Webhooks
 * (market-intel)"; spec "Events") and returns its body: `x-service-signature` must be the lowercase
 * hex HMAC-SHA256 of the raw body keyed with the secret's bytes (compared in constant time), and, unless
 * `standardWebhooks` is false, `webhook-signature` must be a valid Standard Webhooks signature of
 * `<webhook-id>.<webhook-timestamp>.<body>` with a timestamp within 5 minutes (checked with the
 * `standardwebhooks` package). Deduplicate deliveries by `webhook-id`: it is the same on every retry.
 *
 * @returns the parsed body
 * @throws WebhookVerificationError a signature is missing or wrong, the timestamp is out of tolerance,
 *   or the body is not a webhook body
 */
export function verifyWebhook(options: VerifyWebhookOptions): JobWebhookPayload {
  const key = secretBytes(options.secret);
  const body =
    typeof options.body === 'string' ? Buffer.from(options.body, 'utf8') : Buffer.from(options.body);
  const header = (name: string): string | undefined => headerOf(options.headers, name);

  const given = header('x-service-signature');
  if (!given) throw new WebhookVerificationError('missing_signature', 'no x-service-signature header');
  const expected = createHmac('sha256', key).update(body).digest();
  const givenBytes = /^[0-9a-f]{64}$/.test(given) ? Buffer.from(given, 'hex') : undefined;
  if (!givenBytes || !timingSafeEqual(givenBytes, expected))
    throw new WebhookVerificationError('bad_signature', 'x-service-signature does not match the body');

  const text = body.toString('utf8');
  if (options.standardWebhooks !== false) {
    const id = header('webhook-id');
    const timestamp = header('webhook-timestamp');
    const signature = header('webhook-signature');
    if (!id || !timestamp || !signature)
      throw new WebhookVerificationError(
        'missing_signature',
        'webhook-id, webhook-timestamp and webhook-signature are required',
      );
    try {
      new Webhook(key, { format: 'raw' }).verify(text, {
        'webhook-id': id,
        'webhook-timestamp': timestamp,
        'webhook-signature': signature,
      });
    } catch (error) {
      const reason = error instanceof StandardWebhookError ? error.message : 'invalid signature';
      throw new WebhookVerificationError(
        'bad_standard_signature',
        `Standard Webhooks check failed: ${reason}`,
      );
    }
  }

  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new WebhookVerificationError('invalid_body', 'the body is not JSON');
  }
  if (
    typeof parsed !== 'object' ||
    parsed === null ||
    typeof (parsed as { jobId?: unknown }).jobId !== 'string' ||
    !['completed', 'failed'].includes((parsed as { status?: unknown }).status as string)
  )
    throw new WebhookVerificationError('invalid_body', 'the body is not { jobId, status, result }');
  return parsed as JobWebhookPayload;
}

/** The HMAC key: the secret's UTF-8 bytes. */
function secretBytes(secret: string): Buffer {
  if (secret === '') throw new WebhookVerificationError('missing_secret', 'the webhook secret is empty');
  return Buffer.from(secret, 'utf8');
}

function headerOf(headers: VerifyWebhookOptions['headers'], name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  const record = headers as Record<string, string | string[] | undefined>;
  const value = record[name] ?? Object.entries(record).find(([k]) => k.toLowerCase() === name)?.[1];
  return Array.isArray(value) ? value[0] : value;
}
