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

/** The client refuses to pay: a malformed 402, no RPC for the network, or a price above the limit. */
export class PaymentRefusedError extends X402ClientError {
  /**
   * @param message explanation
   * @param cause underlying error
   */
  constructor(message: string, cause?: unknown) {
    super('payment_refused', message, cause);
    this.name = 'PaymentRefusedError';
  }
}
