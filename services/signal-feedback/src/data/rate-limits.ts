import type { Pool } from 'pg';
import { clientIpKey, createRateLimit, type RateDecision, type RateLimit } from '@repo/service-kit';

/** Limits of {@link AuthRateLimiter}. */
export interface AuthRateLimits {
  /**
   * Failed log-ins of one address from one client (IPv4 address or IPv6 /64) before each further
   * failure makes that pair wait: 1 s, 2 s, 4 s … up to `maxDelaySeconds`.
   */
  loginFreeFailures: number;
  /** Longest wait after a failed log-in, in seconds. */
  maxDelaySeconds: number;
  /** Log-in attempts per client (IPv4 address or IPv6 /64) per window. */
  loginPerIp: number;
  /** Window of `loginPerIp`, in seconds. */
  windowSeconds: number;
  /** Sign-ups per client (IPv4 address or IPv6 /64) per hour. */
  signupPerIpPerHour: number;
}

/**
 * Log-in and sign-up throttling (README, "Sessions and CSRF") over `@repo/service-kit`'s
 * `createRateLimit`, one limit per counter, all in the `rate_limits` table created by the migrations,
 * so the limits hold across replicas. Failed log-ins slow down the pair (address, client) that made
 * them with growing delays instead of locking the address: the real user logging in from elsewhere is
 * not refused. Clients are keyed by IPv4 address or IPv6 /64 (`clientIpKey`).
 *
 * Rows (`<prefix>:<key>`): `login_fail:<email>|<client>` failures of a pair, counted for a day;
 * `login_wait:<email>|<client>` the pair's current wait; `login_ip:<client>` log-in attempts per
 * window; `signup_ip:<client>` sign-ups per hour. `<email>` is trimmed and lower-cased.
 * Every method throws whatever PostgreSQL throws.
 */
export class AuthRateLimiter {
  private readonly loginFailures: RateLimit;
  private readonly loginWait: RateLimit;
  private readonly loginIp: RateLimit;
  private readonly signupIp: RateLimit;
  private readonly freeFailures: number;
  private readonly maxDelaySeconds: number;

  /** @param pool the service's rate-limit pool (`Database.rateLimitPool`: asynchronous commit) */
  constructor(pool: Pool, limits: AuthRateLimits) {
    // Failures are counted for a day (never refused: the points are out of reach); the wait itself
    // is a block on a second limit.
    this.loginFailures = createRateLimit(pool, {
      keyPrefix: 'login_fail',
      points: 1_000_000,
      durationSeconds: 86_400,
    });
    this.loginWait = createRateLimit(pool, { keyPrefix: 'login_wait', points: 1, durationSeconds: 1 });
    this.loginIp = createRateLimit(pool, {
      keyPrefix: 'login_ip',
      points: limits.loginPerIp,
      durationSeconds: limits.windowSeconds,
    });
    this.signupIp = createRateLimit(pool, {
      keyPrefix: 'signup_ip',
      points: limits.signupPerIpPerHour,
      durationSeconds: 3600,
    });
    this.freeFailures = limits.loginFreeFailures;
    this.maxDelaySeconds = limits.maxDelaySeconds;
  }

  /**
   * Refuses a log-in attempt while the (address, client) pair waits after its failures (counting
   * nothing); otherwise counts it against the client's attempts per window.
   * @param ip `req.ip`
   * @returns allowed, or refused with the seconds to wait (at least 1)
   */
  async loginAttempt(email: string, ip: string | undefined): Promise<RateDecision> {
    const waitSeconds = await this.loginWait.refusedFor(pairKey(email, ip));
    if (waitSeconds > 0) return { allowed: false, retryAfterSeconds: waitSeconds };
    return this.loginIp.consume(clientIpKey(ip));
  }

  /**
   * Counts a failed log-in of the pair; past the free failures the pair waits 1 s, then 2 s, 4 s …
   * up to the longest delay before its next attempt.
   * @param ip `req.ip`
   * @returns the seconds the pair now waits (0 while failures are still free)
   */
  async loginFailed(email: string, ip: string | undefined): Promise<number> {
    const key = pairKey(email, ip);
    const failures = await this.loginFailures.penalty(key);
    if (failures <= this.freeFailures) return 0;
    const seconds = Math.min(this.maxDelaySeconds, 2 ** Math.min(30, failures - this.freeFailures - 1));
    await this.loginWait.block(key, seconds);
    return seconds;
  }

  /**
   * Forgets the pair's failures and wait after a successful log-in.
   * @param ip `req.ip`
   */
  async loginSucceeded(email: string, ip: string | undefined): Promise<void> {
    const key = pairKey(email, ip);
    await Promise.all([this.loginFailures.delete(key), this.loginWait.delete(key)]);
  }

  /**
   * Counts one sign-up of the client (IPv4 address or IPv6 /64).
   * @param ip `req.ip`
   * @returns allowed, or refused with the seconds until the hour's window resets (at least 1)
   */
  signupAttempt(ip: string | undefined): Promise<RateDecision> {
    return this.signupIp.consume(clientIpKey(ip));
  }
}

/** The key of an (address, client) pair: the trimmed, lower-cased address and the client's IPv4 or IPv6 /64. */
function pairKey(email: string, ip: string | undefined): string {
  return `${email.trim().toLowerCase()}|${clientIpKey(ip)}`;
}
