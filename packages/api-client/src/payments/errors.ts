// The errors a payer throws (README, "Spend controls"), each with a stable `code`. The base classes are
// the paying client's own, from the Solana-free `@repo/x402-solana/client-core` (bundled into the
// published package), so an error the internal client throws is the one a caller catches; the two
// refusals about a payer's own limits are defined here.
import { PaymentRefusedError } from '@repo/x402-solana/client-core';
import type { SpendLimitBreach, SpendLimitKind } from './limits';
import type { PaymentOffer } from './payer';

export {
  X402ClientError,
  InsufficientFundsError,
  RpcUnreachableError,
  PaymentConfirmationError,
  PaymentRefusedError,
} from '@repo/x402-solana/client-core';
export type { InsufficientFundsKind } from '@repo/x402-solana/client-core';

/**
 * A payment would pass a spend cap (README, "Spend controls"): refused before anything was signed or
 * sent, so no money moved. Code `spend_limit_exceeded`.
 */
export class SpendLimitExceededError extends PaymentRefusedError {
  /** The cap: `per_payment`, `per_hour` or `per_day`. */
  readonly limit: SpendLimitKind;
  /** The cap, in atomic USDC units. */
  readonly limitAtomic: bigint;
  /** Already spent in the cap's window (atomic USDC units; 0 for `per_payment`). */
  readonly spentAtomic: bigint;
  /** What was asked. */
  readonly offer: PaymentOffer;

  /**
   * @param offer what the server asked
   * @param breach which cap, and by how much
   */
  constructor(offer: PaymentOffer, breach: SpendLimitBreach) {
    super(`${offer.request.method} ${offer.request.url}: ${breach.message}; nothing was paid`, undefined, {
      code: 'spend_limit_exceeded',
    });
    this.name = 'SpendLimitExceededError';
    this.limit = breach.limit;
    this.limitAtomic = breach.limitAtomic;
    this.spentAtomic = breach.spentAtomic;
    this.offer = offer;
  }
}

/**
 * The offer's recipient, the request's host (or the host a redirect led to) or the asset is not
 * allowed (README, "Spend controls"): refused before anything was signed. Code `payment_not_allowed`.
 */
export class PaymentNotAllowedError extends PaymentRefusedError {
  /** What is not allowed: the recipient (`pay_to`), the host, or the asset (not in `allowAssets`, or not 6 decimals). */
  readonly rule: 'pay_to' | 'host' | 'asset';
  /** What was asked. */
  readonly offer: PaymentOffer;

  /**
   * @param offer what the server asked
   * @param rule the allowlist that refused it
   */
  constructor(offer: PaymentOffer, rule: 'pay_to' | 'host' | 'asset') {
    const what =
      rule === 'host'
        ? 'the host is not in allowHosts'
        : rule === 'asset'
          ? `the asset ${offer.asset} is not an allowed 6-decimal USDC mint`
          : `the recipient ${offer.payTo} is not in allowPayTo`;
    super(`${offer.request.method} ${offer.request.url}: ${what}; nothing was paid`, undefined, {
      code: 'payment_not_allowed',
    });
    this.name = 'PaymentNotAllowedError';
    this.rule = rule;
    this.offer = offer;
  }
}
