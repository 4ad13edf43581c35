import { Connection, PublicKey, type TokenBalance, type VersionedTransactionResponse } from '@solana/web3.js';
import type { X402Network } from '@repo/schemas';
import { rpcFetch } from './rpc-fetch';
import { decodeBase58Data, decodeTransferChecked, type TransferChecked } from './transfers';

/**
 * Why a payment proof was refused (ARCHITECTURE.md, "Payments", steps 3–4):
 * - `not_found`: the transaction is not (yet) visible at `confirmed` commitment; the claim is released
 * - `transaction_failed`: it landed with `meta.err` set
 * - `wrong_recipient`: no `transferChecked` into `payTo` (nor another mint into the merchant's accounts)
 * - `mint_mismatch`: a transfer into `payTo`, or into another token account of the merchant, moves
 *   another mint (400)
 * - `amount_mismatch`: the transfer or the balance delta of `payTo` differs from the price (400)
 * - `stale`: `blockTime` is missing or outside the freshness window
 * - `rpc_unavailable`: the RPC endpoint could not be reached or answered errors (503)
 */
export type PaymentVerificationReason =
  | 'not_found'
  | 'transaction_failed'
  | 'wrong_recipient'
  | 'mint_mismatch'
  | 'amount_mismatch'
  | 'stale'
  | 'rpc_unavailable';

/** Every {@link PaymentVerificationReason}, for metrics label sets and docs. */
export const PAYMENT_VERIFICATION_REASONS: readonly PaymentVerificationReason[] = [
  'not_found',
  'transaction_failed',
  'wrong_recipient',
  'mint_mismatch',
  'amount_mismatch',
  'stale',
  'rpc_unavailable',
];

/** A payment proof that did not verify; {@link verificationErrorToAppError} maps it to an answer. */
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
    context: { signature: string; network: X402Network; rpcMs: number; details?: Record<string, unknown>; cause?: unknown },
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

/** A payment proven on chain (ARCHITECTURE.md, "Payments", step 5). */
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

/** What the payment pipeline needs from a verifier; {@link SolanaPaymentVerifier} is the implementation. */
export interface PaymentVerifier {
  /** The network this verifier checks. */
  readonly network: X402Network;
  /** The advertised mint (base58). */
  readonly asset: string;
  /** The merchant token account (base58). */
  readonly payTo: string;
  /**
   * Proves that `signature` pays exactly `amountAtomic` of `asset` into `payTo`.
   * @throws PaymentVerificationError when it does not
   */
  verify(signature: string, amountAtomic: bigint): Promise<VerifiedPayment>;
}

/** Where and what a {@link SolanaPaymentVerifier} checks, per network. */
export interface SolanaPaymentVerifierConfig {
  /** The network name used in requirements and headers. */
  network: X402Network;
  /** JSON-RPC URL of that network; ignored when `connection` is given. */
  rpcUrl?: string;
  /** A ready web3.js v1 connection (instead of `rpcUrl`). */
  connection?: Connection;
  /** The USDC mint (base58). */
  asset: string;
  /** The merchant's USDC token account (base58). */
  payTo: string;
  /**
   * The merchant wallet that owns `payTo` (base58), used to recognise a payment in another mint sent
   * to another of its token accounts (`mint_mismatch`); read once from the chain when omitted.
   */
  payToOwner?: string;
}

/** Tuning of a {@link SolanaPaymentVerifier}. */
export interface SolanaPaymentVerifierOptions {
  /** Largest accepted `|now - blockTime|`, in seconds; default 300. */
  freshnessWindowSeconds?: number;
  /** `getTransaction` attempts while the transaction is not found or the RPC fails; default 4. */
  fetchAttempts?: number;
  /** Milliseconds between attempts; default 400. */
  fetchDelayMs?: number;
  /** Timeout of one RPC call in milliseconds (only with `rpcUrl`); default 10000. */
  rpcTimeoutMs?: number;
  /** The clock, for the freshness check; default `() => new Date()`. */
  now?: () => Date;
}

const DEFAULTS = { freshnessWindowSeconds: 300, fetchAttempts: 4, fetchDelayMs: 400, rpcTimeoutMs: 10_000 };

/**
 * Verifies x402 payments on one Solana network by their effect (ARCHITECTURE.md, "Payments: x402 on
 * Solana", steps 3–4), in this order:
 * 1. `getTransaction(sig, { commitment: "confirmed", maxSupportedTransactionVersion: 0 })` with bounded
 *    retries; not found → `not_found`; unreachable → `rpc_unavailable`;
 * 2. `meta.err` must be null → else `transaction_failed`;
 * 3. SPL Token / Token-2022 `transferChecked` instructions, top-level and inner, with account keys
 *    resolved as static keys + `meta.loadedAddresses.writable` + `.readonly`: one into `payTo` of
 *    `asset` for exactly the price; into `payTo` (or another token account of the merchant, the
 *    owner of `payTo`) but only other mints → `mint_mismatch`; none into the merchant →
 *    `wrong_recipient`; the right mint with another amount → `amount_mismatch`;
 * 4. the `postTokenBalances - preTokenBalances` delta of `payTo` for `asset` equals the price → else
 *    `amount_mismatch`;
 * 5. `blockTime` within the freshness window → else `stale`.
 * All amounts are `bigint` atomic units.
 */
export class SolanaPaymentVerifier implements PaymentVerifier {
  /** The network this verifier checks. */
  readonly network: X402Network;
  /** The advertised mint (base58). */
  readonly asset: string;
  /** The merchant token account (base58). */
  readonly payTo: string;
  /** The RPC endpoint URL (for messages). */
  readonly rpcUrl: string;
  private readonly connection: Connection;
  private payToOwner: Promise<string | undefined> | undefined;
  private readonly options: Required<Omit<SolanaPaymentVerifierOptions, 'now'>> & { now: () => Date };

  /**
   * @param config network, RPC (URL or connection), mint and merchant token account
   * @param options freshness window, retry policy, clock
   * @throws Error when neither `rpcUrl` nor `connection` is given
   */
  constructor(config: SolanaPaymentVerifierConfig, options: SolanaPaymentVerifierOptions = {}) {
    this.network = config.network;
    this.asset = config.asset;
    this.payTo = config.payTo;
    if (config.payToOwner) this.payToOwner = Promise.resolve(config.payToOwner);
    this.options = {
      freshnessWindowSeconds: options.freshnessWindowSeconds ?? DEFAULTS.freshnessWindowSeconds,
      fetchAttempts: Math.max(1, options.fetchAttempts ?? DEFAULTS.fetchAttempts),
      fetchDelayMs: options.fetchDelayMs ?? DEFAULTS.fetchDelayMs,
      rpcTimeoutMs: options.rpcTimeoutMs ?? DEFAULTS.rpcTimeoutMs,
      now: options.now ?? (() => new Date()),
    };
    if (config.connection) {
      this.connection = config.connection;
    } else if (config.rpcUrl) {
      this.connection = new Connection(config.rpcUrl, {
        commitment: 'confirmed',
        disableRetryOnRateLimit: true,
        fetch: rpcFetch(this.options.rpcTimeoutMs),
      });
    } else {
      throw new Error('SolanaPaymentVerifier needs rpcUrl or connection');
    }
    this.rpcUrl = this.connection.rpcEndpoint;
  }

  /**
   * Proves that `signature` pays exactly `amountAtomic` (atomic USDC units) of the configured mint
   * into the configured merchant account, within the freshness window.
   *
   * @returns the verified payment, with `rpcMs` = milliseconds spent in RPC calls
   * @throws PaymentVerificationError with the reason of the first failed check (see the class doc)
   */
  async verify(signature: string, amountAtomic: bigint): Promise<VerifiedPayment> {
    const fetched = await this.fetchTransaction(signature);
    const tx = fetched.tx;
    let rpcMs = fetched.rpcMs;
    const fail = (reason: PaymentVerificationReason, message: string, details?: Record<string, unknown>): never => {
      throw new PaymentVerificationError(reason, message, { signature, network: this.network, rpcMs, details });
    };
    const meta = tx.meta;
    if (!meta) return fail('not_found', 'The transaction has no status metadata yet; retry shortly');
    if (meta.err !== null && meta.err !== undefined) {
      return fail('transaction_failed', 'The payment transaction failed on chain', { error: meta.err });
    }

    const accountKeys = resolveAccountKeys(tx);
    const transfers = findTransfersChecked(tx, accountKeys);
    const toMerchant = transfers.filter((t) => t.destination === this.payTo);
    if (toMerchant.length === 0) {
      // Another mint can only land in another token account of the merchant: that is a mint mismatch.
      const otherMint = await this.transferToMerchantOwner(tx, accountKeys, transfers);
      rpcMs += otherMint.rpcMs;
      if (otherMint.transfer) {
        return fail('mint_mismatch', `The transfer to the merchant moves mint ${otherMint.transfer.mint}, expected ${this.asset}`, {
          expected: this.asset,
          actual: otherMint.transfer.mint,
        });
      }
      return fail('wrong_recipient', `The transaction does not transferChecked any tokens into ${this.payTo}`);
    }
    const ofAsset = toMerchant.filter((t) => t.mint === this.asset);
    if (ofAsset.length === 0) {
      return fail('mint_mismatch', `The transfer to ${this.payTo} moves mint ${toMerchant[0]?.mint}, expected ${this.asset}`, {
        expected: this.asset,
        actual: toMerchant[0]?.mint,
      });
    }
    const exact = ofAsset.find((t) => t.amountAtomic === amountAtomic);
    if (!exact) {
      const paid = ofAsset.reduce((sum, t) => sum + t.amountAtomic, 0n);
      return fail('amount_mismatch', `The transfer moves ${paid} atomic units, the price is ${amountAtomic}`, {
        expected: amountAtomic.toString(),
        actual: paid.toString(),
      });
    }

    const delta = balanceDelta(tx, accountKeys, this.payTo, this.asset);
    if (delta !== amountAtomic) {
      return fail('amount_mismatch', `The balance of ${this.payTo} changed by ${delta} atomic units, the price is ${amountAtomic}`, {
        expected: amountAtomic.toString(),
        actual: delta.toString(),
      });
    }

    if (tx.blockTime === null || tx.blockTime === undefined) {
      return fail('stale', 'The transaction has no block time, its freshness cannot be checked');
    }
    const ageSeconds = this.options.now().getTime() / 1000 - tx.blockTime;
    if (Math.abs(ageSeconds) > this.options.freshnessWindowSeconds) {
      return fail('stale', `The transaction is ${Math.round(ageSeconds)} s old; payments must be at most ${this.options.freshnessWindowSeconds} s old`, {
        blockTime: new Date(tx.blockTime * 1000).toISOString(),
        freshnessWindowSeconds: this.options.freshnessWindowSeconds,
      });
    }

    return {
      signature,
      network: this.network,
      payer: exact.authority,
      amountAtomic: exact.amountAtomic,
      asset: this.asset,
      payTo: this.payTo,
      slot: tx.slot,
      blockTime: new Date(tx.blockTime * 1000),
      rpcMs,
    };
  }

  /**
   * A transfer of another mint into a token account owned by the merchant (the owner of `payTo`), as
   * the owner is reported in `meta.postTokenBalances`.
   */
  private async transferToMerchantOwner(
    tx: VersionedTransactionResponse,
    accountKeys: readonly string[],
    transfers: readonly TransferChecked[],
  ): Promise<{ transfer: TransferChecked | undefined; rpcMs: number }> {
    const candidates = transfers.filter((t) => t.mint !== this.asset);
    if (candidates.length === 0) return { transfer: undefined, rpcMs: 0 };
    const started = performance.now();
    const owner = await this.merchantOwner();
    const rpcMs = performance.now() - started;
    if (!owner) return { transfer: undefined, rpcMs };
    const ownerOf = (account: string): string | undefined => {
      const index = accountKeys.indexOf(account);
      return tx.meta?.postTokenBalances?.find((b) => b.accountIndex === index)?.owner;
    };
    return { transfer: candidates.find((t) => ownerOf(t.destination) === owner), rpcMs };
  }

  /** The wallet that owns `payTo`: from the configuration, else read once from the chain. */
  private merchantOwner(): Promise<string | undefined> {
    this.payToOwner ??= this.connection
      .getAccountInfo(new PublicKey(this.payTo), 'confirmed')
      .then((info) => (info && info.data.length >= 64 ? new PublicKey(info.data.subarray(32, 64)).toBase58() : undefined))
      .catch(() => {
        this.payToOwner = undefined; // try again next time
        return undefined;
      });
    return this.payToOwner;
  }

  /** Fetches the transaction with bounded retries; measures the time spent in RPC calls. */
  private async fetchTransaction(signature: string): Promise<{ tx: VersionedTransactionResponse; rpcMs: number }> {
    let rpcMs = 0;
    let lastError: unknown;
    for (let attempt = 1; attempt <= this.options.fetchAttempts; attempt++) {
      if (attempt > 1) await delay(this.options.fetchDelayMs);
      const started = performance.now();
      try {
        const tx = await this.connection.getTransaction(signature, {
          commitment: 'confirmed',
          maxSupportedTransactionVersion: 0,
        });
        rpcMs += performance.now() - started;
        lastError = undefined;
        if (tx) return { tx, rpcMs: Math.round(rpcMs * 100) / 100 };
      } catch (error) {
        rpcMs += performance.now() - started;
        lastError = error;
      }
    }
    const context = { signature, network: this.network, rpcMs: Math.round(rpcMs * 100) / 100 };
    if (lastError !== undefined) {
      throw new PaymentVerificationError('rpc_unavailable', `The ${this.network} RPC endpoint is unavailable`, {
        ...context,
        cause: lastError,
      });
    }
    throw new PaymentVerificationError(
      'not_found',
      `Transaction ${signature} was not found on ${this.network} at confirmed commitment; wait for confirmation and retry`,
      context,
    );
  }
}

/**
 * The account keys of a transaction in index order: static keys, then the writable and readonly
 * addresses loaded from address lookup tables.
 */
export function resolveAccountKeys(tx: VersionedTransactionResponse): string[] {
  const keys = tx.transaction.message.staticAccountKeys.map((key) => key.toBase58());
  const loaded = tx.meta?.loadedAddresses;
  if (loaded) {
    for (const key of loaded.writable) keys.push(key.toBase58());
    for (const key of loaded.readonly) keys.push(key.toBase58());
  }
  return keys;
}

/** Every token `transferChecked` of a transaction, top-level and inner (CPI) instructions. */
export function findTransfersChecked(tx: VersionedTransactionResponse, accountKeys: readonly string[]): TransferChecked[] {
  const found: TransferChecked[] = [];
  for (const ix of tx.transaction.message.compiledInstructions) {
    const transfer = decodeTransferChecked(
      { programIdIndex: ix.programIdIndex, accountIndexes: ix.accountKeyIndexes, data: ix.data },
      accountKeys,
      'top-level',
    );
    if (transfer) found.push(transfer);
  }
  for (const group of tx.meta?.innerInstructions ?? []) {
    for (const ix of group.instructions) {
      let data: Uint8Array;
      try {
        data = decodeBase58Data(ix.data);
      } catch {
        continue;
      }
      const transfer = decodeTransferChecked({ programIdIndex: ix.programIdIndex, accountIndexes: ix.accounts, data }, accountKeys, 'inner');
      if (transfer) found.push(transfer);
    }
  }
  return found;
}

/**
 * `post - pre` token balance of `account` for `mint`, from `meta.postTokenBalances` and
 * `meta.preTokenBalances` (a missing entry counts as 0: e.g. an account created by the transaction).
 */
export function balanceDelta(tx: VersionedTransactionResponse, accountKeys: readonly string[], account: string, mint: string): bigint {
  const indexes = new Set<number>();
  accountKeys.forEach((key, index) => {
    if (key === account) indexes.add(index);
  });
  const sum = (balances: TokenBalance[] | null | undefined): bigint => {
    let total = 0n;
    for (const balance of balances ?? []) {
      if (indexes.has(balance.accountIndex) && balance.mint === mint) total += BigInt(balance.uiTokenAmount.amount);
    }
    return total;
  };
  return sum(tx.meta?.postTokenBalances) - sum(tx.meta?.preTokenBalances);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
