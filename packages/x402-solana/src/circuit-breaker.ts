import { BrokenCircuitError, CircuitState, ConsecutiveBreaker, circuitBreaker, handleAll } from 'cockatiel';

/** Settings of {@link createCircuitBreaker}. */
export interface CircuitBreakerOptions {
  /** Consecutive failed calls that open the circuit; default 5. */
  failureThreshold?: number;
  /** Milliseconds the circuit stays open before one probe call is let through; default 10000. */
  openMs?: number;
}

/** A consecutive-failure circuit breaker for one upstream (see {@link createCircuitBreaker}). */
export interface CircuitBreaker {
  /**
   * `closed`; `open` (failing fast, and still so once `openMs` passed until the next call probes);
   * `half_open` (a probe call is out).
   */
  readonly state: 'closed' | 'open' | 'half_open';
  /**
   * Makes `call` through the breaker: a call that throws counts as a failure, any answer as a success.
   * @returns what `call` resolved to
   * @throws BrokenCircuitError (cockatiel's) without making the call while the circuit is open or a
   *   probe is out; otherwise whatever `call` threw
   */
  execute<T>(call: () => Promise<T>): Promise<T>;
}

/**
 * A consecutive-failure circuit breaker for one upstream (the payment verifier's RPC endpoint, docs/payments.md
 * "Paying for data (x402)"), cockatiel's `ConsecutiveBreaker` policy: `closed` lets every call
 * through; `failureThreshold` failures in a row open it, and for `openMs` calls fail fast without
 * reaching the upstream; then exactly one probe goes through, while other calls still fail fast: a
 * success closes it, a failure opens it again.
 * @param options threshold and open duration (milliseconds)
 */
export function createCircuitBreaker(options: CircuitBreakerOptions = {}): CircuitBreaker {
  const policy = circuitBreaker(handleAll, {
    halfOpenAfter: options.openMs ?? 10_000,
    breaker: new ConsecutiveBreaker(Math.max(1, options.failureThreshold ?? 5)),
  });
  return {
    get state() {
      if (policy.state === CircuitState.Closed) return 'closed';
      return policy.state === CircuitState.HalfOpen ? 'half_open' : 'open';
    },
    execute(call) {
      // cockatiel holds calls made during the probe until it is done; the verifier fails them fast.
      if (policy.state === CircuitState.HalfOpen) return Promise.reject(new BrokenCircuitError());
      return policy.execute(() => call());
    },
  };
}
