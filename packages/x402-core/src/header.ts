import { bs58 } from './deps';
import { AppError } from '@repo/errors';
import { PaymentPayload, PaymentResponse, type X402Network } from '@repo/schemas';
import type { z } from 'zod';

/** Name of the request header carrying the payment proof. */
export const PAYMENT_HEADER = 'x-payment';
/** Name of the response header carrying the settlement result (base64 JSON {@link PaymentResponse}). */
export const PAYMENT_RESPONSE_HEADER = 'x-payment-response';

/** Largest accepted X-PAYMENT value, in characters (a valid one is about 200). */
const MAX_HEADER_LENGTH = 4096;

function invalid(message: string, details?: unknown, header = 'X-PAYMENT'): AppError {
  return new AppError('invalid_payment_header', `Invalid ${header} header: ${message}`, { details });
}

/**
 * Decodes a payment header's JSON: base64 of a JSON value, or the raw JSON (detected by a leading `{`).
 * @param value the header value
 * @param maxLength longest accepted value, in characters
 * @param header the header's name, for messages
 * @throws AppError `invalid_payment_header` (400): empty, too long, not base64, not JSON
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
 * message, all of them in `details`.
 */
export function schemaMismatch(issues: readonly z.core.$ZodIssue[], header = 'X-PAYMENT'): AppError {
  const listed = issues.map((issue) => ({
    path: issue.path.map(String).join('.') || '(root)',
    message: issue.message,
  }));
  const first = listed[0];
  return invalid(first ? `${first.path}: ${first.message}` : 'schema mismatch', listed, header);
}

/** `invalid_payment_header` (400) with `message` about the `header` header. */
export function invalidPaymentHeader(message: string, details?: unknown, header = 'X-PAYMENT'): AppError {
  return invalid(message, details, header);
}

/**
 * Parses an `X-PAYMENT` value (README, "Paying for data (x402)", step 3):
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
  const payload = pushPaymentOf(decodeHeaderJson(value, MAX_HEADER_LENGTH));
  if (expectedNetwork !== undefined && payload.network !== expectedNetwork) {
    throw invalid(`network is "${payload.network}" but this request is for "${expectedNetwork}"`, {
      expected: expectedNetwork,
      got: payload.network,
    });
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
 * (README, "Paying for data (x402)", step 3).
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
