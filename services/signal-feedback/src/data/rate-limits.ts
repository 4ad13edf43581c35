import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { Pool } from 'pg';

/** Limits of {@link AuthRateLimiter}. */
export interface AuthRateLimits {
  /** Log-in attempts per e-mail address per window. */
  loginPerEmail: number;
  /** Log-in attempts per client IP per window. */
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
 * `rate_limits` table created by the migrations), so the limits hold across replicas.
 */
export class AuthRateLimiter {
  private readonly loginEmail: RateLimiterPostgres;
  private readonly loginIp: RateLimiterPostgres;
  private readonly signupIp: RateLimiterPostgres;

  /** @param pool a `pg` pool on the service's database */
  constructor(
    private readonly pool: Pool,
    limits: AuthRateLimits,
  ) {
    const common = {
      storeClient: pool,
      storeType: 'pool',
      tableName: 'rate_limits',
      tableCreated: true,
      clearExpiredByTimeout: false,
    };
    this.loginEmail = new RateLimiterPostgres({
      ...common,
      keyPrefix: 'login_email',
      points: limits.loginPerEmail,
      duration: limits.windowSeconds,
    });
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

  /** Counts one log-in attempt for the address and the IP. */
  async loginAttempt(email: string, ip: string): Promise<RateDecision> {
    const results = await Promise.all([consume(this.loginEmail, email), consume(this.loginIp, ip)]);
    return results.find((r) => !r.allowed) ?? { allowed: true };
  }

  /** Forgets the address's failed attempts after a successful log-in. */
  async loginSucceeded(email: string): Promise<void> {
    await this.loginEmail.delete(email);
  }

  /**
   * Deletes expired counters (the store keeps one row per address and IP otherwise).
   * @returns the number of rows deleted
   */
  async sweep(now = Date.now()): Promise<number> {
    return (await this.pool.query('DELETE FROM rate_limits WHERE expire < $1', [now])).rowCount ?? 0;
  }

  /** Counts one sign-up for the IP. */
  signupAttempt(ip: string): Promise<RateDecision> {
    return consume(this.signupIp, ip);
  }
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
