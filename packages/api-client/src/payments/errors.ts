// The errors a payer throws (README, "Spend controls"), each with a stable `code`. Defined here, not
// imported from the internal x402 package, so that the package's public types stand alone and
// importing it stays light; the payment engine converts the internal client's errors into these.
import type { SpendLimitBreach, SpendLimitKind } from './limits';
import type { PaymentOffer } from './payer';

/** Base of every error a payer throws on purpose; `code` is stable for programs and CLIs. */
export class X402ClientError extends Error {
  /** Machine-readable code, e.g. `insufficient_funds`. */
  readonly code: string;

  /**
   * @param code stable machine-readable code
   * @param message one-line explanation
   * @param cause the underlying error
   */
  constructor(code: string, message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'X402ClientError';
    this.code = code;
  }
}

/** What is missing for a payment: the token account, tokens, or SOL for the fee (push mode). */
export type InsufficientFundsKind = 'no_token_account' | 'token_balance' | 'sol_for_fees';

/** The wallet cannot pay: found before anything is signed, or in the RPC's simulation. Code `insufficient_funds`. */
export class InsufficientFundsError extends X402ClientError {
  /** What is missing. */
  readonly kind: InsufficientFundsKind;
  /** Required amount (atomic token units, or lamports for `sol_for_fees`), when known. */
  readonly required: bigint | undefined;
  /** Available amount in the same unit, when known. */
  readonly available: bigint | undefined;

  /**
   * @param kind what is missing
   * @param message explanation
   * @param amounts required and available amounts, when known
   */
  constructor(
    kind: InsufficientFundsKind,
    message: string,
    amounts: { required?: bigint | undefined; available?: bigint | undefined; cause?: unknown } = {},
  ) {
    super('insufficient_funds', message, amounts.cause);
    this.name = 'InsufficientFundsError';
    this.kind = kind;
    this.required = amounts.required;
    this.available = amounts.available;
  }
}

/** The Solana RPC cannot be reached (refused, DNS, timeout, HTTP error). Code `rpc_unreachable`. */
export class RpcUnreachableError extends X402ClientError {
  /** The RPC URL that failed. */
  readonly url: string;

  /**
   * @param url the RPC URL
   * @param message explanation
   * @param cause the underlying error
   */
  constructor(url: string, message: string, cause?: unknown) {
    super('rpc_unreachable', message, cause);
    this.name = 'RpcUnreachableError';
    this.url = url;
  }
}

/** Push mode: the transfer was sent but did not confirm in time, or failed on chain. */
export class PaymentConfirmationError extends X402ClientError {
  /** The transaction signature. */
  readonly signature: string;

  /**
   * @param code `confirmation_timeout` or `transaction_failed`
   * @param signature the signature
   * @param message explanation
   */
  constructor(code: string, signature: string, message: string) {
    super(code, message);
    this.name = 'PaymentConfirmationError';
    this.signature = signature;
  }
}

/**
 * The payment did not happen or was not accepted: nothing payable is offered, or the server answered
 * the paid retry with 402 (`status`, the server's `reason`; push mode: `signature` of the transfer
 * already made). Code `payment_refused`, or a subclass's.
 */
export class PaymentRefusedError extends X402ClientError {
  /** The server's `details.reason`, when the server refused the payment. */
  readonly reason: string | undefined;
  /** HTTP status of the refusing answer, when the server refused it. */
  readonly status: number | undefined;
  /** Push mode: the transfer already made; otherwise undefined. */
  readonly signature: string | undefined;

  /**
   * @param message explanation
   * @param details the code (default `payment_refused`), the server's reason, the status, the push transfer's signature
   * @param cause underlying error
   */
  constructor(
    message: string,
    details: {
      code?: string;
      reason?: string | undefined;
      status?: number | undefined;
      signature?: string | undefined;
    } = {},
    cause?: unknown,
  ) {
    super(details.code ?? 'payment_refused', message, cause);
    this.name = 'PaymentRefusedError';
    this.reason = details.reason;
    this.status = details.status;
    this.signature = details.signature;
  }
}

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
    super(`${offer.request.method} ${offer.request.url}: ${breach.message}; nothing was paid`, {
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
    super(`${offer.request.method} ${offer.request.url}: ${what}; nothing was paid`, {
      code: 'payment_not_allowed',
    });
    this.name = 'PaymentNotAllowedError';
    this.rule = rule;
    this.offer = offer;
  }
}
