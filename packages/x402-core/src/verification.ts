import type { X402Network } from '@repo/schemas';

/**
 * Why a payment proof was refused (docs/architecture.md, "How a paid request flows (market-intel)",
 * step 2; docs/payments.md, "Paying with our client" and "Request-bound payments"):
 * - `not_found`: the transaction is not (yet) visible at `confirmed` commitment; the claim is released
 * - `transaction_failed`: it landed with `meta.err` set
 * - `wrong_recipient`: no `transferChecked` into `payTo` (nor another mint into the merchant's accounts)
 * - `mint_mismatch`: a transfer into `payTo`, or into another token account of the merchant, moves
 *   another mint (400)
 * - `amount_mismatch`: the transfer or the balance delta of `payTo` differs from the price (400)
 * - `stale`: `blockTime` is missing or outside the freshness window around the service's first
 *   sighting of the signature
 * - `reference_mismatch`: the transfer carries Solana Pay references, none of them this request's: it
 *   paid for another request (the claim is released, the payment stays usable on its own request)
 * - `reference_missing`: references are required and the transfer carries none
 * - `rpc_unavailable`: the RPC endpoint could not be reached, timed out, or answered an HTTP error, a
 *   JSON-RPC error or a malformed result (503); the `cause` is an `RpcTransportError` or an
 *   `RpcResponseError`
 */
export type PaymentVerificationReason =
  | 'not_found'
  | 'transaction_failed'
  | 'wrong_recipient'
  | 'mint_mismatch'
  | 'amount_mismatch'
  | 'stale'
  | 'reference_mismatch'
  | 'reference_missing'
  | 'rpc_unavailable';

/** Every {@link PaymentVerificationReason}, for metrics label sets and docs. */
export const PAYMENT_VERIFICATION_REASONS: readonly PaymentVerificationReason[] = [
  'not_found',
  'transaction_failed',
  'wrong_recipient',
  'mint_mismatch',
  'amount_mismatch',
  'stale',
  'reference_mismatch',
  'reference_missing',
  'rpc_unavailable',
];

/** A payment proof that did not verify; an adapter maps it to an answer (`@repo/x402-express`'s `verificationErrorToAppError`). */
export class PaymentVerificationError extends Error {
  /** The machine-readable reason. */
  readonly reason: PaymentVerificationReason;
  /** The transaction signature that was checked. */
  readonly signature: string;
  /** The network it was checked on. */
  readonly network: X402Network;
  /** Milliseconds spent in RPC calls before the verdict. */
  readonly rpcMs: number;
  /** Extra detail for logs and the response (`expected`/`actual` amounts as decimal strings...). */
  readonly details: Record<string, unknown> | undefined;

  /**
   * @param reason why the proof was refused
   * @param message human-readable explanation (sent to the client)
   * @param context signature, network, RPC time, optional details and cause
   */
  constructor(
    reason: PaymentVerificationReason,
    message: string,
    context: {
      signature: string;
      network: X402Network;
      rpcMs: number;
      details?: Record<string, unknown>;
      cause?: unknown;
    },
  ) {
    super(message, context.cause === undefined ? undefined : { cause: context.cause });
    this.name = 'PaymentVerificationError';
    this.reason = reason;
    this.signature = context.signature;
    this.network = context.network;
    this.rpcMs = context.rpcMs;
    this.details = context.details;
  }
}

/**
 * Type guard for {@link PaymentVerificationError}.
 * @param value anything caught
 */
export function isPaymentVerificationError(value: unknown): value is PaymentVerificationError {
  return value instanceof PaymentVerificationError;
}

/** A payment proven on chain (docs/architecture.md, "How a paid request flows (market-intel)", step 2). */
export interface VerifiedPayment {
  /** The base58 transaction signature. */
  signature: string;
  /** The network it landed on. */
  network: X402Network;
  /** The transfer authority (base58): the wallet that paid. */
  payer: string;
  /** The amount received by `payTo`, in atomic USDC units. */
  amountAtomic: bigint;
  /** The mint transferred (base58). */
  asset: string;
  /** The receiving token account (base58). */
  payTo: string;
  /** The slot the transaction landed in. */
  slot: number;
  /** The block time of the transaction. */
  blockTime: Date;
  /** Milliseconds spent in RPC calls for this verification (0 when taken from the ledger). */
  rpcMs: number;
}

/** What one verification checks beyond the price (all optional). */
export interface VerifyOptions {
  /** `getTransaction` attempts while not found (default: the verifier's own). */
  attempts?: number;
  /**
   * When the service first saw the signature: freshness is measured from it, so a payer answered 503
   * who retries later is still served. Default: now.
   */
  firstSeenAt?: Date;
  /**
   * This request's Solana Pay reference (base58 address, see `requestReference`): a transfer carrying
   * other references is refused with `reference_mismatch`. Absent: references are not checked.
   */
  reference?: string;
  /** With `reference`: a transfer carrying no reference at all is refused with `reference_missing`. */
  requireReference?: boolean;
  /**
   * The caller itself just saw the transaction confirmed (it sent it: an official-scheme settlement),
   * so an earlier "not found" of the same signature, remembered to spare the RPC, is not the answer.
   */
  landed?: boolean;
}

/** What the payment pipeline needs from a verifier; `@repo/x402-solana`'s `SolanaPaymentVerifier` implements it for Solana. */
export interface PaymentVerifier {
  /** The network this verifier checks. */
  readonly network: X402Network;
  /** The advertised mint (base58). */
  readonly asset: string;
  /** The merchant token account (base58). */
  readonly payTo: string;
  /**
   * Seconds, as this verifier enforces them, a payer has between paying and presenting the payment
   * (a push payment's freshness window): the push requirement's advertised `maxTimeoutSeconds`.
   * Absent: the route's.
   */
  readonly maxTimeoutSeconds?: number;
  /**
   * Proves that `signature` pays exactly `amountAtomic` of `asset` into `payTo`.
   * @throws PaymentVerificationError when it does not
   */
  verify(signature: string, amountAtomic: bigint, options?: VerifyOptions): Promise<VerifiedPayment>;
}
