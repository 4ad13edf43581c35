/** Settings of a {@link CircuitBreaker}. */
export interface CircuitBreakerOptions {
  /** Consecutive failed calls that open the circuit; default 5. */
  failureThreshold?: number;
  /** Milliseconds the circuit stays open before one probe call is let through; default 10000. */
  openMs?: number;
  /** The clock, in milliseconds; default `Date.now`. */
  now?: () => number;
}

/**
 * A consecutive-failure circuit breaker for one upstream (the payment verifier's RPC endpoint, README
 * "Paying for data (x402)"): `closed` lets every call through; `failureThreshold` failures in a row
 * open it, and for `openMs` calls fail fast without reaching the upstream; then it is `half_open` and
 * lets exactly one probe through: a success closes it, a failure opens it again.
 */
export class CircuitBreaker {
  private readonly failureThreshold: number;
  private readonly openMs: number;
  private readonly now: () => number;
  private failures = 0;
  private openedAt: number | undefined;
  private probing = false;

  /** @param options threshold, open duration (milliseconds) and clock */
  constructor(options: CircuitBreakerOptions = {}) {
    this.failureThreshold = Math.max(1, options.failureThreshold ?? 5);
    this.openMs = options.openMs ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  /** `closed`, `open` (failing fast) or `half_open` (the next call is a probe). */
  get state(): 'closed' | 'open' | 'half_open' {
    if (this.openedAt === undefined) return 'closed';
    return this.now() - this.openedAt >= this.openMs ? 'half_open' : 'open';
  }

  /**
   * Asks to make a call. `true`: go ahead and report its outcome with {@link succeeded} or
   * {@link failed}; `false`: the circuit is open (or a probe is already out), fail fast.
   */
  tryAcquire(): boolean {
    const state = this.state;
    if (state === 'closed') return true;
    if (state === 'open' || this.probing) return false;
    this.probing = true;
    return true;
  }

  /** Reports a call that reached the upstream and got a usable answer. */
  succeeded(): void {
    this.failures = 0;
    this.openedAt = undefined;
    this.probing = false;
  }

  /** Reports a call that failed (unreachable, timed out, an error answer). */
  failed(): void {
    this.failures += 1;
    if (this.probing || this.failures >= this.failureThreshold) this.openedAt = this.now();
    this.probing = false;
  }
}
