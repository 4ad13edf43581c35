import ipaddr from 'ipaddr.js';
import { LRUCache } from 'lru-cache';
import type { Pool } from 'pg';
import { RateLimiterPostgres } from 'rate-limiter-flexible';

/** The result of one {@link RateLimit.consume}. */
export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** A fixed-window limit shared by every replica (rate-limiter-flexible over the `rate_limits` table). */
export interface RateLimit {
  /**
   * Counts one event for `key`.
   * @returns allowed, or refused with the seconds until the window resets (at least 1)
   * @throws whatever the database throws (the caller decides whether to fail open or closed)
   */
  consume(key: string): Promise<RateDecision>;
  /**
   * Gives back one event counted for `key` in the current window: for limits on attempts that
   * turn out harmless (count with {@link consume} up front, give back on success).
   * @throws whatever the database throws
   */
  reward(key: string): Promise<void>;
  /**
   * Counts `points` events for `key` without ever refusing (for counting failures).
   * @returns the events counted for `key` in the current window, these included
   * @throws whatever the database throws
   */
  penalty(key: string, points?: number): Promise<number>;
  /**
   * Refuses `key` for `seconds` seconds from now, whatever its count.
   * @throws whatever the database throws
   */
  block(key: string, seconds: number): Promise<void>;
  /**
   * How long `key` is still refused: whole seconds (at least 1) while it is over its limit or
   * blocked, 0 otherwise. Counts nothing.
   * @throws whatever the database throws
   */
  refusedFor(key: string): Promise<number>;
  /**
   * Forgets everything counted for `key`.
   * @throws whatever the database throws
   */
  delete(key: string): Promise<void>;
}

/** Most keys one limit refuses from memory (see {@link createRateLimit}); older ones go back to PostgreSQL. */
const REFUSED_IN_MEMORY_MAX = 10_000;

/**
 * A limit of `points` events per `durationSeconds` per key, stored in PostgreSQL so that it holds
 * across replicas. Once a key is refused, this process refuses it from memory until its window ends
 * (its count in PostgreSQL could only grow meanwhile), so that a flood from one key or address past
 * its limit costs no database write per request; `inMemoryRefusal: false` turns that off for a limit
 * whose events are given back with {@link RateLimit.reward}, which could bring a key under its points
 * again. {@link RateLimit.delete} forgets the refusal too (in this process; other replicas keep
 * theirs until the window ends). Concurrent consumes of one key share statements: those that arrive
 * while one is in flight go together in the next, as one upsert of their number of points, so a busy
 * key costs about one statement per round trip rather than one per request, with the same counts.
 * The `rate_limits` table comes from the service's Prisma migration (`tableCreated: true`; columns
 * `key varchar(255) primary key, points int, expire bigint`); every limiter shares it, separated by
 * `keyPrefix`. Rows expired for an hour are deleted about once every 1000 calls (the
 * library's own 5-minute timer is off: it would keep a stopping process alive).
 * @param pool the service's `Database.rateLimitPool` (asynchronous commit: see there)
 */
export function createRateLimit(
  pool: Pool,
  opts: { keyPrefix: string; points: number; durationSeconds: number; inMemoryRefusal?: boolean },
): RateLimit {
  // Key → when its window ends (milliseconds since the epoch); bounded, so a flood of distinct keys
  // costs at most this many entries.
  const refused =
    opts.inMemoryRefusal === false ? null : new LRUCache<string, number>({ max: REFUSED_IN_MEMORY_MAX });
  const limiter = new RateLimiterPostgres({
    storeClient: pool,
    storeType: 'pool',
    tableName: 'rate_limits',
    tableCreated: true,
    keyPrefix: opts.keyPrefix,
    points: opts.points,
    duration: opts.durationSeconds,
    clearExpiredByTimeout: false,
  });
  const refusal = (msBeforeNext: number): RateDecision => ({
    allowed: false,
    retryAfterSeconds: Math.max(1, Math.ceil(msBeforeNext / 1000)),
  });
  // Consumes of a key that arrive while a statement for it is in flight wait and go together in the
  // next one, as one upsert of n points: the counts are those of n statements in a row (PostgreSQL
  // would have queued them on the row's lock anyway), and the first n' that fit under the limit are
  // allowed.
  type Waiter = { resolve: (decision: RateDecision) => void; reject: (err: unknown) => void };
  const waiting = new Map<string, Waiter[]>();
  const inFlight = new Set<string>();
  const send = (key: string): void => {
    const waiters = waiting.get(key);
    if (!waiters) return;
    waiting.delete(key);
    inFlight.add(key);
    limiter
      .penalty(key, waiters.length)
      .then(
        (res) => {
          const before = res.consumedPoints - waiters.length;
          if (before + waiters.length > opts.points) refused?.set(key, Date.now() + res.msBeforeNext);
          waiters.forEach((waiter, i) =>
            waiter.resolve(before + i + 1 <= opts.points ? { allowed: true } : refusal(res.msBeforeNext)),
          );
        },
        (err: unknown) => {
          for (const waiter of waiters) waiter.reject(err);
        },
      )
      .finally(() => {
        inFlight.delete(key);
        send(key);
      });
  };
  return {
    async consume(key) {
      const until = refused?.get(key);
      if (until !== undefined) {
        const left = until - Date.now();
        if (left > 0) return refusal(left);
        refused?.delete(key);
      }
      // clearExpired is public in the library but missing from its typings.
      if (Math.random() < 0.001)
        void (limiter as unknown as { clearExpired(expire: number): Promise<void> }).clearExpired(
          Date.now() - 3_600_000,
        );
      return new Promise<RateDecision>((resolve, reject) => {
        const waiters = waiting.get(key);
        if (waiters) waiters.push({ resolve, reject });
        else waiting.set(key, [{ resolve, reject }]);
        if (!inFlight.has(key)) send(key);
      });
    },
    async reward(key) {
      refused?.delete(key);
      await limiter.reward(key, 1);
    },
    async penalty(key, points = 1) {
      return (await limiter.penalty(key, points)).consumedPoints;
    },
    async block(key, seconds) {
      await limiter.block(key, seconds);
    },
    async refusedFor(key) {
      const state = await limiter.get(key);
      return state && state.consumedPoints > opts.points && state.msBeforeNext > 0
        ? Math.max(1, Math.ceil(state.msBeforeNext / 1000))
        : 0;
    },
    async delete(key) {
      refused?.delete(key);
      await limiter.delete(key);
    },
  };
}

/**
 * Deletes the counters of every limit that expired before `now` (the shared `rate_limits` table keeps
 * one row per key otherwise); run it from a background loop.
 * @param now milliseconds since the epoch
 * @returns the number of rows deleted
 * @throws whatever the database throws
 */
export async function sweepRateLimits(pool: Pool, now = Date.now()): Promise<number> {
  return (await pool.query('DELETE FROM rate_limits WHERE expire < $1', [now])).rowCount ?? 0;
}

/**
 * The IPv4 address an IPv6 address carries for a client that is really an IPv4 host, or null:
 * - IPv4-mapped `::ffff:a.b.c.d` and SIIT's IPv4-translated `::ffff:0:a.b.c.d` (RFC 6145): the last
 *   32 bits;
 * - NAT64 `64:ff9b::/96` (RFC 6052) and its local-use block `64:ff9b:1::/48` (RFC 8215, where
 *   translators use a /96 too): the last 32 bits, so IPv4 clients reaching an IPv6-only service
 *   through a translator keep one key each instead of all sharing `64:ff9b::/64`;
 * - 6to4 `2002:AABB:CCDD::/48` (RFC 3056): bits 16–47, the site's IPv4 address, so one 6to4 site is
 *   one key rather than 65,536 /64s;
 * - Teredo `2001::/32` (RFC 4380): the last 32 bits inverted, the client's public IPv4 address.
 * Range names as `ipaddr.js` reports them.
 */
function embeddedIPv4(addr: ipaddr.IPv6): ipaddr.IPv4 | null {
  const p = addr.parts;
  const fromParts = (high: number, low: number) =>
    new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
  // ipaddr.js returns range names beyond its declared union (rfc6145).
  const range: string = addr.range();
  switch (range) {
    case 'ipv4Mapped':
    case 'rfc6145':
    case 'rfc6052':
      return fromParts(p[6] ?? 0, p[7] ?? 0);
    case '6to4':
      return fromParts(p[1] ?? 0, p[2] ?? 0);
    case 'teredo':
      return fromParts((p[6] ?? 0) ^ 0xffff, (p[7] ?? 0) ^ 0xffff);
    default:
      return null;
  }
}

/**
 * The rate-limit key of a client address (every service's README, "Security": limits key IPv6
 * clients by /64): an IPv4 address as is; an IPv6 address that carries an IPv4 client's address
 * (IPv4-mapped, SIIT, NAT64, 6to4, Teredo: see {@link embeddedIPv4}) as that IPv4 address, as if the
 * client had come over IPv4; any other IPv6 address as its /64 network (`2001:db8:1:2::/64`), since
 * one subscriber gets a whole /64 and could otherwise use 2^64 fresh identities.
 * @param ip `req.ip` (undefined or unparsable: `unknown`)
 * @returns `203.0.113.7`, `2001:db8:1:2::/64` or `unknown`
 */
export function clientIpKey(ip: string | undefined): string {
  if (!ip || !ipaddr.isValid(ip)) return 'unknown';
  const parsed = ipaddr.parse(ip);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const v6 = parsed as ipaddr.IPv6;
  const v4 = embeddedIPv4(v6);
  if (v4) return v4.toString();
  const parts = v6.parts.slice(0, 4);
  return `${ipaddr.IPv6.parse(`${parts.map((p) => p.toString(16)).join(':')}::`).toString()}/64`;
}
