import { PaymentRequiredV2Schema } from '@x402/core/schemas';
import type { PaymentRequired } from '@x402/core/types';
import { ErrorEnvelope } from '@repo/errors';
import { MCP_PAYMENT_ERROR_META } from '@repo/x402-express';

/**
 * A paid tool's refusal of a payment as the x402 MCP transport carries it: a tool error whose
 * structured content (and JSON text) is the `PaymentRequired`, its `error` the reason's code, with
 * the error envelope in `_meta["x402-solana/error"]`.
 * @throws Error when `result` is not such a refusal
 */
export function paymentRefusalOf(result: unknown): {
  required: PaymentRequired;
  envelope: ErrorEnvelope & Record<string, unknown>;
} {
  const r = result as {
    isError?: boolean;
    structuredContent?: unknown;
    content: { type: string; text?: string }[];
    _meta?: Record<string, unknown>;
  };
  if (r.isError !== true) throw new Error(`not a tool error: ${JSON.stringify(result)}`);
  const required = PaymentRequiredV2Schema.parse(r.structuredContent) as PaymentRequired;
  expect(JSON.parse(r.content[0]?.text ?? 'null')).toEqual(r.structuredContent);
  const envelope = r._meta?.[MCP_PAYMENT_ERROR_META] as ErrorEnvelope & Record<string, unknown>;
  ErrorEnvelope.parse(envelope);
  return { required, envelope };
}
