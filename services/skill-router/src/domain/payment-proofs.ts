import { AppError, validationError } from '@repo/errors';
import type { RateLimit } from '@repo/service-kit';
import type { X402Network } from '@repo/schemas';
import type { PaymentTarget, ReportPayments } from '../data/report-payments';
import type { PaidCall } from './reports';

const BASE58_ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

/**
 * How many bytes a base58 string decodes to (leading `1`s are zero bytes), or `null` when it is not
 * base58. Meant for short values (addresses, signatures): callers bound the length first.
 */
export function base58ByteLength(value: string): number | null {
  let n = 0n;
  for (const c of value) {
    const digit = BASE58_ALPHABET.indexOf(c);
    if (digit < 0) return null;
    n = n * 58n + BigInt(digit);
  }
  let bytes = 0;
  while (bytes < value.length && value[bytes] === '1') bytes++;
  for (; n > 0n; n >>= 8n) bytes++;
  return bytes;
}

/** USD per call → atomic USDC units (6 decimals), rounded to the nearest unit. */
export function usdToAtomicUsdc(priceUsd: number): bigint {
  return BigInt(Math.round(priceUsd * 1_000_000));
}

/** A payment on chain as the verifier proved it. */
export interface ProvedPayment {
  /** The transfer authority (base58). */
  payer: string;
  /** Atomic USDC units received by the skill's `payTo`. */
  amountAtomic: bigint;
}

/**
 * Why a payment proof was refused by the chain check, as `@repo/x402-core`'s
 * `PaymentVerificationReason` (`rpc_unavailable` when the RPC could not answer).
 */
export type ProofRefusal = { refused: true; reason: string; message: string };

/**
 * Checks an x402 payment on chain (adapters/solana-payments.ts, `SolanaPaymentVerifier` of
 * `@repo/x402-solana`): that `signature` moved exactly `amountAtomic` of the network's USDC into
 * `payTo`, within the freshness window.
 */
export interface PaymentChecker {
  /** Whether payment proofs on `network` are accepted (its RPC URL and USDC mint are configured). */
  accepts(network: X402Network): boolean;
  /** The proved payment, or why it was refused. */
  check(input: {
    network: X402Network;
    payTo: string;
    signature: string;
    amountAtomic: bigint;
  }): Promise<ProvedPayment | ProofRefusal>;
}

/** What {@link provePaidCall} needs. */
export interface PaymentProofDeps {
  payments: Pick<ReportPayments, 'target' | 'claim' | 'markVerified' | 'release'>;
  checker: PaymentChecker;
  /** Payment proofs checked per key (PAYMENT_PROOFS_PER_KEY_PER_HOUR): each can cost RPC calls. */
  proofLimit: RateLimit;
}

/** A payment proof sent with a report (`payment` of POST /api/discover/report). */
export interface PaymentProofInput {
  skillId: string;
  apiKeyId: string;
  network: X402Network;
  signature: string;
}

const PATH = 'body.payment';

const refuse = (field: string, message: string): AppError =>
  validationError([{ path: `${PATH}.${field}`, code: 'custom', message }]);

/**
 * Proves that a report's call was paid (README, "Reputation"): the skill declares a
 * `pay_to` and a price, the network is configured, the key is within its proof limit, the signature
 * is not already used, and on chain it moves exactly the skill's price in USDC into `pay_to`. A
 * signature is claimed before the chain is asked (so two reports cannot both use it) and recorded
 * with its payer once verified: it proves one report, and is never checked on chain again. A refused
 * check releases the claim.
 * @returns the verified payment, to count the report at full weight
 * @throws AppError `invalid_request` (400, path `body.payment…`) when the skill is free or declares no
 *   `pay_to`, the network is not accepted, or the chain refuses the payment (the reason in the
 *   message); `payment_reused` (400) when the signature proved a report already; `rate_limited` (429)
 *   over the key's proof limit; `service_unavailable` (503, `Retry-After`) while another request checks
 *   the same signature or the RPC cannot answer
 */
export async function provePaidCall(deps: PaymentProofDeps, input: PaymentProofInput): Promise<PaidCall> {
  const target: PaymentTarget | null = await deps.payments.target(input.skillId);
  if (!target) throw refuse('signature', `skill ${input.skillId} does not exist`);
  if (!target.payTo) throw refuse('signature', `skill ${input.skillId} declares no pricing.pay_to to pay`);
  const amountAtomic = usdToAtomicUsdc(target.priceUsd);
  if (amountAtomic <= 0n)
    throw refuse('signature', `skill ${input.skillId} is free: there is no payment to prove`);
  if (!deps.checker.accepts(input.network))
    throw refuse('network', `payment proofs on ${input.network} are not accepted by this service`);

  const decision = await deps.proofLimit.consume(input.apiKeyId);
  if (!decision.allowed) {
    throw new AppError(
      'rate_limited',
      `Too many payment proofs from this API key; retry in ${decision.retryAfterSeconds} s`,
      {
        headers: { 'Retry-After': String(decision.retryAfterSeconds) },
        details: { retry_after_seconds: decision.retryAfterSeconds },
      },
    );
  }

  const claim = await deps.payments.claim({ ...input, amountAtomic });
  if (claim === 'used')
    throw new AppError('payment_reused', 'This payment signature already proved a call report');
  if (claim === 'busy')
    throw new AppError('service_unavailable', 'This payment signature is being checked; retry in a second', {
      headers: { 'Retry-After': '1' },
    });

  let outcome: ProvedPayment | ProofRefusal;
  try {
    outcome = await deps.checker.check({
      network: input.network,
      payTo: target.payTo,
      signature: input.signature,
      amountAtomic,
    });
  } catch (err) {
    await deps.payments.release(input.signature);
    throw err;
  }
  if ('refused' in outcome) {
    await deps.payments.release(input.signature);
    if (outcome.reason === 'rpc_unavailable')
      throw new AppError('service_unavailable', 'The Solana RPC could not be asked; retry shortly', {
        headers: { 'Retry-After': '5' },
      });
    throw refuse('signature', `${outcome.reason}: ${outcome.message}`);
  }
  await deps.payments.markVerified(input.signature, outcome.payer, outcome.amountAtomic);
  return { signature: input.signature, payer: outcome.payer };
}
