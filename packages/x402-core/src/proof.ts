import { z } from 'zod';
import { PaymentPayload, X402Network } from '@repo/schemas';
import {
  checkEnvelope,
  decodeHeaderJson,
  invalidPaymentHeader,
  pushPaymentOf,
  schemaMismatch,
} from './header';
import { networkOfCaip2, PaymentPayloadV2, type PaymentRequirementsV2 } from './v2';

/**
 * A payment as a request presents it (docs/payments.md, "Paying for data (x402)", step 3, and "Paying with an
 * official x402 client"):
 * - `signature`: push mode (x402 v1): the payer sent the transfer; `txSignature` is base58;
 * - `transaction`: the official exact SVM scheme (v1 or v2 envelope): a partially signed transaction
 *   (base64 wire format) the server co-signs as fee payer and sends; `accepted` is the offer a v2
 *   client says it accepted, `extensions` the v2 payload's extensions (docs/payments.md, "Retrying
 *   safely: payment identifiers").
 */
export type PaymentProof =
  | { kind: 'signature'; x402Version: 1; network: X402Network; txSignature: string }
  | {
      kind: 'transaction';
      x402Version: 1 | 2;
      network: X402Network;
      transaction: string;
      accepted?: PaymentRequirementsV2;
      /** A v2 payload's `extensions` as sent (e.g. `payment-identifier`), unvalidated. */
      extensions?: Record<string, unknown>;
    };

/**
 * Longest accepted header value, in characters. A v2 payload is about 2,000 plus what the official
 * client copies from the 402's `extensions` (bazaar schemas, the sign-in challenge): about 10,000
 * for the largest route. Node refuses a request whose headers pass 16 KiB in all before this runs.
 */
const MAX_PROOF_LENGTH = 16384;
/** Longest base64 transaction: Solana's packet limit of 1232 bytes, in base64. */
const MAX_TRANSACTION_BASE64 = 1644;

const Transaction = z
  .string()
  .max(MAX_TRANSACTION_BASE64, 'must be at most one Solana packet (1232 bytes)')
  .regex(/^[A-Za-z0-9+/]+={0,2}$/, 'must be a base64 transaction');

const V1Transaction = z.object({
  x402Version: z.literal(1),
  scheme: z.literal('exact'),
  network: X402Network,
  payload: z.object({ transaction: Transaction }).passthrough(),
});

const V2Payload = PaymentPayloadV2.extend({
  payload: z.object({ transaction: Transaction }).passthrough(),
});

/**
 * The decoded JSON of a payment header (`X-PAYMENT` or `PAYMENT-SIGNATURE`) in each form
 * {@link parsePaymentProof} accepts: a v1 push payment (`payload.txSignature`), a v1 official-scheme
 * payment (`payload.transaction`, base64) or a v2 payment (`accepted`, `payload.transaction`). For
 * documents and checks of examples; `parsePaymentProof` is the parser (it also checks the
 * signature's 64 bytes, the scheme and the network).
 */
export const PaymentHeaderJson = z.union([PaymentPayload, V1Transaction, V2Payload]);

/**
 * Parses a payment header (`PAYMENT-SIGNATURE` or `X-PAYMENT`; base64 JSON or raw JSON): a v1 push
 * payment (`payload.txSignature`, see `parsePaymentHeader`), a v1 official-scheme payment
 * (`payload.transaction`), or a v2 payment (`x402Version: 2`, `accepted` with a CAIP-2 network,
 * `payload.transaction`), scheme `exact` in every case.
 *
 * @param value the header value
 * @param expectedNetwork when given, the network the request is for (from `?network=`)
 * @param header the header's name, for messages (default `X-PAYMENT`)
 * @returns the payment, with its network as this project names it
 * @throws AppError `invalid_payment_header` (400) naming the problem, with `details.reason` in the
 *   specification's codes (`PaymentHeaderReason`): not base64/JSON or a schema violation
 *   (`invalid_payload`), a version other than 1 or 2 (`invalid_x402_version`), a scheme other than
 *   `exact` (`unsupported_scheme`), an unknown network or one other than `expectedNetwork`
 *   (`invalid_network`)
 */
export function parsePaymentProof(
  value: string,
  expectedNetwork?: X402Network,
  header = 'X-PAYMENT',
): PaymentProof {
  const raw = decodeHeaderJson(value, MAX_PROOF_LENGTH, header);
  checkEnvelope(raw, { versions: [1, 2], networks: X402Network.options }, header);
  const version = (raw as { x402Version?: unknown } | null)?.x402Version;
  let proof: PaymentProof;
  if (version === 2) {
    const parsed = V2Payload.safeParse(raw);
    if (!parsed.success) throw schemaMismatch(parsed.error.issues, header);
    const { accepted, extensions } = parsed.data;
    if (accepted.scheme !== 'exact')
      throw invalidPaymentHeader(
        `accepted.scheme "${accepted.scheme.slice(0, 40)}" is not offered (exact is)`,
        undefined,
        header,
        'unsupported_scheme',
      );
    const network = networkOfCaip2(accepted.network);
    if (!network)
      throw invalidPaymentHeader(
        `accepted.network "${accepted.network.slice(0, 60)}" is not offered`,
        undefined,
        header,
        'invalid_network',
      );
    proof = {
      kind: 'transaction',
      x402Version: 2,
      network,
      transaction: parsed.data.payload.transaction,
      accepted,
      ...(extensions ? { extensions } : {}),
    };
  } else if (
    version === 1 &&
    typeof (raw as { payload?: { transaction?: unknown } }).payload?.transaction === 'string'
  ) {
    const parsed = V1Transaction.safeParse(raw);
    if (!parsed.success) throw schemaMismatch(parsed.error.issues, header);
    proof = {
      kind: 'transaction',
      x402Version: 1,
      network: parsed.data.network,
      transaction: parsed.data.payload.transaction,
    };
  } else {
    const push = pushPaymentOf(raw, header);
    proof = {
      kind: 'signature',
      x402Version: 1,
      network: push.network,
      txSignature: push.payload.txSignature,
    };
  }
  if (expectedNetwork !== undefined && proof.network !== expectedNetwork) {
    throw invalidPaymentHeader(
      `network is "${proof.network}" but this request is for "${expectedNetwork}"`,
      { expected: expectedNetwork, got: proof.network },
      header,
      'invalid_network',
    );
  }
  return proof;
}
