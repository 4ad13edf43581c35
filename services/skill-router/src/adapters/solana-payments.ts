import type { X402Network } from '@repo/schemas';
import { isPaymentVerificationError } from '@repo/x402-core';
import { SolanaPaymentVerifier } from '@repo/x402-solana';
import { LRUCache } from 'lru-cache';
import type { PaymentChecker, ProofRefusal, ProvedPayment } from '../domain/payment-proofs';

/** Where payments on one network are checked: its RPC endpoint and USDC mint. */
export interface PaymentNetwork {
  rpcUrl: string;
  /** The USDC mint (base58). */
  mint: string;
}

/** Settings of {@link createSolanaPaymentChecker}. */
export interface SolanaPaymentCheckerOptions {
  /** The networks whose payments are accepted; a network without an entry is refused. */
  networks: Partial<Record<X402Network, PaymentNetwork>>;
  /** How old (block time, seconds) a payment may be when it is first offered. */
  maxAgeSeconds: number;
  /** Verifiers kept open (one per network and `payTo`, each with its RPC connections); default 64. */
  maxVerifiers?: number;
}

/** A {@link PaymentChecker} with a `close()` for shutdown. */
export type SolanaPaymentChecker = PaymentChecker & { close(): Promise<void> };

/**
 * Checks report payments with `@repo/x402-solana`'s `SolanaPaymentVerifier`, the same verification
 * as paid requests elsewhere (README, "Reputation"): `getTransaction` with bounded
 * retries behind a circuit breaker, then the effect — a `transferChecked` of exactly the price of the
 * network's USDC into the skill's `payTo`, confirmed by its balance delta, `meta.err` null, block time
 * within `maxAgeSeconds`. A verifier is bound to one `payTo`, so one is kept per network and `payTo`
 * in a bounded LRU (closed when evicted), each with at most 4 RPC connections.
 */
export function createSolanaPaymentChecker(options: SolanaPaymentCheckerOptions): SolanaPaymentChecker {
  let closing = false;
  const verifiers = new LRUCache<string, SolanaPaymentVerifier>({
    max: options.maxVerifiers ?? 64,
    // An evicted verifier's connections close in the background; close() awaits its own.
    dispose: (verifier) => {
      if (!closing) void verifier.close();
    },
  });
  const verifierFor = (network: X402Network, config: PaymentNetwork, payTo: string) => {
    const key = `${network}|${payTo}`;
    let verifier = verifiers.get(key);
    if (!verifier) {
      verifier = new SolanaPaymentVerifier(
        { network, rpcUrl: config.rpcUrl, asset: config.mint, payTo },
        {
          freshnessWindowSeconds: options.maxAgeSeconds,
          fetchAttempts: 2,
          fetchDelayMs: 400,
          rpcTimeoutMs: 5000,
          rpcMaxConnections: 4,
        },
      );
      verifiers.set(key, verifier);
    }
    return verifier;
  };

  return {
    accepts: (network) => options.networks[network] !== undefined,
    async check({ network, payTo, signature, amountAtomic }): Promise<ProvedPayment | ProofRefusal> {
      const config = options.networks[network];
      if (!config) return { refused: true, reason: 'invalid_network', message: `${network} is not accepted` };
      try {
        const paid = await verifierFor(network, config, payTo).verify(signature, amountAtomic);
        return { payer: paid.payer, amountAtomic: paid.amountAtomic };
      } catch (err) {
        if (isPaymentVerificationError(err))
          return { refused: true, reason: err.reason, message: err.message };
        throw err;
      }
    },
    async close() {
      closing = true;
      const open = [...verifiers.values()];
      verifiers.clear();
      await Promise.all(open.map((v) => v.close()));
    },
  };
}
