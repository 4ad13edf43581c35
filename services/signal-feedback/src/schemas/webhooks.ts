import { z } from 'zod';

/**
 * A Standard Webhooks signing secret: `whsec_` + base64 of 24 to 64 bytes (README, "Webhooks
 * (signal-feedback)").
 */
export const WebhookSecret = z
  .string()
  .regex(/^whsec_[A-Za-z0-9+/]+={0,2}$/, 'must be whsec_ followed by base64')
  .refine((s) => {
    const bytes = Buffer.from(s.slice('whsec_'.length), 'base64').length;
    return bytes >= 24 && bytes <= 64;
  }, 'must encode 24 to 64 bytes');

/** PUT /api/products/{id}/webhook body. */
export const SetWebhookBody = z.object({
  url: z
    .url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL' })
    .max(2048)
    .describe('where the events are POSTed; https in production, never a private or loopback address'),
  secret: WebhookSecret.optional().describe(
    'your own signing secret; omitted: the stored one is kept, or a new one is generated and returned once',
  ),
  rotate_secret: z
    .boolean()
    .optional()
    .describe('true: a new secret is generated and returned once (the old one stops signing at once)'),
});
/** A parsed {@link SetWebhookBody}. */
export type SetWebhookBody = z.infer<typeof SetWebhookBody>;

/** One delivery of a product's webhooks, as listed. */
export const WebhookDelivery = z.object({
  id: z.string().describe('the outbox row'),
  event_type: z.string(),
  webhook_id: z.string().describe('the `webhook-id` header: the same on every attempt'),
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.int(),
  last_status: z.int().nullable().describe("the receiver's last HTTP status; null when none came"),
  last_error: z.string().nullable(),
  created_at: z.iso.datetime(),
  delivered_at: z.iso.datetime().nullable(),
});

/** GET, PUT and DELETE /api/products/{id}/webhook answer. */
export const WebhookSettings = z.object({
  product_id: z.uuid(),
  url: z.string().nullable().describe('null: no webhooks are sent'),
  secret_set: z.boolean(),
  secret: z
    .string()
    .optional()
    .describe('only when this request generated it: shown this once, store it now'),
  deliveries: z.array(WebhookDelivery).describe('the latest deliveries, newest first (at most 20)'),
});
/** A {@link WebhookSettings}. */
export type WebhookSettings = z.infer<typeof WebhookSettings>;
