import { createHash, randomBytes } from 'node:crypto';

/** The event types a product's webhook receives (README, "Webhooks (signal-feedback)"). */
export type WebhookEventType = 'regression_detected';

/**
 * A new signing secret in Standard Webhooks form (README, "Webhooks (signal-feedback)"): `whsec_` +
 * base64 of 32 random bytes (the HMAC-SHA256 key is those bytes).
 */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * The `webhook-id` of an event (README, "Webhooks (signal-feedback)"): `msg_` + 32 base64url characters
 * of SHA-256 over `<event type>:<subject id>`, so every attempt of one event carries the same id and a
 * receiver can act once per id.
 * @param type the event type
 * @param subjectId what the event is about (the deployment's id for `regression_detected`)
 */
export function webhookMessageId(type: WebhookEventType, subjectId: string): string {
  const digest = createHash('sha256').update(`${type}:${subjectId}`).digest('base64url');
  return `msg_${digest.slice(0, 32)}`;
}

/** Why a webhook URL is refused before anything is stored (README, "Webhooks (signal-feedback)"). */
export type WebhookUrlProblem = 'not_https' | 'credentials' | 'fragment';

/**
 * The checks of a webhook URL that need no DNS (README, "Webhooks (signal-feedback)"); the address
 * checks (loopback, private, link-local, metadata) follow with `checkUrl` of `@repo/ssrf-guard` and run
 * again at every connection.
 * @param url an absolute http(s) URL (the schema already checked its form and length)
 * @param production `NODE_ENV=production`: only `https:` is accepted
 * @returns the problem, or null when the URL may be stored
 */
export function webhookUrlProblem(url: string, production: boolean): WebhookUrlProblem | null {
  const parsed = new URL(url);
  if (production && parsed.protocol !== 'https:') return 'not_https';
  if (parsed.username !== '' || parsed.password !== '') return 'credentials';
  if (parsed.hash !== '') return 'fragment';
  return null;
}

/** The message of each {@link WebhookUrlProblem}, as the 400's `details.issues[].message`. */
export const WEBHOOK_URL_PROBLEMS: Record<WebhookUrlProblem, string> = {
  not_https: 'must use https in production',
  credentials: 'must not carry a user name or password',
  fragment: 'must not carry a #fragment',
};
