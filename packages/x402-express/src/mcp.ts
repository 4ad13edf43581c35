import type { IncomingHttpHeaders } from 'node:http';
import {
  encodeBase64Json,
  PAYMENT_HEADER,
  PAYMENT_REQUIRED_HEADER,
  PAYMENT_RESPONSE_HEADER,
  PAYMENT_SIGNATURE_HEADER,
  PAYMENT_V2_RESPONSE_HEADER,
} from '@repo/x402-core';
import { SIGN_IN_HEADER } from './sign-in';

/** `_meta` key of a `tools/call` request carrying the `PaymentPayload` (x402 MCP transport). */
export const MCP_PAYMENT_META = 'x402/payment';
/**
 * `_meta` key of a `tools/call` request carrying a sign-in-with-x proof (docs/payments.md, "Signing in
 * instead of paying again", its part on MCP): our extension, as the x402 MCP transport and the
 * `sign-in-with-x` extension name no key for it; the analogue of {@link MCP_PAYMENT_META} for the
 * `SIGN-IN-WITH-X` HTTP header. Its value is the proof object (the extension's `SIWxPayload`), or the
 * header's base64 JSON as a string.
 */
export const MCP_SIGN_IN_META = 'x402/sign-in-with-x';
/** `_meta` key of a paid tool result carrying the settlement (x402 MCP transport). */
export const MCP_PAYMENT_RESPONSE_META = 'x402/payment-response';
/**
 * `_meta` key of a payment-required tool result carrying the v1 `Error402` body (push mode: the agent
 * sends the transfer itself), when the structured content is the v2 `PaymentRequired`.
 */
export const MCP_PUSH_PAYMENT_REQUIRED_META = 'x402-solana/push-payment-required';

/**
 * `_meta` key of a payment refusal's tool result carrying the error envelope (`{ error, code,
 * details?, requestId }`) of an answer other than a 402 (a `payment_reused` 400, a 409, 429 or 503),
 * whose structured content is the `PaymentRequired`.
 */
export const MCP_PAYMENT_ERROR_META = 'x402-solana/error';

/** The `error` of a payment-required result when the call carried no payment. */
export const MCP_PAYMENT_MISSING =
  'Payment required: pay one of accepts, then call the tool again with the PaymentPayload in _meta["x402/payment"]';

/**
 * The HTTP payment header of an MCP payment (README, "MCP: the x402 MCP transport"): `_meta["x402/payment"]`
 * holds the `PaymentPayload` object; a v2 payload goes into `PAYMENT-SIGNATURE`, a v1 (push mode)
 * into `X-PAYMENT`, both as base64 JSON, exactly as the official HTTP clients send them. A string is
 * taken as the header value itself; any other value goes into `X-PAYMENT` as base64 JSON too, where
 * the payment gate refuses it as `invalid_payload` with the `PaymentRequired`, as over HTTP. No
 * payment, no header.
 * A sign-in proof in `_meta["x402/sign-in-with-x"]` ({@link MCP_SIGN_IN_META}) goes into
 * `SIGN-IN-WITH-X` beside it.
 * @param meta the `_meta` of the `tools/call` request
 * @returns the request headers to add
 */
export function mcpPaymentHeaders(meta: Record<string, unknown>): Record<string, string> {
  const payment = meta[MCP_PAYMENT_META];
  const signIn = mcpSignInHeaders(meta);
  if (payment === undefined || payment === null) return signIn;
  if (typeof payment === 'string') return { ...signIn, [PAYMENT_HEADER]: payment };
  const version =
    typeof payment === 'object' && !Array.isArray(payment)
      ? (payment as { x402Version?: unknown }).x402Version
      : undefined;
  return {
    ...signIn,
    [version === 2 ? PAYMENT_SIGNATURE_HEADER : PAYMENT_HEADER]: encodeBase64Json(payment),
  };
}

/**
 * The `SIGN-IN-WITH-X` header of `_meta["x402/sign-in-with-x"]` ({@link MCP_SIGN_IN_META}): a string
 * of header characters as it is, anything else as base64 JSON (what is not a proof is then refused
 * by the sign-in check as `invalid_siwx_header`, a 402, as over HTTP). No proof, no header.
 */
function mcpSignInHeaders(meta: Record<string, unknown>): Record<string, string> {
  const proof = meta[MCP_SIGN_IN_META];
  if (proof === undefined || proof === null) return {};
  const text = typeof proof === 'string' && HEADER_VALUE.test(proof);
  return { [SIGN_IN_HEADER]: text ? proof : encodeBase64Json(proof) };
}

/** A value an HTTP header can carry as it is (visible ASCII). */
const HEADER_VALUE = /^[\x21-\x7e]+$/;

/** The JSON of a base64 JSON header, or `undefined` when absent or not such. */
function decodedHeader(headers: IncomingHttpHeaders, name: string): Record<string, unknown> | undefined {
  const value = headers[name];
  if (typeof value !== 'string') return undefined;
  try {
    const decoded = JSON.parse(Buffer.from(value, 'base64').toString('utf8')) as unknown;
    return typeof decoded === 'object' && decoded !== null ? (decoded as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** `value` when it is a plain object, else an empty one. */
function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

/** A tool answer in the shape `McpToolAnswer` of `@repo/service-kit` has. */
export interface McpPaidAnswer {
  structuredContent?: Record<string, unknown>;
  /** The JSON text of an error that is not a payment request (the error envelope). */
  text?: string;
  meta?: Record<string, unknown>;
  isError?: boolean;
}

/**
 * The MCP tool result of a paid HTTP answer (README, "MCP: the x402 MCP transport"):
 * - 402: a tool error whose structured content is the `PaymentRequired` the official clients read,
 *   the v2 one of the `PAYMENT-REQUIRED` header when the service offers the official scheme (the v1
 *   `Error402` body, push mode, then rides in `_meta["x402-solana/push-payment-required"]`), else the
 *   v1 body itself;
 * - another refusal of the payment (a 400, 409, 429 or 503 that carries `PAYMENT-REQUIRED`): a tool
 *   error whose structured content is that `PaymentRequired` (its `error` the reason's code, e.g.
 *   `payment_reused`), the error envelope in `_meta["x402-solana/error"]`;
 * - with either, a failed or pending settlement's `PAYMENT-RESPONSE` (`success: false`) in
 *   `_meta["x402/payment-response"]`;
 * - 2xx (or a status in `resultStatuses`): the body as structured content, with
 *   `_meta["x402/payment-response"]` = the decoded `PAYMENT-RESPONSE` (else `X-PAYMENT-RESPONSE`) when
 *   the answer was paid;
 * - anything else: a tool error whose text is the body's JSON (the error envelope), without structured
 *   content, as every other tool error.
 * @param answer the HTTP answer (`body` parsed JSON)
 * @param resultStatuses non-2xx statuses that are the tool's result (a health report's 503)
 * @param paymentSent whether the call carried `_meta["x402/payment"]`; without one, a 402's `error`
 *   (which names the HTTP header) becomes {@link MCP_PAYMENT_MISSING}
 * @param extensions entries that replace the HTTP route's in the v2 `PaymentRequired`'s `extensions`:
 *   the tool's own MCP `bazaar` declaration (`mcpBazaarExtensions`; docs/payments.md, "Discovery")
 */
export function mcpResultOfPaidAnswer(
  answer: { status: number; headers: IncomingHttpHeaders; body: unknown },
  resultStatuses: readonly number[] = [],
  paymentSent = true,
  extensions?: Record<string, unknown>,
): McpPaidAnswer {
  const body =
    typeof answer.body === 'object' && answer.body !== null && !Array.isArray(answer.body)
      ? (answer.body as Record<string, unknown>)
      : { value: answer.body };
  const header = decodedHeader(answer.headers, PAYMENT_REQUIRED_HEADER);
  const v2 =
    header && extensions
      ? { ...header, extensions: { ...asRecord(header.extensions), ...extensions } }
      : header;
  const failed = decodedHeader(answer.headers, PAYMENT_V2_RESPONSE_HEADER);
  const settlement = failed?.success === false ? { [MCP_PAYMENT_RESPONSE_META]: failed } : {};
  if (answer.status === 402) {
    // The HTTP reason names the HTTP header; over MCP the payment goes elsewhere.
    const reason = paymentSent ? {} : { error: MCP_PAYMENT_MISSING };
    return v2
      ? {
          structuredContent: { ...v2, ...reason },
          isError: true,
          meta: { [MCP_PUSH_PAYMENT_REQUIRED_META]: body, ...settlement },
        }
      : { structuredContent: { ...body, ...reason }, isError: true };
  }
  if (v2 && answer.status >= 400) {
    return {
      structuredContent: v2,
      isError: true,
      meta: { [MCP_PAYMENT_ERROR_META]: body, ...settlement },
    };
  }
  if ((answer.status >= 200 && answer.status < 300) || resultStatuses.includes(answer.status)) {
    const settlement =
      decodedHeader(answer.headers, PAYMENT_V2_RESPONSE_HEADER) ??
      decodedHeader(answer.headers, PAYMENT_RESPONSE_HEADER);
    return {
      structuredContent: body,
      ...(settlement ? { meta: { [MCP_PAYMENT_RESPONSE_META]: settlement } } : {}),
    };
  }
  return { text: JSON.stringify(answer.body), isError: true };
}
