// The errors of the paying client (README "The client"), each with a stable `code`. Solana-free, so
// `@repo/x402-solana/client-core` can give them to callers that do not load the Solana libraries.
/** Base of every error the paying client throws on purpose; `code` is stable for programs and CLIs. */
export class X402ClientError extends Error {
  /** Machine-readable code, e.g. `"insufficient_funds"`. */
  readonly code: string;

  /**
   * @param code stable machine-readable code
   * @param message one-line human-readable explanation
   * @param cause the underlying error
   */
  constructor(code: string, message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'X402ClientError';
    this.code = code;
  }
}

/** What is missing for a payment: the token account, tokens, or SOL for the fee. */
export type InsufficientFundsKind = 'no_token_account' | 'token_balance' | 'sol_for_fees';

/**
 * The payer cannot pay: no token account for the mint, fewer tokens than required, or no SOL for the
 * fee — detected before sending, or from the RPC's simulation error.
 */
export class InsufficientFundsError extends X402ClientError {
  /** What is missing. */
  readonly kind: InsufficientFundsKind;
  /** Required amount (atomic token units or lamports, per `kind`), when known. */
  readonly required: bigint | undefined;
  /** Available amount in the same unit, when known. */
  readonly available: bigint | undefined;

  /**
   * @param kind what is missing
   * @param message one-line explanation
   * @param amounts required and available amounts, when known
   */
  constructor(
    kind: InsufficientFundsKind,
    message: string,
    amounts: { required?: bigint; available?: bigint; cause?: unknown } = {},
  ) {
    super('insufficient_funds', message, amounts.cause);
    this.name = 'InsufficientFundsError';
    this.kind = kind;
    this.required = amounts.required;
    this.available = amounts.available;
  }
}

/** The Solana RPC endpoint cannot be reached (connection refused, DNS, timeout, HTTP error). */
export class RpcUnreachableError extends X402ClientError {
  /** The RPC URL that failed. */
  readonly url: string;

  /**
   * @param url the RPC URL
   * @param cause the underlying error
   */
  constructor(url: string, cause?: unknown) {
    const message =
      typeof cause === 'object' && cause !== null ? (cause as { message?: unknown }).message : undefined;
    const reason = typeof message === 'string' && message !== '' ? `: ${message.split('\n')[0]}` : '';
    super('rpc_unreachable', `Solana RPC ${url} is unreachable${reason}`, cause);
    this.name = 'RpcUnreachableError';
    this.url = url;
  }
}

/** The payment transaction was sent but did not confirm in time, or failed on chain. */
export class PaymentConfirmationError extends X402ClientError {
  /** The transaction signature. */
  readonly signature: string;

  /**
   * @param code `"confirmation_timeout"` or `"transaction_failed"`
   * @param signature the signature
   * @param message explanation
   */
  constructor(code: 'confirmation_timeout' | 'transaction_failed', signature: string, message: string) {
    super(code, message);
    this.name = 'PaymentConfirmationError';
    this.signature = signature;
  }
}

/** What a {@link PaymentRefusedError} knows beyond its message. */
export interface PaymentRefusalDetails {
  /** Stable code in place of `"payment_refused"` (used by subclasses, e.g. `"spend_cap_exceeded"`). */
  code?: string;
  /** The server's reason (`details.reason` of its 402 body), e.g. `invalid_exact_svm_payload_amount_mismatch`. */
  reason?: string;
  /** HTTP status of the answer that refused the payment (402), when the server refused it. */
  status?: number;
  /**
   * Push mode only: the signature of the transfer that was already sent and confirmed (the money moved;
   * the same `X-PAYMENT` can be presented again).
   */
  signature?: string;
}

/**
 * The payment did not happen or was not accepted (docs/payments.md "Paying for data (x402)"): the client refused
 * before paying (a malformed 402, no RPC URL for the network, no offer in the requested mode, a price
 * above the cap — see {@link SpendCapExceededError}), or the server answered the paid retry with 402
 * again (`status` 402, the server's `reason`; in push mode `signature` names the transfer already made,
 * in official mode nothing was settled).
 */
export class PaymentRefusedError extends X402ClientError {
  /** The server's `details.reason`, when the server refused the payment. */
  readonly reason: string | undefined;
  /** HTTP status of the refusing answer, when the server refused the payment. */
  readonly status: number | undefined;
  /** Push mode: the signature of the transfer already made; otherwise undefined. */
  readonly signature: string | undefined;

  /**
   * @param message explanation
   * @param cause underlying error
   * @param details the server's reason, the status, the push transfer's signature, a code override
   */
  constructor(message: string, cause?: unknown, details: PaymentRefusalDetails = {}) {
    super(details.code ?? 'payment_refused', message, cause);
    this.name = 'PaymentRefusedError';
    this.reason = details.reason;
    this.status = details.status;
    this.signature = details.signature;
  }
}

/**
 * The 402 asks more than the per-payment spend cap (`maxAmountAtomic`, default 1 USDC): refused before
 * any transfer is sent or any transaction signed, so no money moves. Code `"spend_cap_exceeded"`.
 */
export class SpendCapExceededError extends PaymentRefusedError {
  /** The price asked, in atomic units of `asset` (atomic USDC units: 6 decimals). */
  readonly priceAtomic: bigint;
  /** The cap in force, in the same unit. */
  readonly capAtomic: bigint;
  /** The mint the price is in (base58). */
  readonly asset: string;

  /**
   * @param message explanation naming the price and the cap
   * @param amounts the price, the cap (atomic units) and the asset
   */
  constructor(message: string, amounts: { priceAtomic: bigint; capAtomic: bigint; asset: string }) {
    super(message, undefined, { code: 'spend_cap_exceeded' });
    this.name = 'SpendCapExceededError';
    this.priceAtomic = amounts.priceAtomic;
    this.capAtomic = amounts.capAtomic;
    this.asset = amounts.asset;
  }
}
