import type { X402Network } from '@repo/schemas';
import {
  PaymentVerificationError,
  type PaymentVerificationReason,
  type PaymentVerifier,
  type VerifiedPayment,
  type VerifyOptions,
} from '@repo/x402-core';
import { isBrokenCircuitError } from 'cockatiel';
import { createCircuitBreaker, type CircuitBreaker } from './circuit-breaker';
import { SolanaRpcClient, tokenAccountOwner, type RpcTransaction } from './rpc-client';
import { balanceDelta, findTransfersChecked, referencesOf, resolveAccountKeys } from './transaction-effects';
import type { TransferChecked } from './transfers';
import type {
  RpcCallEvent,
  SolanaPaymentVerifierConfig,
  SolanaPaymentVerifierOptions,
} from './verifier-config';

export { balanceDelta, findTransfersChecked, resolveAccountKeys } from './transaction-effects';
export type {
  RpcCallEvent,
  SolanaPaymentVerifierConfig,
  SolanaPaymentVerifierOptions,
} from './verifier-config';

const DEFAULTS = {
  freshnessWindowSeconds: 300,
  fetchAttempts: 4,
  fetchDelayMs: 400,
  rpcTimeoutMs: 10_000,
  rpcMaxConnections: 32,
  notFoundCacheMs: 2_000,
};

/** Most signatures the not-found cache holds (the oldest go first). */
const NOT_FOUND_CACHE_SIZE = 10_000;

/**
 * Verifies x402 payments on one Solana network by their effect (docs/architecture.md, "How a paid
 * request flows (market-intel)", step 2), in this order:
 * 1. `getTransaction(sig, { encoding: "json", commitment: "confirmed", maxSupportedTransactionVersion: 0 })`
 *    with bounded retries (`fetchAttempts`, `fetchDelayMs` apart); not found (or no `meta` yet) →
 *    `not_found`; unreachable, timed out, an HTTP or JSON-RPC error or a malformed answer on the last
 *    attempt → `rpc_unavailable`;
 * 2. `meta.err` must be null → else `transaction_failed`;
 * 3. SPL Token / Token-2022 `transferChecked` instructions, top-level and inner, with account keys
 *    resolved as static keys + `meta.loadedAddresses.writable` + `.readonly`: one into `payTo` of
 *    `asset` for exactly the price; into `payTo` (or another token account of the merchant, the
 *    owner of `payTo`) but only other mints → `mint_mismatch`; none into the merchant →
 *    `wrong_recipient`; the right mint with another amount → `amount_mismatch`;
 * 4. the `postTokenBalances - preTokenBalances` delta of `payTo` for `asset` equals the price → else
 *    `amount_mismatch`;
 * 5. when the transfer carries Solana Pay references (non-signer accounts after its four) and this
 *    request's reference is known: one of them is it → else `reference_mismatch`; none while
 *    references are required → `reference_missing`;
 * 6. `blockTime` within the freshness window around the first sighting (or now) → else `stale`.
 * All amounts are `bigint` atomic units.
 *
 * RPC cost is bounded: a signature not found is answered from a short cache for `notFoundCacheMs`,
 * and after `breakerFailureThreshold` failed calls in a row a circuit breaker fails calls fast
 * (`rpc_unavailable`) for `breakerOpenMs` before one probe call tries the endpoint again.
 *
 * The RPC calls go through a small JSON-RPC client of this package (one keep-alive undici `Pool` per
 * verifier, one `JSON.parse` per answer, zod validation of only the fields read here), not web3.js:
 * verification is on every paid request's path and must cost little CPU.
 */
export class SolanaPaymentVerifier implements PaymentVerifier {
  /** The network this verifier checks. */
  readonly network: X402Network;
  /** The advertised mint (base58). */
  readonly asset: string;
  /** The merchant token account (base58). */
  readonly payTo: string;
  /**
   * Seconds a payment may be old when first seen, in block time: the freshness window, advertised
   * as the push requirement's `maxTimeoutSeconds` (what this verifier enforces).
   */
  readonly maxTimeoutSeconds: number;
  /** The RPC endpoint URL (for messages). */
  readonly rpcUrl: string;
  private readonly rpc: SolanaRpcClient;
  private payToOwner: Promise<string | undefined> | undefined;
  private readonly options: Required<
    Omit<SolanaPaymentVerifierOptions, 'now' | 'onRpcCall' | 'breakerFailureThreshold' | 'breakerOpenMs'>
  > & { now: () => Date };
  private readonly breaker: CircuitBreaker;
  private readonly onRpcCall: ((call: RpcCallEvent) => void) | undefined;
  /** Signatures the RPC did not find, with the time (ms) until which that answer stands. */
  private readonly notFound = new Map<string, number>();

  /**
   * @param config network, RPC URL, mint and merchant token account
   * @param options freshness window, retry policy, RPC timeout and pool size, clock
   * @throws TypeError when `rpcUrl` is missing or not an http(s) URL
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
      rpcMaxConnections: options.rpcMaxConnections ?? DEFAULTS.rpcMaxConnections,
      now: options.now ?? (() => new Date()),
      notFoundCacheMs: options.notFoundCacheMs ?? DEFAULTS.notFoundCacheMs,
    };
    this.maxTimeoutSeconds = this.options.freshnessWindowSeconds;
    this.breaker = createCircuitBreaker({
      ...(options.breakerFailureThreshold === undefined
        ? {}
        : { failureThreshold: options.breakerFailureThreshold }),
      ...(options.breakerOpenMs === undefined ? {} : { openMs: options.breakerOpenMs }),
    });
    this.onRpcCall = options.onRpcCall;
    if (!config.rpcUrl) throw new TypeError('SolanaPaymentVerifier needs rpcUrl');
    this.rpc = new SolanaRpcClient(config.rpcUrl, {
      timeoutMs: this.options.rpcTimeoutMs,
      maxConnections: this.options.rpcMaxConnections,
    });
    this.rpcUrl = config.rpcUrl;
  }

  /** Closes the verifier's RPC connections (for a graceful shutdown); `verify` must not be called after. */
  close(): Promise<void> {
    return this.rpc.close();
  }

  /**
   * Proves that `signature` pays exactly `amountAtomic` (atomic USDC units) of the configured mint
   * into the configured merchant account, within the freshness window of its first sighting, and,
   * when `options.reference` is given, for this request.
   *
   * @param options attempts, first sighting, this request's reference and whether one is required
   * @returns the verified payment, with `rpcMs` = milliseconds spent in RPC calls
   * @throws PaymentVerificationError with the reason of the first failed check (see the class doc)
   */
  async verify(
    signature: string,
    amountAtomic: bigint,
    options: VerifyOptions = {},
  ): Promise<VerifiedPayment> {
    const fetched = await this.fetchTransaction(
      signature,
      Math.max(1, options.attempts ?? this.options.fetchAttempts),
      options.landed ?? false,
    );
    const tx = fetched.tx;
    let rpcMs = fetched.rpcMs;
    const fail = (
      reason: PaymentVerificationReason,
      message: string,
      details?: Record<string, unknown>,
    ): never => {
      throw new PaymentVerificationError(reason, message, {
        signature,
        network: this.network,
        rpcMs,
        details,
      });
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
        return fail(
          'mint_mismatch',
          `The transfer to the merchant moves mint ${otherMint.transfer.mint}, expected ${this.asset}`,
          {
            expected: this.asset,
            actual: otherMint.transfer.mint,
          },
        );
      }
      return fail(
        'wrong_recipient',
        `The transaction does not transferChecked any tokens into ${this.payTo}`,
      );
    }
    const ofAsset = toMerchant.filter((t) => t.mint === this.asset);
    if (ofAsset.length === 0) {
      return fail(
        'mint_mismatch',
        `The transfer to ${this.payTo} moves mint ${toMerchant[0]?.mint}, expected ${this.asset}`,
        {
          expected: this.asset,
          actual: toMerchant[0]?.mint,
        },
      );
    }
    const exact = ofAsset.find((t) => t.amountAtomic === amountAtomic);
    if (!exact) {
      const paid = ofAsset.reduce((sum, t) => sum + t.amountAtomic, 0n);
      return fail(
        'amount_mismatch',
        `The transfer moves ${paid} atomic units, the price is ${amountAtomic}`,
        {
          expected: amountAtomic.toString(),
          actual: paid.toString(),
        },
      );
    }

    const delta = balanceDelta(tx, accountKeys, this.payTo, this.asset);
    if (delta !== amountAtomic) {
      return fail(
        'amount_mismatch',
        `The balance of ${this.payTo} changed by ${delta} atomic units, the price is ${amountAtomic}`,
        {
          expected: amountAtomic.toString(),
          actual: delta.toString(),
        },
      );
    }

    if (options.reference !== undefined) {
      const references = referencesOf(tx, exact);
      if (references.length > 0 && !references.includes(options.reference)) {
        return fail(
          'reference_mismatch',
          'The payment carries the reference of another request: it pays for that request only',
        );
      }
      if (references.length === 0 && options.requireReference) {
        return fail(
          'reference_missing',
          "The payment carries no reference: add this request's extra.reference to the transferChecked as a read-only account",
        );
      }
    }

    if (tx.blockTime === null || tx.blockTime === undefined) {
      return fail('stale', 'The transaction has no block time, its freshness cannot be checked');
    }
    const seenAt = options.firstSeenAt ?? this.options.now();
    const ageSeconds = seenAt.getTime() / 1000 - tx.blockTime;
    if (Math.abs(ageSeconds) > this.options.freshnessWindowSeconds) {
      return fail(
        'stale',
        `The transaction was ${Math.round(ageSeconds)} s old when first presented; payments must be at most ${this.options.freshnessWindowSeconds} s old`,
        {
          blockTime: new Date(tx.blockTime * 1000).toISOString(),
          firstSeenAt: seenAt.toISOString(),
          freshnessWindowSeconds: this.options.freshnessWindowSeconds,
        },
      );
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
    tx: RpcTransaction,
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
    this.payToOwner ??= this.rpc
      .getAccountInfo(this.payTo)
      .then((info) => {
        this.report('getAccountInfo', info ? 'found' : 'not_found');
        return info ? tokenAccountOwner(info.data) : undefined;
      })
      .catch(() => {
        this.report('getAccountInfo', 'error');
        this.payToOwner = undefined; // try again next time
        return undefined;
      });
    return this.payToOwner;
  }

  /**
   * Fetches the transaction with bounded retries, through the not-found cache (unless `landed`: the
   * caller just saw it confirmed) and the circuit breaker; measures the time spent in RPC calls.
   */
  private async fetchTransaction(
    signature: string,
    attempts: number,
    landed: boolean,
  ): Promise<{ tx: RpcTransaction; rpcMs: number }> {
    const cachedUntil = this.notFound.get(signature);
    if (cachedUntil !== undefined) {
      if (cachedUntil > Date.now() && !landed) {
        this.report('getTransaction', 'cached_not_found');
        throw this.notFoundError(signature, 0);
      }
      this.notFound.delete(signature);
    }
    let rpcMs = 0;
    let lastError: unknown;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      if (attempt > 1) await delay(this.options.fetchDelayMs);
      const started = performance.now();
      try {
        const tx = await this.breaker.execute(() => this.rpc.getTransaction(signature));
        rpcMs += performance.now() - started;
        this.report('getTransaction', tx ? 'found' : 'not_found');
        lastError = undefined;
        if (tx) return { tx, rpcMs: round(rpcMs) };
      } catch (error) {
        if (isBrokenCircuitError(error)) {
          this.report('getTransaction', 'short_circuit');
          throw new PaymentVerificationError(
            'rpc_unavailable',
            `The ${this.network} RPC endpoint is unavailable (recent calls failed; retrying shortly)`,
            { signature, network: this.network, rpcMs: round(rpcMs) },
          );
        }
        rpcMs += performance.now() - started;
        this.report('getTransaction', 'error');
        lastError = error;
      }
    }
    if (lastError !== undefined) {
      throw new PaymentVerificationError(
        'rpc_unavailable',
        `The ${this.network} RPC endpoint is unavailable`,
        { signature, network: this.network, rpcMs: round(rpcMs), cause: lastError },
      );
    }
    this.rememberNotFound(signature);
    throw this.notFoundError(signature, round(rpcMs));
  }

  private notFoundError(signature: string, rpcMs: number): PaymentVerificationError {
    return new PaymentVerificationError(
      'not_found',
      `Transaction ${signature} was not found on ${this.network} at confirmed commitment; wait for confirmation and retry`,
      { signature, network: this.network, rpcMs },
    );
  }

  private rememberNotFound(signature: string): void {
    if (this.options.notFoundCacheMs <= 0) return;
    if (this.notFound.size >= NOT_FOUND_CACHE_SIZE) {
      const oldest = this.notFound.keys().next();
      if (!oldest.done) this.notFound.delete(oldest.value);
    }
    this.notFound.set(signature, Date.now() + this.options.notFoundCacheMs);
  }

  private report(method: RpcCallEvent['method'], outcome: RpcCallEvent['outcome']): void {
    if (!this.onRpcCall) return;
    try {
      this.onRpcCall({ network: this.network, method, outcome });
    } catch {
      // A metrics hook must never break a payment.
    }
  }
}

/** Milliseconds rounded to hundredths, as reported in `rpcMs`. */
function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
