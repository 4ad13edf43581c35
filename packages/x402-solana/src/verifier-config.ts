import type { X402Network } from '@repo/schemas';

/** Where and what a `SolanaPaymentVerifier` checks, per network. */
export interface SolanaPaymentVerifierConfig {
  /** The network name used in requirements and headers. */
  network: X402Network;
  /** JSON-RPC URL (`http:` or `https:`) of that network. */
  rpcUrl: string;
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

/** Tuning of a `SolanaPaymentVerifier`. */
export interface SolanaPaymentVerifierOptions {
  /** Largest accepted `|first sighting - blockTime|`, in seconds; default 300. */
  freshnessWindowSeconds?: number;
  /** `getTransaction` attempts while the transaction is not found or the RPC fails; default 4. */
  fetchAttempts?: number;
  /** Milliseconds between attempts; default 400. */
  fetchDelayMs?: number;
  /**
   * Timeout of one RPC call in milliseconds (connecting, then the answer's headers, then any pause in
   * its body); default 10000.
   */
  rpcTimeoutMs?: number;
  /** Most keep-alive connections to the RPC endpoint; more concurrent calls queue. Default 32. */
  rpcMaxConnections?: number;
  /** The clock, for the freshness check of a signature with no recorded sighting; default `() => new Date()`. */
  now?: () => Date;
  /**
   * Milliseconds a signature the RPC did not find is answered `not_found` again without a call;
   * default 2000 (0 disables).
   */
  notFoundCacheMs?: number;
  /** Consecutive failed RPC calls that open the circuit breaker; default 5. */
  breakerFailureThreshold?: number;
  /** Milliseconds the open breaker fails calls fast before it lets one probe through; default 10000. */
  breakerOpenMs?: number;
  /** Told of every RPC call and of every call avoided, for metrics; must not throw. */
  onRpcCall?: (call: RpcCallEvent) => void;
}

/**
 * One RPC call of the verifier, or one it did not make: `found` / `not_found` (the transaction was or
 * was not there), `error` (unreachable, timed out or an unusable answer), `cached_not_found` (answered
 * from the not-found cache) and `short_circuit` (failed fast by the open circuit breaker).
 */
export interface RpcCallEvent {
  /** The network of the verifier. */
  network: X402Network;
  /** The JSON-RPC method. */
  method: 'getTransaction' | 'getAccountInfo';
  /** What happened. */
  outcome: 'found' | 'not_found' | 'error' | 'cached_not_found' | 'short_circuit';
}
