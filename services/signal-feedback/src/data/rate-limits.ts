import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { Pool } from 'pg';
import { clientIpKey } from '@repo/service-kit';

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
  /** Window in seconds. */
  windowSeconds: number;
  /** Sign-ups per client IP per hour. */
  signupPerIpPerHour: number;
}

/** Result of a rate-limit check: allowed, or refused with the seconds to wait. */
export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/**
 * Log-in and sign-up throttling in PostgreSQL (rate-limiter-flexible's Postgres store over the
 * `rate_limits` table created by the migrations), so the limits hold across replicas (README,
 * "Sessions and CSRF"). Failed log-ins slow down the pair (address, client) that made them with growing
 * delays instead of locking the address: the real user logging in from elsewhere is not refused.
 * Clients are keyed by IPv4 address or IPv6 /64.
 */
export class AuthRateLimiter {
  private readonly loginFailures: RateLimiterPostgres;
  private readonly loginBlocked: RateLimiterPostgres;
  private readonly loginIp: RateLimiterPostgres;
  private readonly signupIp: RateLimiterPostgres;
  private readonly freeFailures: number;
  private readonly maxDelaySeconds: number;

  /** @param pool a `pg` pool on the service's database */
  constructor(pool: Pool, limits: AuthRateLimits) {
    const common = {
      storeClient: pool,
      storeType: 'pool',
      tableName: 'rate_limits',
      tableCreated: true,
      clearExpiredByTimeout: false,
    };
    // Failures are counted for a day; the wait itself is a block on a second limiter.
    this.loginFailures = new RateLimiterPostgres({
      ...common,
      keyPrefix: 'login_fail',
      points: 1_000_000,
      duration: 86_400,
    });
    this.loginBlocked = new RateLimiterPostgres({
      ...common,
      keyPrefix: 'login_wait',
      points: 1,
      duration: 1,
    });
    this.freeFailures = limits.loginFreeFailures;
    this.maxDelaySeconds = limits.maxDelaySeconds;
    this.loginIp = new RateLimiterPostgres({
      ...common,
      keyPrefix: 'login_ip',
      points: limits.loginPerIp,
      duration: limits.windowSeconds,
    });
    this.signupIp = new RateLimiterPostgres({
      ...common,
      keyPrefix: 'signup_ip',
      points: limits.signupPerIpPerHour,
      duration: 3600,
    });
  }

  /**
   * Counts one log-in attempt of the client, and refuses it while the (address, client) pair waits
   * after its failures.
   * @param ip `req.ip`
   */
  async loginAttempt(email: string, ip: string | undefined): Promise<RateDecision> {
    const waiting = await this.loginBlocked.get(pairKey(email, ip));
    if (waiting && waiting.consumedPoints > 1 && waiting.msBeforeNext > 0) {
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(waiting.msBeforeNext / 1000)) };
    }
    return consume(this.loginIp, clientIpKey(ip));
  }

  /**
   * Counts a failed log-in of the pair; past the free failures the pair waits 1 s, then 2 s, 4 s …
   * up to the longest delay before its next attempt.
   * @returns the seconds the pair now waits (0 while failures are still free)
   */
  async loginFailed(email: string, ip: string | undefined): Promise<number> {
    const key = pairKey(email, ip);
    const failures = (await this.loginFailures.penalty(key, 1)).consumedPoints;
    if (failures <= this.freeFailures) return 0;
    const seconds = Math.min(this.maxDelaySeconds, 2 ** Math.min(30, failures - this.freeFailures - 1));
    await this.loginBlocked.block(key, seconds);
    return seconds;
  }

  /** Forgets the pair's failures after a successful log-in. */
  async loginSucceeded(email: string, ip: string | undefined): Promise<void> {
    const key = pairKey(email, ip);
    await Promise.all([this.loginFailures.delete(key), this.loginBlocked.delete(key)]);
  }

  /** Counts one sign-up for the client (IPv4 address or IPv6 /64). */
  signupAttempt(ip: string | undefined): Promise<RateDecision> {
    return consume(this.signupIp, clientIpKey(ip));
  }
}

/** The key of an (address, client) pair: the lower-cased address and the client's IPv4 or IPv6 /64. */
function pairKey(email: string, ip: string | undefined): string {
  return `${email.trim().toLowerCase()}|${clientIpKey(ip)}`;
}

async function consume(limiter: RateLimiterPostgres, key: string): Promise<RateDecision> {
  try {
    await limiter.consume(key);
    return { allowed: true };
  } catch (rejection) {
    if (rejection instanceof RateLimiterRes)
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)) };
    throw rejection;
  }
}
