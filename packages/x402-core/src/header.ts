import { bs58 } from './deps';
import { AppError } from '@repo/errors';
import { PaymentPayload, PaymentResponse, X402Network } from '@repo/schemas';
import type { z } from 'zod';

/** Name of the request header carrying the payment proof. */
export const PAYMENT_HEADER = 'x-payment';
/** Name of the response header carrying the settlement result (base64 JSON {@link PaymentResponse}). */
export const PAYMENT_RESPONSE_HEADER = 'x-payment-response';

/** Largest accepted X-PAYMENT value, in characters (a valid one is about 200). */
const MAX_HEADER_LENGTH = 4096;

/**
 * Why a payment header was refused, in the x402 specification's error codes: `invalid_payload`
 * (not base64 or JSON, or not the payload's shape), `invalid_x402_version`, `unsupported_scheme`
 * (a scheme other than `exact`) and `invalid_network` (a network not offered, or not the request's).
 */
export type PaymentHeaderReason =
  'invalid_payload' | 'invalid_x402_version' | 'unsupported_scheme' | 'invalid_network';

function invalid(
  message: string,
  details?: Record<string, unknown>,
  header = 'X-PAYMENT',
  reason: PaymentHeaderReason = 'invalid_payload',
): AppError {
  return new AppError('invalid_payment_header', `Invalid ${header} header: ${message}`, {
    details: { reason, ...details },
  });
}

/**
 * Decodes a payment header's JSON: base64 of a JSON value, or the raw JSON (detected by a leading `{`).
 * @param value the header value
 * @param maxLength longest accepted value, in characters
 * @param header the header's name, for messages
 * @throws AppError `invalid_payment_header` (400, `details.reason: invalid_payload`): empty, too long,
 *   not base64, not JSON
 */
export function decodeHeaderJson(value: string, maxLength: number, header = 'X-PAYMENT'): unknown {
  const trimmed = value.trim();
  if (trimmed === '') throw invalid('the value is empty', undefined, header);
  if (trimmed.length > maxLength)
    throw invalid(`the value is longer than ${maxLength} characters`, undefined, header);
  let json: string;
  if (trimmed.startsWith('{')) {
    json = trimmed;
  } else {
    if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed))
      throw invalid('expected base64-encoded JSON or raw JSON', undefined, header);
    json = Buffer.from(trimmed, 'base64').toString('utf8');
  }
  try {
    return JSON.parse(json) as unknown;
  } catch {
    throw invalid('the decoded value is not JSON', undefined, header);
  }
}

/**
 * The AppError for a payment header that decoded but did not match `schema`: the first issue in the
 * message, all of them in `details.issues`, and `details.reason` `invalid_payload`.
 */
export function schemaMismatch(issues: readonly z.core.$ZodIssue[], header = 'X-PAYMENT'): AppError {
  const listed = issues.map((issue) => ({
    path: issue.path.map(String).join('.') || '(root)',
    message: issue.message,
  }));
  const first = listed[0];
  return invalid(first ? `${first.path}: ${first.message}` : 'schema mismatch', { issues: listed }, header);
}

/**
 * `invalid_payment_header` (400) with `message` about the `header` header, `details.reason` =
 * `reason` (default `invalid_payload`) and the other `details`.
 */
export function invalidPaymentHeader(
  message: string,
  details?: Record<string, unknown>,
  header = 'X-PAYMENT',
  reason: PaymentHeaderReason = 'invalid_payload',
): AppError {
  return invalid(message, details, header, reason);
}

/**
 * Refuses early, with the specification's own reason, what a payload's schema would only call
 * malformed: an `x402Version` this server does not speak, a scheme other than `exact`, a network
 * name it does not know.
 * @throws AppError `invalid_payment_header` with `details.reason` `invalid_x402_version`,
 *   `unsupported_scheme` or `invalid_network`
 */
export function checkEnvelope(
  raw: unknown,
  known: { versions: readonly unknown[]; networks: readonly string[] },
  header = 'X-PAYMENT',
): void {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return;
  const { x402Version, scheme, network } = raw as Record<string, unknown>;
  if (x402Version !== undefined && !known.versions.includes(x402Version))
    throw invalid(
      `x402Version ${JSON.stringify(x402Version).slice(0, 20)} is not supported (1 and 2 are)`,
      undefined,
      header,
      'invalid_x402_version',
    );
  if (typeof scheme === 'string' && scheme !== 'exact')
    throw invalid(
      `scheme "${scheme.slice(0, 40)}" is not offered (exact is)`,
      undefined,
      header,
      'unsupported_scheme',
    );
  if (typeof network === 'string' && !known.networks.includes(network))
    throw invalid(`network "${network.slice(0, 60)}" is not offered`, undefined, header, 'invalid_network');
}

/**
 * Parses an `X-PAYMENT` value (docs/payments.md, "Paying for data (x402)", step 3):
 * base64 of a JSON object, or the raw JSON (detected by a leading `{`), validated with zod:
 * `x402Version` 1, scheme `exact`, a known network, and `payload.txSignature` base58 decoding to exactly
 * 64 bytes.
 *
 * @param value the header value
 * @param expectedNetwork when given, the network the request is for (from `?network=`)
 * @returns the decoded payload
 * @throws AppError `invalid_payment_header` (400) with a message naming the problem: not base64/JSON,
 *   schema violation, signature not 64 bytes, or network different from `expectedNetwork`
 */
export function parsePaymentHeader(value: string, expectedNetwork?: X402Network): PaymentPayload {
  const raw = decodeHeaderJson(value, MAX_HEADER_LENGTH);
  checkEnvelope(raw, { versions: [1], networks: X402Network.options });
  const payload = pushPaymentOf(raw);
  if (expectedNetwork !== undefined && payload.network !== expectedNetwork) {
    throw invalid(
      `network is "${payload.network}" but this request is for "${expectedNetwork}"`,
      { expected: expectedNetwork, got: payload.network },
      'X-PAYMENT',
      'invalid_network',
    );
  }
  return payload;
}

/**
 * A decoded payment header's JSON as a v1 push payment: `x402Version` 1, scheme `exact`, a known
 * network and `payload.txSignature` base58 of exactly 64 bytes.
 * @param header the header's name, for messages
 * @throws AppError `invalid_payment_header` (400) naming the problem
 */
export function pushPaymentOf(raw: unknown, header = 'X-PAYMENT'): PaymentPayload {
  const parsed = PaymentPayload.safeParse(raw);
  if (!parsed.success) throw schemaMismatch(parsed.error.issues, header);
  const signature = parsed.data.payload.txSignature;
  if (signature.length > 90 || bs58.decode(signature).length !== 64) {
    throw invalid(
      'payload.txSignature must be a base58 transaction signature of 64 bytes',
      undefined,
      header,
    );
  }
  return parsed.data;
}

/**
 * Encodes an `X-PAYMENT` value as base64 JSON (the form clients send).
 *
 * @param network the network the transaction landed on
 * @param txSignature the base58 transaction signature
 */
export function encodePaymentHeader(network: X402Network, txSignature: string): string {
  const payload: PaymentPayload = { x402Version: 1, scheme: 'exact', network, payload: { txSignature } };
  return Buffer.from(JSON.stringify(payload), 'utf8').toString('base64');
}

/**
 * Encodes an `X-PAYMENT-RESPONSE` value: base64 JSON `{ success, transaction, network, payer }`
 * (docs/payments.md, "Paying for data (x402)", step 3).
 */
export function encodePaymentResponse(response: PaymentResponse): string {
  return Buffer.from(JSON.stringify(response), 'utf8').toString('base64');
}

/**
 * Decodes an `X-PAYMENT-RESPONSE` value.
 *
 * @throws Error when the value is not base64 JSON matching {@link PaymentResponse}
 */
export function decodePaymentResponse(value: string): PaymentResponse {
  const json: unknown = JSON.parse(Buffer.from(value.trim(), 'base64').toString('utf8'));
  return PaymentResponse.parse(json);
}
