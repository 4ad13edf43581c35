import type { z } from 'zod';
import { BODY_PARSER_ERRORS, errorResponse, RETRY_AFTER_HEADER, type RouteContract } from '@repo/service-kit';
import {
  Error402,
  PaymentResponse,
  type JsonSchema,
  type OpenApiParameter,
  type OpenApiResponse,
} from '@repo/schemas';
import {
  CAIP2_NETWORKS,
  encodeBase64Json,
  PaymentHeaderJson,
  PaymentRequiredV2,
  SettleResponseV2,
  SignInWithXProof,
} from '@repo/x402-core';
import { ComputeUnavailable, JobAccepted } from '../../schemas';
import type { PaidRoute } from '../../domain/prices';

// Fragments shared by the route contracts of free.ts, data-api.ts and compute.ts: what every paid
// route answers around its handler (the x402 gate's 402, 400, 429 and 503, the settlement headers),
// the payment headers it reads, its price as vendor extensions and in its description, and the 400
// of a bad `network`.

/**
 * The decoded payloads of the x402 headers, as components of the document (the `contentSchema` of
 * each header refers to one): the v2 offer of a 402 (`PAYMENT-REQUIRED`), a payment in any accepted
 * form (`X-PAYMENT`, `PAYMENT-SIGNATURE`), a sign-in proof (`SIGN-IN-WITH-X`), and the v1 and v2
 * settlements of a paid answer (`X-PAYMENT-RESPONSE`, `PAYMENT-RESPONSE`).
 */
export const X402_HEADER_COMPONENTS = {
  PaymentRequiredV2,
  PaymentHeaderJson,
  SignInWithXProof,
  PaymentResponse,
  SettleResponseV2,
} as const;

/** A header whose value is base64 of JSON valid against one of {@link X402_HEADER_COMPONENTS}. */
function base64Json(component: keyof typeof X402_HEADER_COMPONENTS): JsonSchema {
  return {
    type: 'string',
    contentEncoding: 'base64',
    contentMediaType: 'application/json',
    contentSchema: { $ref: `#/components/schemas/${component}` },
  };
}

/** The README section that describes paying, as a Markdown link (GitHub's anchor of its heading). */
export const PAYING_README_LINK =
  '[services/market-intel/README.md, "Paying, in three steps"](services/market-intel/README.md#paying-in-three-steps)';

/**
 * The three steps of paying a route, in Markdown (services/market-intel/README.md, "Paying, in three
 * steps"), for the document's description and each paid operation's.
 * @param amount what to transfer, e.g. `exactly 100000 atomic units (0.10 USDC)`
 */
export function payingSteps(amount: string): string {
  return [
    '1. **Call** the route without a payment header: the answer is `402` with the `PaymentRequirements` in the ' +
      'body (`accepts`: `maxAmountRequired` in atomic units, `asset` = the USDC mint, `payTo`, and `extra.reference` ' +
      'when payments are bound to requests) and the x402 v2 offer in the `PAYMENT-REQUIRED` header (base64 JSON).',
    `2. **Pay**: send an SPL \`transferChecked\` of ${amount} of \`asset\` to \`payTo\`, the merchant's ` +
      'associated token account, with `extra.reference` (when given) as a read-only account of the instruction ' +
      '(push mode: you pay the network fee); or sign the `PAYMENT-REQUIRED` offer with an official x402 client ' +
      '(the service co-signs as fee payer).',
    '3. **Retry** the same request with `X-PAYMENT`: base64 JSON `{ x402Version: 1, scheme: "exact", network, ' +
      'payload: { txSignature } }` (push mode), or `PAYMENT-SIGNATURE` as the official client sends it. The answer ' +
      'carries the settlement in `X-PAYMENT-RESPONSE` and `PAYMENT-RESPONSE`; the same payment presented again on ' +
      'the same request replays it.',
  ].join('\n');
}

/** The section of docs/payments.md on sign-in-with-x, as a Markdown link (GitHub's anchor of its heading). */
export const SIGN_IN_DOCS_LINK =
  '[docs/payments.md, "Signing in instead of paying again"](docs/payments.md#signing-in-instead-of-paying-again)';

/**
 * The payment headers a paid route reads (step 3 of {@link payingSteps}), and the sign-in proof that
 * stands in for a payment already made (docs/payments.md, "Signing in instead of paying again");
 * none of them: the answer is the 402.
 */
export const PAYMENT_REQUEST_HEADERS: OpenApiParameter[] = [
  {
    name: 'X-PAYMENT',
    in: 'header',
    description:
      'the payment: base64 (or raw) JSON { x402Version: 1, scheme: "exact", network, payload: { txSignature } } ' +
      '(push mode: the base58 signature of your transferChecked), or { ..., payload: { transaction } } / an x402 v2 ' +
      'PaymentPayload (official exact scheme)',
    schema: base64Json('PaymentHeaderJson'),
  },
  {
    name: 'PAYMENT-SIGNATURE',
    in: 'header',
    description:
      'x402 v2: base64 JSON PaymentPayload { x402Version: 2, accepted (the PAYMENT-REQUIRED offer), resource, ' +
      'payload: { transaction } } as an official x402 client sends it',
    schema: base64Json('PaymentHeaderJson'),
  },
  {
    name: 'SIGN-IN-WITH-X',
    in: 'header',
    description:
      "x402 sign-in-with-x (when X402_SIGN_IN_WITH_X is on): base64 JSON of the proof, the 402's " +
      'PAYMENT-REQUIRED extensions["sign-in-with-x"] challenge signed by the wallet that paid (SIWS, ' +
      'Ed25519), as the official client sends it. Without a payment header it gets the same request ' +
      'again without paying within the access window; with a used payment it proves the payer, which a ' +
      `replay needs. A bad proof is a 402 whose details.reason names why. See ${SIGN_IN_DOCS_LINK}.`,
    schema: base64Json('SignInWithXProof'),
  },
];

/** Response headers of a 402 (docs/payments.md, "Paying for data (x402)"). */
const X402_HEADERS: NonNullable<OpenApiResponse['headers']> = {
  'x402-version': { description: 'x402 protocol version', schema: { type: 'string', const: '1' } },
  'PAYMENT-REQUIRED': {
    description:
      'x402 v2 offer (when a fee payer is configured): base64 JSON PaymentRequired { x402Version: 2, error, resource, accepts: [{ scheme: "exact", network (CAIP-2), amount, asset, payTo (merchant wallet), maxTimeoutSeconds, extra: { feePayer, reference?, memo? } }], extensions }; on a refusal its error is the reason code',
    schema: base64Json('PaymentRequiredV2'),
  },
  'PAYMENT-RESPONSE': {
    description:
      'after an official-scheme settlement that failed: base64 JSON { success: false, errorReason, errorMessage, transaction, network (CAIP-2), payer } (x402 v2)',
    schema: base64Json('SettleResponseV2'),
    // A failed settlement cannot be captured from an unpaid request: one written out.
    example: encodeBase64Json({
      success: false,
      errorReason: 'invalid_exact_svm_payload_amount_mismatch',
      errorMessage: 'The payment transaction was refused: invalid_exact_svm_payload_amount_mismatch',
      transaction: '5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW',
      network: CAIP2_NETWORKS.solana,
      payer: '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM',
    } satisfies SettleResponseV2),
  },
};

/** Response headers of a paid answer: the settlement, v1 and v2 (services/market-intel/README.md, "Paying, in three steps"). */
const PAID_HEADERS: NonNullable<OpenApiResponse['headers']> = {
  'x402-version': { description: 'x402 protocol version', schema: { type: 'string', const: '1' } },
  'X-PAYMENT-RESPONSE': {
    description: 'base64 JSON { success, transaction, network, payer }',
    schema: base64Json('PaymentResponse'),
  },
  'PAYMENT-RESPONSE': {
    description: 'base64 JSON { success, transaction, network (CAIP-2), payer } (x402 v2)',
    schema: base64Json('SettleResponseV2'),
  },
};

const PAYMENT_NOT_ACCEPTABLE: OpenApiResponse = {
  description:
    'payment missing or not acceptable (malformed or wrong-network header, unknown, failed, stale or misdirected transaction; details.reason)',
  body: Error402,
  headers: X402_HEADERS,
};

const VERIFICATIONS_LIMITED =
  'too many payment verifications from this client (IPv4 address or IPv6 /64) on this network this minute ' +
  '(X402_VERIFICATIONS_PER_MINUTE_PER_CLIENT); nothing consumed; retry after Retry-After. With sign-in-with-x on, ' +
  'also too many SIGN-IN-WITH-X proofs from this client or for the wallet a proof claims, on this network this ' +
  'minute (X402_SIGN_INS_PER_MINUTE_PER_CLIENT, X402_SIGN_INS_PER_MINUTE_PER_ADDRESS; details: { reason: ' +
  'siwx_rate_limited, limit: client | address }), refused before the proof is checked';

/**
 * The 400 of a free route whose only query parameter, `network`, is not one of the accepted values
 * (services/market-intel/README.md, "Endpoints").
 */
export const BAD_NETWORK: OpenApiResponse = errorResponse(
  'invalid query: network is not one of the accepted values',
);

/** The price of a paid route in USDC with two decimals, e.g. `0.10` for 100000 atomic units. */
export function usdc(route: PaidRoute): string {
  return (Number(route.amountAtomic) / 1e6).toFixed(2);
}

/** The contract fields a paid route shares with every other paid route, apart from its responses. */
type PaidParts = Pick<RouteContract, 'summary' | 'description' | 'tags' | 'security' | 'extensions'>;

/**
 * The description of a paid route in Markdown: its price in atomic USDC units and in USDC, from the
 * price table the route is bound to, and how to pay, in three steps, with the README link.
 */
function paidDescription(route: PaidRoute): string {
  const price = `${route.amountAtomic} atomic USDC units (${usdc(route)} USDC)`;
  return [
    `**Price: ${price} per call** (\`maxAmountRequired\`; USDC has 6 decimals).`,
    `Paying, in three steps (${PAYING_README_LINK}):`,
    payingSteps(`exactly ${price}`),
  ].join('\n\n');
}

/**
 * The summary with the price (in USDC and in atomic USDC units, 6 decimals), the description (price
 * and payment steps, see {@link paidDescription}, then `details`), the tag, the security schemes of
 * both x402 versions and of sign-in-with-x, and the price as `x-price-usdc` and `x-max-amount-required` (atomic units) of a
 * paid route.
 */
function paidParts(route: PaidRoute, tag: string, summarySuffix = '', details?: string): PaidParts {
  return {
    summary: `${route.description} (paid: ${usdc(route)} USDC, ${route.amountAtomic} atomic units${summarySuffix})`,
    description: [paidDescription(route), ...(details ? [details] : [])].join('\n\n'),
    tags: [tag],
    security: [{ x402: [] }, { x402v2: [] }, { siwx: [] }],
    extensions: { 'x-price-usdc': usdc(route), 'x-max-amount-required': route.amountAtomic.toString() },
  };
}

/** The 409 of an x402 payment-identifier used again for another request (docs/payments.md, "Retrying safely: payment identifiers"). */
const IDENTIFIER_CONFLICT =
  'the payment-identifier id of this official-scheme payment was already used by the payer for another request (payment_identifier_conflict); nothing is charged: a new request needs a new identifier';

/**
 * The contract fragment of a paid Data API route (services/market-intel/README.md, "Endpoints" and
 * "Paying, in three steps"): summary, description with the price and the payment steps, tag, security
 * and price extensions (see {@link paidParts}), and its responses: 200 with `body` and the settlement headers, 400 (invalid query, answered before
 * any payment is asked; a payment reused elsewhere or of the wrong amount or mint), 402 `Error402`
 * with the offer headers, 409 (a payment identifier used for another request), 429 (verification budget, with `Retry-After` in seconds), 503 (Solana RPC
 * unreachable), plus `extra` (e.g. the brief's 404).
 * @param route the price and ledger endpoint of the route (`amountAtomic` in atomic USDC units)
 * @param body the zod schema of the 200 answer; a component of the document becomes a `$ref`
 */
export function paidDataParts(
  route: PaidRoute,
  body: z.ZodType,
  extra: Record<string, OpenApiResponse> = {},
): PaidParts & Pick<RouteContract, 'responses'> {
  return {
    ...paidParts(route, 'Data API'),
    responses: {
      '200': {
        description: 'the paid answer (a replay of the same signature returns it again)',
        body,
        headers: PAID_HEADERS,
      },
      '400': errorResponse(
        'invalid query (no payment asked), payment reused on another endpoint, amount or mint mismatch, malformed payment-identifier extension (invalid_payment_header, details.reason invalid_payment_identifier)',
      ),
      '402': PAYMENT_NOT_ACCEPTABLE,
      '409': errorResponse(IDENTIFIER_CONFLICT),
      '429': errorResponse(VERIFICATIONS_LIMITED, RETRY_AFTER_HEADER),
      ...extra,
      '503': errorResponse('the Solana RPC is unreachable; retry later'),
    },
  };
}

/**
 * The contract fragment of a paid Compute API POST (services/market-intel/README.md, "Endpoints";
 * README, "Failed jobs and health (market-intel)"): summary with price and duration, the
 * description with the price, the payment steps and the order of checks, tag, security and price
 * extensions (see {@link paidParts}), and its responses:
 * 202 `JobAccepted` with the settlement headers, 303 to the job of a payer signed in, 400, 402 `Error402`, 409 (payment already used for a
 * job), 413 and 415 (body parser), 422 (body or `webhook_url`, nothing charged), 429 (verification
 * budget or a devnet cap: per client, global or per payer, `Retry-After` in seconds) and 503
 * `ComputeUnavailable` (health preflight, `Retry-After` in seconds, no payment requested).
 * @param route the price and ledger endpoint of the route (`amountAtomic` in atomic USDC units)
 * @param eta how long the job runs, in words (`about 30 minutes`)
 */
export function paidComputeParts(
  route: PaidRoute,
  eta: string,
): PaidParts & Pick<RouteContract, 'responses'> {
  return {
    ...paidParts(
      route,
      'Compute API',
      `; asynchronous, ${eta}`,
      'Order of checks: body and webhook_url (422, nothing charged), health preflight (503 with Retry-After and errorClass, no payment asked), ' +
        'then x402. The job runs on the pipeline-runner; poll statusUrl or pass webhook_url (signed with x-service-signature).',
    ),
    responses: {
      '202': {
        description: 'job accepted (status pending); Location = statusUrl',
        body: JobAccepted,
        headers: PAID_HEADERS,
      },
      '303': {
        description:
          'no payment header, and a SIGN-IN-WITH-X proof of the wallet that paid for this very request (same body) within X402_ACCESS_WINDOW_SECONDS (jobs): Location = the statusUrl of its job; nothing charged (sign-in-with-x, when on)',
        headers: {
          Location: {
            description: 'the job status path, GET /api/v1/jobs/{jobId}',
            schema: { type: 'string' },
            example: '/api/v1/jobs/5TfQmzmz4pXJtW3mNnQqYb8aJm1oXqv2oTzS8zq1b9kC',
          },
        },
      },
      '400': errorResponse(
        'malformed JSON, invalid query (network), payment reused on another endpoint, amount or mint mismatch, malformed payment-identifier extension (invalid_payment_header, details.reason invalid_payment_identifier)',
      ),
      '402': PAYMENT_NOT_ACCEPTABLE,
      '409': errorResponse(
        `this payment already started a job: details.jobId (payment_conflict); or ${IDENTIFIER_CONFLICT}`,
      ),
      '413': errorResponse(
        'the body is larger than BODY_LIMIT (100 kB by default; `payload_too_large`, the limit in bytes in details.limit_bytes)',
      ),
      '415': BODY_PARSER_ERRORS['415'],
      '422': errorResponse(
        'the body or its webhook_url failed validation, or the body has a field the operation does not know (`invalid_request`, each problem in details.issues); no payment consumed',
      ),
      '429': errorResponse(
        `${VERIFICATIONS_LIMITED}; or, paid on devnet, a daily cap on devnet compute jobs is reached ` +
          '(payment verified, not consumed; details: { limit, perDay }): the client (IPv4 address or IPv6 /64) ' +
          'started X402_DEVNET_COMPUTE_PER_CLIENT_PER_DAY today (limit: client_per_day), all clients together ' +
          'X402_DEVNET_COMPUTE_GLOBAL_PER_DAY (limit: global_per_day), or the payer wallet ' +
          'X402_DEVNET_COMPUTE_PER_DAY in 24 hours (limit: payer_per_day)',
        RETRY_AFTER_HEADER,
      ),
      '503': {
        description:
          'health preflight failed: errorClass upstream (Retry-After 30) or config (Retry-After 600); no payment requested',
        body: ComputeUnavailable,
        headers: RETRY_AFTER_HEADER,
      },
    },
  };
}
