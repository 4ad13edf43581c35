import { randomUUID } from 'node:crypto';
import { AppError } from '@repo/errors';
import type { X402Network } from '@repo/schemas';
import type { VerifiedPayment } from '@repo/x402-core';

/**
 * The slice of a database client the ledger needs: raw SQL with `$1…` placeholders. A Prisma client, a
 * Prisma interactive-transaction client, or a thin adapter over `pg` all satisfy it.
 */
export interface SqlClient {
  /** Runs a query and returns its rows. */
  $queryRawUnsafe<T = unknown>(sql: string, ...values: unknown[]): Promise<T>;
  /** Runs a statement and returns the number of affected rows. */
  $executeRawUnsafe(sql: string, ...values: unknown[]): Promise<number>;
}

/** `sync`: a data endpoint whose response is stored and replayed; `async`: a compute endpoint that creates a job. */
export type PaymentKind = 'sync' | 'async';

/**
 * Row status: `processing` (claimed, being verified), `verified` (proven on chain, handler running or
 * failed — a retry re-runs the handler without a new charge), `completed` (response stored or job created).
 */
export type PaymentStatus = 'processing' | 'verified' | 'completed';

/** A stored HTTP answer, replayed byte for byte for the same signature on the same endpoint. */
export interface StoredResponse {
  /** HTTP status. */
  status: number;
  /** Response headers (lower-case names), without per-connection ones such as `date`. */
  headers: Record<string, string | string[]>;
  /** The body as sent (UTF-8 text; the data endpoints answer JSON). */
  body: string;
}

/** One ledger row as a plain object. */
export interface PaymentRecord {
  /** Transaction signature (primary key). */
  signature: string;
  /** Network the proof was presented for. */
  network: X402Network;
  /** Endpoint it was claimed for, e.g. `"GET /api/v1/scout/gaps"`. */
  endpoint: string;
  /** Endpoint kind. */
  kind: PaymentKind;
  /** Row status. */
  status: PaymentStatus;
  /** Transfer authority, once verified. */
  payer: string | null;
  /** Amount received, atomic units, once verified. */
  amountAtomic: bigint | null;
  /** Mint, once verified. */
  asset: string | null;
  /** Receiving token account, once verified. */
  payTo: string | null;
  /** Slot of the transaction, once verified. */
  slot: number | null;
  /** Block time of the transaction, once verified. */
  blockTime: Date | null;
  /** The stored answer of a completed synchronous request. */
  response: StoredResponse | null;
  /** The job created by an asynchronous endpoint. */
  jobId: string | null;
  /** The hash of the request the payment is bound to (see {@link ClaimRequest.requestHash}). */
  requestHash: string | null;
  /** When the current (or last) claim was taken. */
  claimedAt: Date;
  /** When verification succeeded. */
  verifiedAt: Date | null;
  /** When the row became `completed`. */
  completedAt: Date | null;
  /** When the row was first inserted. */
  createdAt: Date;
}

/**
 * A fixed-window limit on attempts that the ledger counts inside its own statements. The counter row
 * has the layout of rate-limiter-flexible's `RateLimiterPostgres` (`key varchar(255) primary key,
 * points integer, expire bigint`: the window's end in milliseconds since the epoch), the table
 * `@repo/service-kit`'s `createRateLimit` keeps, so a limiter and the ledger can count in one row with
 * the same arithmetic (the library's `consume` and `reward`).
 */
export interface AttemptCounter {
  /** The counter table: a plain SQL identifier, e.g. `rate_limits`. */
  table: string;
  /** The row's key as the limiter stores it, its prefix included, e.g. `x402_verify_client:solana:203.0.113.7`. */
  key: string;
  /** Attempts allowed per window; every one beyond is refused (and still counted). */
  limit: number;
  /** Length of a window in milliseconds, from its first attempt. */
  windowMs: number;
}

/** The attempt a claim counted against {@link ClaimRequest.attemptCounter}. */
export interface CountedAttempt {
  /** `false` when this attempt is over the limit: the caller refuses it and drops the claim. */
  allowed: boolean;
  /** Attempts counted in the current window, this one included. */
  count: number;
  /** Seconds until the window ends, at least 1 (the `Retry-After` of a refusal). */
  retryAfterSeconds: number;
}

/** What a request wants to use a signature for. */
export interface ClaimRequest {
  /** Transaction signature (base58). */
  signature: string;
  /** Network of the request. */
  network: X402Network;
  /** Endpoint identity, e.g. `"GET /api/v1/scout/gaps"`. */
  endpoint: string;
  /** Endpoint kind. */
  kind: PaymentKind;
  /**
   * The hash of the request this payment pays for (e.g. `requestHash` of `@repo/x402-core`: method,
   * path, sorted query and body). A verified payment is bound to the hash it was claimed with: on a
   * synchronous endpoint only a request with the same hash gets the stored answer (or takes over a
   * verified claim whose answer was never stored); any other is `other_endpoint`, as a payment on
   * another endpoint is. On an asynchronous endpoint a later request learns the job id only when its
   * hash is the same (a genuine retry after a lost 202). An unverified claim binds nothing yet: its
   * takeover records the new request's hash. Absent counts as a hash of its own (`null`).
   */
  requestHash?: string;
  /**
   * Counts one attempt in the same statement whenever this request claims a signature still to be
   * verified (a new row, or the takeover of an unverified one), not when it takes over a verified row;
   * the statement that records the verification ({@link PaymentLedger.markVerified}, or a completion
   * given the deferred verification) gives it back. The result is {@link PaymentClaim.attempt}.
   */
  attemptCounter?: AttemptCounter;
}

/** The right to process a signature, held until `complete`, `completeWithJob`, `release` or `releaseLease`. */
export interface PaymentClaim extends ClaimRequest {
  /** Opaque lease token; every later write is conditional on it. */
  token: string;
  /** `true` when an abandoned row (crashed or failed holder) was taken over. */
  takenOver: boolean;
  /** Present when a `verified` row was taken over: the payment is already proven, do not verify or charge again. */
  verified?: VerifiedPayment;
  /**
   * When the service first saw this signature (the row's creation: a released claim or a recorded
   * sighting keeps it), the instant its freshness is measured from.
   */
  firstSeenAt: Date;
  /**
   * The attempt the claim statement counted against `attemptCounter`; absent when nothing was counted
   * (no counter, a verified row taken over, or a ledger that does not count).
   */
  attempt?: CountedAttempt;
}

/**
 * Outcome of {@link PaymentLedger.claim}:
 * - `claimed`: this caller owns the signature and must verify (unless `claim.verified`) and finish it;
 * - `replay`: same synchronous endpoint, completed: answer `response` again;
 * - `conflict`: same asynchronous endpoint, job already created (409 `payment_conflict`; `jobId` only
 *   for a request whose body hashes like the paying one's, else `null`);
 * - `other_endpoint`: the signature was verified for another endpoint, network or (synchronous
 *   endpoint) request (400 `payment_reused`);
 * - `busy`: still in flight elsewhere after waiting `waitTimeoutMs`, or an unverified claim for another
 *   endpoint (`retryAfterSeconds: 1`) (503, retry later).
 */
export type ClaimOutcome =
  | { outcome: 'claimed'; claim: PaymentClaim }
  | { outcome: 'replay'; record: PaymentRecord; response: StoredResponse }
  | { outcome: 'conflict'; record: PaymentRecord; jobId: string | null }
  | { outcome: 'other_endpoint'; record: PaymentRecord }
  | { outcome: 'busy'; record: PaymentRecord; retryAfterSeconds?: number };

/**
 * The payment ledger port (docs/architecture.md, "How a paid request flows (market-intel)", step 2):
 * one row per transaction signature, claimed atomically before any network call, so a signature is
 * used once across all replicas.
 */
export interface PaymentLedger {
  /**
   * Claims `signature` for `endpoint`, or reports what it is already used for. Waits (bounded) while
   * another request holds it, then re-evaluates.
   */
  claim(request: ClaimRequest): Promise<ClaimOutcome>;
  /**
   * Records the verified payment (status `verified`) and renews the lease; when the claim counted an
   * attempt (`claim.attempt`), gives it back in the same statement, lease lost or not.
   * @returns `false` when the lease was lost to a takeover
   */
  markVerified(claim: PaymentClaim, payment: VerifiedPayment): Promise<boolean>;
  /**
   * Stores the answer of a synchronous endpoint (status `completed`) and ends the claim. With
   * `verified`, the claim's verification was not recorded yet (the deferred verified mark of
   * `@repo/x402-express`'s README, "The paid path's statements"): the same statement records it and gives the
   * claim's counted attempt back, as {@link PaymentLedger.markVerified} would have.
   * @returns `false` when the lease was lost to a takeover
   */
  complete(claim: PaymentClaim, response: StoredResponse, verified?: VerifiedPayment): Promise<boolean>;
  /**
   * Marks an asynchronous payment `completed` with the job it created. Pass the service's transaction
   * client so the job row and this update commit together.
   * @throws AppError `payment_conflict` (409) when the lease was lost (the transaction must roll back)
   */
  completeWithJob(claim: PaymentClaim, jobId: string, tx?: SqlClient): Promise<void>;
  /**
   * Ends the claim after a handler failure without consuming the payment: the row stays `verified` and
   * the next request re-runs the handler. With `verified` (a deferred verified mark, as in
   * {@link PaymentLedger.complete}), the same statement records the verification and gives the counted
   * attempt back first.
   */
  releaseLease(claim: PaymentClaim, verified?: VerifiedPayment): Promise<void>;
  /**
   * Extends the lease of a claim still being served (a long handler must not be taken over).
   * @returns `false` when the lease was already lost to a takeover
   */
  renewLease(claim: PaymentClaim): Promise<boolean>;
  /** A claim not finished after this many milliseconds may be taken over. */
  readonly leaseMs: number;
  /**
   * Ends an unverified claim (verification failed or could not run): nothing is consumed, the
   * signature stays usable, and the row keeps the first sighting, so freshness still counts from it.
   */
  release(claim: PaymentClaim): Promise<void>;
  /**
   * Deletes an unverified claim and its sighting (the transaction was not found on chain, or the
   * attempt was refused before verification): nothing is consumed and nothing is kept.
   */
  forget(claim: PaymentClaim): Promise<void>;
  /**
   * Records that the service saw `request.signature` without taking it (an answer such as 503 came
   * first), so its freshness counts from now if it is presented again. No effect when a row exists.
   */
  recordSighting(request: ClaimRequest): Promise<void>;
  /**
   * Deletes unverified rows no request holds that were first seen more than `olderThanMs`
   * milliseconds ago (sightings of payments never completed).
   * @returns the number of rows deleted
   */
  pruneSightings(olderThanMs: number): Promise<number>;
  /** Reads a row. */
  find(signature: string): Promise<PaymentRecord | null>;
}

/** Tuning of {@link PrismaPaymentLedger}. */
export interface PaymentLedgerOptions {
  /** A claim not finished after this many milliseconds may be taken over (crashed replica); default 30000. */
  leaseMs?: number;
  /** How long `claim` waits for an in-flight holder before answering `busy`, in milliseconds; default 20000. */
  waitTimeoutMs?: number;
  /** Interval of the cross-replica row poll while waiting, in milliseconds; default 50. */
  pollIntervalMs?: number;
  /**
   * How many completed payments to keep in memory so replays skip the database; default 10000.
   * Completed rows never change, so the copy is exact on every replica.
   */
  settledCacheSize?: number;
  /**
   * Most bytes of stored answers (bodies and headers, as UTF-16 code units of their text) those
   * completed payments may hold; default 16 MiB. The least recently used go first.
   */
  settledCacheBytes?: number;
  /**
   * The clock that dates a first sighting (a new row's `created_at`), for tests that move time;
   * default the database's `now()`. Leases always use the database's clock.
   */
  now?: () => Date;
}

/** Completed answers larger than this (bytes of body) are not kept in memory. */
const SETTLED_CACHE_MAX_BODY = 256 * 1024;

/** Name of the ledger table. */
export const X402_PAYMENTS_TABLE = 'x402_payments';

/**
 * The Prisma model every service that takes x402 payments pastes into its `schema.prisma`; its
 * migration creates the `x402_payments` table {@link PrismaPaymentLedger} uses.
 */
export const X402_PAYMENT_PRISMA_MODEL = `/// x402 payment ledger (@repo/x402-ledger): one row per transaction signature, claimed before verification.
model X402Payment {
  signature       String    @id
  network         String
  endpoint        String
  kind            String
  status          String
  claimToken      String?   @map("claim_token")
  payer           String?
  amountAtomic    Decimal?  @map("amount_atomic") @db.Decimal(39, 0)
  asset           String?
  payTo           String?   @map("pay_to")
  slot            BigInt?
  blockTime       DateTime? @map("block_time") @db.Timestamptz(3)
  responseStatus  Int?      @map("response_status")
  responseHeaders Json?     @map("response_headers")
  responseBody    String?   @map("response_body")
  jobId           String?   @map("job_id")
  /// Hash of the request the payment is bound to: only that request gets its replay (or, async, its job id).
  requestHash     String?   @map("request_hash")
  claimedAt       DateTime  @default(now()) @map("claimed_at") @db.Timestamptz(3)
  verifiedAt      DateTime? @map("verified_at") @db.Timestamptz(3)
  completedAt     DateTime? @map("completed_at") @db.Timestamptz(3)
  createdAt       DateTime  @default(now()) @map("created_at") @db.Timestamptz(3)

  @@index([jobId])
  @@index([payer])
  @@map("x402_payments")
}
`;

interface PaymentRow {
  signature: string;
  network: string;
  endpoint: string;
  kind: string;
  status: string;
  claim_token: string | null;
  payer: string | null;
  amount_atomic: string | null;
  asset: string | null;
  pay_to: string | null;
  slot: string | null;
  block_time: Date | string | null;
  response_status: number | null;
  response_headers: string | null;
  response_body: string | null;
  job_id: string | null;
  request_hash: string | null;
  claimed_at: Date | string;
  verified_at: Date | string | null;
  completed_at: Date | string | null;
  created_at: Date | string;
  lease_free: boolean;
}

const SELECT_ROW = `SELECT signature, network, endpoint, kind, status, claim_token, payer,
  amount_atomic::text AS amount_atomic, asset, pay_to, slot::text AS slot, block_time,
  response_status, response_headers::text AS response_headers, response_body, job_id, request_hash,
  claimed_at, verified_at, completed_at, created_at,
  (claim_token IS NULL OR claimed_at < now() - make_interval(secs => $2::double precision)) AS lease_free
FROM ${X402_PAYMENTS_TABLE} WHERE signature = $1`;

/** What a claim's insert or takeover returns. */
interface Taken {
  created_at: Date | string;
}

/** What a claim statement that also counted an attempt returns. */
interface TakenAndCounted extends Taken {
  attempts: number | null;
  retry_after_seconds: number | null;
}

/** A claim statement's result: the row's first sighting, and the attempt it counted. */
interface TakenRow {
  createdAt: Date;
  attempt?: CountedAttempt;
}

/** A counter table name as SQL: a plain identifier, quoted. */
function counterTable(counter: AttemptCounter): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(counter.table)) {
    throw new Error(
      `attempt counter table must be a plain SQL identifier, got ${JSON.stringify(counter.table)}`,
    );
  }
  return `"${counter.table}"`;
}

/**
 * rate-limiter-flexible's upsert of `points` into a counter row (`RateLimiterPostgres._upsert`): a new
 * window starts at the first write after the last one ended. `p` holds the placeholders of the key,
 * of now and of the window (both in milliseconds); `source` is what the row is selected from, so that
 * the write happens only for, and after, the statement part it depends on.
 */
function counterUpsert(
  table: string,
  points: 1 | -1,
  source: string,
  p: { key: string; now: string; window: string },
): string {
  return `INSERT INTO ${table} AS counter (key, points, expire)
    SELECT ${p.key}::text, ${points}, ${p.now}::bigint + ${p.window}::bigint FROM ${source}
    ON CONFLICT (key) DO UPDATE SET
      points = CASE WHEN counter.expire <= ${p.now}::bigint THEN ${points} ELSE counter.points + (${points}) END,
      expire = CASE WHEN counter.expire <= ${p.now}::bigint THEN EXCLUDED.expire ELSE counter.expire END
    RETURNING points, expire`;
}

/** Statement texts composed from constant parts, built once per pair of parts. */
const composedStatements = new Map<string, Map<string, string>>();

/**
 * The statement `build` makes of the constant strings `a` and `b`, built once: the paid path's
 * statements are the same few texts every time, and a text built per call would be hashed again to
 * find its prepared statement.
 */
function composed(a: string, b: string, build: () => string): string {
  let byB = composedStatements.get(a);
  if (!byB) composedStatements.set(a, (byB = new Map()));
  let text = byB.get(b);
  if (text === undefined) {
    text = build();
    byB.set(b, text);
  }
  return text;
}

/**
 * Selected by a claim statement for the row it claimed: that implicit transaction commits without
 * waiting for its WAL to reach disk (the setting is local to it). Nothing has been answered or charged
 * on a claim, and every later statement of the payment commits synchronously, which flushes the
 * claim's WAL first: a database crash can lose only a claim whose request then fails and is retried
 * (package README, "Claims commit asynchronously").
 */
const ASYNC_COMMIT = "set_config('synchronous_commit', 'off', true) AS async_commit";

/** The claim of a signature never seen: a new row, or nothing when one exists. */
const CLAIM_INSERT = `INSERT INTO ${X402_PAYMENTS_TABLE} (signature, network, endpoint, kind, status, claim_token, request_hash, claimed_at, created_at)
         VALUES ($1, $2, $3, $4, 'processing', $5, $6, now(), COALESCE($7::timestamptz, now()))
         ON CONFLICT (signature) DO NOTHING
         RETURNING created_at`;

interface Gate {
  /** `network endpoint` of the holder: only requests for the same use queue behind it. */
  use: string;
  promise: Promise<void>;
  open: () => void;
}

function gate(use: string): Gate {
  let open: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { use, promise, open };
}

/** Resolves when `promise` settles or after `ms`, whichever comes first, leaving no timer behind. */
async function waitAtMost(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * {@link PaymentLedger} over PostgreSQL with raw SQL (parameter placeholders only), through a Prisma
 * client or any {@link SqlClient}. The table comes from {@link X402_PAYMENT_PRISMA_MODEL}.
 *
 * Claims are `INSERT … ON CONFLICT DO NOTHING RETURNING`; takeovers are compare-and-set updates on
 * the lease token, so two replicas never both own a signature. Within one process, requests for the
 * same signature queue behind the current holder (one shared promise per signature) instead of
 * polling; other replicas poll the row every `pollIntervalMs` until `waitTimeoutMs`.
 */
export class PrismaPaymentLedger implements PaymentLedger {
  private readonly leaseSeconds: number;
  /** {@inheritDoc PaymentLedger.leaseMs} */
  readonly leaseMs: number;
  private readonly waitTimeoutMs: number;
  private readonly pollIntervalMs: number;
  private readonly gates = new Map<string, Gate>();
  private readonly settledCacheSize: number;
  private readonly settledCacheBytes: number;
  /** Completed payments by signature, least recently used first, with the bytes each holds. */
  private readonly settled = new Map<string, { record: PaymentRecord; bytes: number }>();
  private settledBytes = 0;
  private readonly now: (() => Date) | undefined;

  /**
   * @param db the database client (Prisma client or adapter)
   * @param options lease, wait and poll durations in milliseconds
   */
  constructor(
    private readonly db: SqlClient,
    options: PaymentLedgerOptions = {},
  ) {
    this.leaseMs = options.leaseMs ?? 30_000;
    this.leaseSeconds = this.leaseMs / 1000;
    this.waitTimeoutMs = options.waitTimeoutMs ?? 20_000;
    this.pollIntervalMs = options.pollIntervalMs ?? 50;
    this.settledCacheSize = options.settledCacheSize ?? 10_000;
    this.settledCacheBytes = options.settledCacheBytes ?? 16 * 1024 * 1024;
    this.now = options.now;
  }

  /** The first-sighting time to store: the configured clock's, or null for the database's `now()`. */
  private sightedAt(): string | null {
    return this.now ? this.now().toISOString() : null;
  }

  /** {@inheritDoc PaymentLedger.claim} */
  async claim(request: ClaimRequest): Promise<ClaimOutcome> {
    const known = this.settled.get(request.signature);
    if (known) {
      this.settled.delete(request.signature);
      this.settled.set(request.signature, known);
      return settledOutcome(known.record, request);
    }
    const deadline = Date.now() + this.waitTimeoutMs;
    // Queue behind a holder in this process: one database round trip per waiter once it is done.
    // A request for another endpoint, network or request goes straight to the database.
    const use = `${request.network} ${request.endpoint} ${request.requestHash ?? ''}`;
    let own: Gate | undefined;
    for (;;) {
      const held = this.gates.get(request.signature);
      if (!held) {
        own = gate(use);
        this.gates.set(request.signature, own);
        break;
      }
      const remaining = deadline - Date.now();
      if (held.use !== use || remaining <= 0) break;
      await waitAtMost(held.promise, remaining);
    }
    let outcome: ClaimOutcome;
    try {
      outcome = await this.claimInDatabase(request, deadline);
    } catch (error) {
      if (own) this.openGate(request.signature, own);
      throw error;
    }
    if (own && outcome.outcome !== 'claimed') this.openGate(request.signature, own);
    if (own && outcome.outcome === 'claimed') {
      // A holder that never finishes must not block this process longer than its lease.
      const ownGate = own;
      setTimeout(() => this.openGate(request.signature, ownGate), this.leaseSeconds * 1000).unref();
    }
    return outcome;
  }

  private async claimInDatabase(request: ClaimRequest, deadline: number): Promise<ClaimOutcome> {
    for (;;) {
      const token = randomUUID();
      const created = await this.take(
        CLAIM_INSERT,
        [
          request.signature,
          request.network,
          request.endpoint,
          request.kind,
          token,
          request.requestHash ?? null,
          this.sightedAt(),
        ],
        request.attemptCounter,
      );
      if (created) return { outcome: 'claimed', claim: claimOf(request, token, false, created) };

      const row = await this.readRow(request.signature);
      if (!row) continue; // released in between: try to insert again
      const record = toRecord(row);
      if (record.status === 'completed') {
        this.remember(record);
        return settledOutcome(record, request);
      }
      if (record.endpoint !== request.endpoint || record.network !== request.network) {
        if (record.status !== 'processing') return { outcome: 'other_endpoint', record };
        // Unverified, the signature binds nothing yet: never answer a final-looking refusal.
        if (!row.lease_free) return { outcome: 'busy', record, retryAfterSeconds: 1 };
        // An abandoned unverified claim is taken over for this request's endpoint.
        const moved = await this.take(
          `UPDATE ${X402_PAYMENTS_TABLE}
              SET claim_token = $2, claimed_at = now(), network = $3, endpoint = $4, kind = $5, request_hash = $6
            WHERE signature = $1 AND status = 'processing'
              AND (claim_token IS NULL OR claimed_at < now() - make_interval(secs => $7::double precision))
            RETURNING created_at`,
          [
            request.signature,
            token,
            request.network,
            request.endpoint,
            request.kind,
            request.requestHash ?? null,
            this.leaseSeconds,
          ],
          request.attemptCounter,
        );
        if (moved) return { outcome: 'claimed', claim: claimOf(request, token, true, moved) };
        continue;
      }
      // Verified, the payment is bound to the request it was claimed with (its answer may be unsent);
      // on an asynchronous endpoint another request is the spec's 409, as once its job exists.
      if (record.status !== 'processing' && record.requestHash !== (request.requestHash ?? null))
        return record.kind === 'async'
          ? { outcome: 'conflict', record, jobId: null }
          : { outcome: 'other_endpoint', record };
      if (row.lease_free) {
        // An unverified row takes the new request's hash; a verified one must still have this one's.
        const taken = await this.take(
          `UPDATE ${X402_PAYMENTS_TABLE}
              SET claim_token = $2, claimed_at = now(),
                  request_hash = CASE WHEN status = 'processing' THEN $6 ELSE request_hash END
            WHERE signature = $1 AND status = $3 AND endpoint = $4
              AND (status = 'processing' OR request_hash IS NOT DISTINCT FROM $6)
              AND (claim_token IS NULL OR claimed_at < now() - make_interval(secs => $5::double precision))
            RETURNING created_at`,
          [
            request.signature,
            token,
            record.status,
            request.endpoint,
            this.leaseSeconds,
            request.requestHash ?? null,
          ],
          // A verified row is not verified again: no attempt to count.
          record.status === 'processing' ? request.attemptCounter : undefined,
        );
        if (taken) {
          const claim = claimOf(request, token, true, taken);
          const verified = record.status === 'verified' ? verifiedFromRecord(record) : undefined;
          if (verified) claim.verified = verified;
          return { outcome: 'claimed', claim };
        }
        continue; // another request took it over first: look again
      }
      if (Date.now() >= deadline) return { outcome: 'busy', record };
      await delay(Math.min(this.pollIntervalMs, Math.max(0, deadline - Date.now())));
    }
  }

  /**
   * Runs a claim statement (an insert or a takeover `RETURNING created_at`) and, with `counter`, counts
   * one attempt in the same statement only if it claimed the row.
   * @returns the claimed row's first sighting and the attempt counted, or `undefined` when nothing was claimed
   */
  private async take(
    sql: string,
    values: unknown[],
    counter: AttemptCounter | undefined,
  ): Promise<TakenRow | undefined> {
    if (!counter) {
      const text = composed(
        sql,
        '',
        () => `WITH claimed AS (${sql}) SELECT claimed.created_at, ${ASYNC_COMMIT} FROM claimed`,
      );
      const row = (await this.db.$queryRawUnsafe<Taken[]>(text, ...values))[0];
      return row && { createdAt: toDate(row.created_at) };
    }
    const n = values.length;
    const p = { key: `$${n + 1}`, now: `$${n + 2}`, window: `$${n + 3}` };
    // The count reads the claim's RETURNING: it runs only when, and after, the row was claimed (the
    // payment row is always locked before the counter row, as in markVerified). `sql`'s placeholders
    // fix the number of its values, so `sql` and the table determine the text.
    const text = composed(
      sql,
      counter.table,
      () => `WITH claimed AS (${sql}),
         counted AS (${counterUpsert(counterTable(counter), 1, 'claimed', p)})
         SELECT claimed.created_at, counted.points AS attempts,
                GREATEST(1, CEIL(GREATEST(counted.expire - ${p.now}::bigint, 0) / 1000.0))::int AS retry_after_seconds,
                ${ASYNC_COMMIT}
           FROM claimed LEFT JOIN counted ON true`,
    );
    const row = (
      await this.db.$queryRawUnsafe<TakenAndCounted[]>(
        text,
        ...values,
        counter.key,
        String(Date.now()),
        String(counter.windowMs),
      )
    )[0];
    if (!row) return undefined;
    if (row.attempts === null) return { createdAt: toDate(row.created_at) };
    const count = Number(row.attempts);
    return {
      createdAt: toDate(row.created_at),
      attempt: {
        allowed: count <= counter.limit,
        count,
        retryAfterSeconds: Number(row.retry_after_seconds ?? 1),
      },
    };
  }

  /** {@inheritDoc PaymentLedger.markVerified} */
  async markVerified(claim: PaymentClaim, payment: VerifiedPayment): Promise<boolean> {
    return this.recordVerified(claim, payment, "status = 'verified', claimed_at = now()");
  }

  /**
   * One statement that records `payment` on an unverified claim (`status = 'processing'`, held by
   * `claim.token`) with the further assignments `set` (which name placeholders from `$9` on, bound to
   * `extra`), and gives back the attempt the claim counted.
   * @returns whether the row was updated (`false`: the lease was lost to a takeover)
   */
  private async recordVerified(
    claim: PaymentClaim,
    payment: VerifiedPayment,
    set: string,
    extra: unknown[] = [],
  ): Promise<boolean> {
    const update = composed(
      set,
      '',
      () => `UPDATE ${X402_PAYMENTS_TABLE}
       SET ${set}, payer = $3, amount_atomic = $4::numeric, asset = $5, pay_to = $6,
           slot = $7::bigint, block_time = $8::timestamptz, verified_at = now()
       WHERE signature = $1 AND claim_token = $2 AND status = 'processing'`,
    );
    const values = [
      claim.signature,
      claim.token,
      payment.payer,
      payment.amountAtomic.toString(),
      payment.asset,
      payment.payTo,
      String(payment.slot),
      payment.blockTime.toISOString(),
      ...extra,
    ];
    const counter = claim.attempt ? claim.attemptCounter : undefined;
    if (!counter) return (await this.db.$executeRawUnsafe(update, ...values)) > 0;
    const n = values.length;
    const p = { key: `$${n + 1}`, now: `$${n + 2}`, window: `$${n + 3}` };
    // The give-back selects from the update's count (one row whatever it matched), so the payment row
    // is locked first, as in a claim, and the attempt is given back even when the lease was lost.
    const text = composed(
      update,
      counter.table,
      () => `WITH marked AS (${update} RETURNING 1),
       outcome AS (SELECT count(*)::int AS marked FROM marked),
       given AS (${counterUpsert(counterTable(counter), -1, 'outcome', p)})
       SELECT marked FROM outcome`,
    );
    const rows = await this.db.$queryRawUnsafe<{ marked: number }[]>(
      text,
      ...values,
      counter.key,
      String(Date.now()),
      String(counter.windowMs),
    );
    return Number(rows[0]?.marked ?? 0) > 0;
  }

  /** {@inheritDoc PaymentLedger.complete} */
  async complete(
    claim: PaymentClaim,
    response: StoredResponse,
    verified?: VerifiedPayment,
  ): Promise<boolean> {
    const stored = [response.status, JSON.stringify(response.headers), response.body];
    try {
      if (verified) {
        return await this.recordVerified(
          claim,
          verified,
          `status = 'completed', response_status = $9::integer, response_headers = $10::jsonb,
           response_body = $11, completed_at = now(), claim_token = NULL`,
          stored,
        );
      }
      const count = await this.db.$executeRawUnsafe(
        `UPDATE ${X402_PAYMENTS_TABLE}
         SET status = 'completed', response_status = $3::integer, response_headers = $4::jsonb, response_body = $5,
             completed_at = now(), claim_token = NULL
         WHERE signature = $1 AND claim_token = $2 AND status = 'verified'`,
        claim.signature,
        claim.token,
        ...stored,
      );
      return count > 0;
    } finally {
      this.openGateOf(claim);
    }
  }

  /** {@inheritDoc PaymentLedger.completeWithJob} */
  async completeWithJob(claim: PaymentClaim, jobId: string, tx?: SqlClient): Promise<void> {
    try {
      const count = await (tx ?? this.db).$executeRawUnsafe(
        `UPDATE ${X402_PAYMENTS_TABLE}
         SET status = 'completed', job_id = $3, completed_at = now(), claim_token = NULL
         WHERE signature = $1 AND claim_token = $2 AND status = 'verified'`,
        claim.signature,
        claim.token,
        jobId,
      );
      if (count === 0) {
        throw new AppError('payment_conflict', 'This payment is being processed by another request', {
          details: { signature: claim.signature },
        });
      }
    } finally {
      this.openGateOf(claim);
    }
  }

  /** {@inheritDoc PaymentLedger.renewLease} */
  async renewLease(claim: PaymentClaim): Promise<boolean> {
    const count = await this.db.$executeRawUnsafe(
      `UPDATE ${X402_PAYMENTS_TABLE} SET claimed_at = now() WHERE signature = $1 AND claim_token = $2`,
      claim.signature,
      claim.token,
    );
    return count > 0;
  }

  /** {@inheritDoc PaymentLedger.releaseLease} */
  async releaseLease(claim: PaymentClaim, verified?: VerifiedPayment): Promise<void> {
    try {
      if (verified) {
        await this.recordVerified(claim, verified, "status = 'verified', claim_token = NULL");
        return;
      }
      await this.db.$executeRawUnsafe(
        `UPDATE ${X402_PAYMENTS_TABLE} SET claim_token = NULL WHERE signature = $1 AND claim_token = $2`,
        claim.signature,
        claim.token,
      );
    } finally {
      this.openGateOf(claim);
    }
  }

  /** {@inheritDoc PaymentLedger.release} */
  async release(claim: PaymentClaim): Promise<void> {
    try {
      await this.db.$executeRawUnsafe(
        `UPDATE ${X402_PAYMENTS_TABLE} SET claim_token = NULL
         WHERE signature = $1 AND claim_token = $2 AND status = 'processing'`,
        claim.signature,
        claim.token,
      );
    } finally {
      this.openGateOf(claim);
    }
  }

  /** {@inheritDoc PaymentLedger.forget} */
  async forget(claim: PaymentClaim): Promise<void> {
    try {
      await this.db.$executeRawUnsafe(
        `DELETE FROM ${X402_PAYMENTS_TABLE} WHERE signature = $1 AND claim_token = $2 AND status = 'processing'`,
        claim.signature,
        claim.token,
      );
    } finally {
      this.openGateOf(claim);
    }
  }

  /** {@inheritDoc PaymentLedger.recordSighting} */
  async recordSighting(request: ClaimRequest): Promise<void> {
    await this.db.$executeRawUnsafe(
      `INSERT INTO ${X402_PAYMENTS_TABLE} (signature, network, endpoint, kind, status, claim_token, request_hash, claimed_at, created_at)
       VALUES ($1, $2, $3, $4, 'processing', NULL, $5, now(), COALESCE($6::timestamptz, now()))
       ON CONFLICT (signature) DO NOTHING`,
      request.signature,
      request.network,
      request.endpoint,
      request.kind,
      request.requestHash ?? null,
      this.sightedAt(),
    );
  }

  /** {@inheritDoc PaymentLedger.pruneSightings} */
  async pruneSightings(olderThanMs: number): Promise<number> {
    return this.db.$executeRawUnsafe(
      `DELETE FROM ${X402_PAYMENTS_TABLE}
        WHERE status = 'processing'
          AND created_at < now() - make_interval(secs => $1::double precision)
          AND (claim_token IS NULL OR claimed_at < now() - make_interval(secs => $2::double precision))`,
      olderThanMs / 1000,
      this.leaseSeconds,
    );
  }

  /** {@inheritDoc PaymentLedger.find} */
  async find(signature: string): Promise<PaymentRecord | null> {
    const row = await this.readRow(signature);
    return row ? toRecord(row) : null;
  }

  private async readRow(signature: string): Promise<PaymentRow | undefined> {
    const rows = await this.db.$queryRawUnsafe<PaymentRow[]>(SELECT_ROW, signature, this.leaseSeconds);
    return rows[0];
  }

  /**
   * Keeps a completed payment for later replays, evicting the least recently used beyond the count
   * and byte bounds.
   */
  private remember(record: PaymentRecord): void {
    const response = record.response;
    const bytes =
      record.signature.length +
      (response ? response.body.length + JSON.stringify(response.headers).length : 0) +
      (record.requestHash?.length ?? 0);
    if (
      this.settledCacheSize <= 0 ||
      (response && response.body.length > SETTLED_CACHE_MAX_BODY) ||
      bytes > this.settledCacheBytes ||
      this.settled.has(record.signature)
    )
      return;
    this.settled.set(record.signature, { record, bytes });
    this.settledBytes += bytes;
    for (const [signature, entry] of this.settled) {
      if (this.settled.size <= this.settledCacheSize && this.settledBytes <= this.settledCacheBytes) break;
      this.settled.delete(signature);
      this.settledBytes -= entry.bytes;
    }
  }

  private openGateOf(claim: PaymentClaim): void {
    const held = this.gates.get(claim.signature);
    if (held) this.openGate(claim.signature, held);
  }

  private openGate(signature: string, own: Gate): void {
    if (this.gates.get(signature) === own) this.gates.delete(signature);
    own.open();
  }
}

/** The claim of `request` under `token`, from what its claim statement returned. */
function claimOf(request: ClaimRequest, token: string, takenOver: boolean, taken: TakenRow): PaymentClaim {
  return {
    ...request,
    token,
    takenOver,
    firstSeenAt: taken.createdAt,
    ...(taken.attempt ? { attempt: taken.attempt } : {}),
  };
}

/**
 * The outcome of a claim on a completed payment: another endpoint or network, a job conflict, another
 * request of the same synchronous endpoint (refused as another endpoint is: the stored answer is the
 * paying request's, and its signature is public on chain), or a replay.
 */
function settledOutcome(record: PaymentRecord, request: ClaimRequest): ClaimOutcome {
  if (record.endpoint !== request.endpoint || record.network !== request.network) {
    return { outcome: 'other_endpoint', record };
  }
  if (record.kind === 'async' || record.jobId !== null || !record.response) {
    // Only the request that paid learns its job id: the id is all GET /jobs/{id} asks for.
    const same = record.requestHash !== null && record.requestHash === request.requestHash;
    return { outcome: 'conflict', record, jobId: same ? record.jobId : null };
  }
  if (record.requestHash !== (request.requestHash ?? null)) return { outcome: 'other_endpoint', record };
  return { outcome: 'replay', record, response: record.response };
}

function toDate(value: Date | string): Date {
  return value instanceof Date ? value : new Date(value);
}

function toRecord(row: PaymentRow): PaymentRecord {
  const response: StoredResponse | null =
    row.response_status !== null && row.response_body !== null
      ? {
          status: Number(row.response_status),
          headers: row.response_headers
            ? (JSON.parse(row.response_headers) as Record<string, string | string[]>)
            : {},
          body: row.response_body,
        }
      : null;
  return {
    signature: row.signature,
    network: row.network as X402Network,
    endpoint: row.endpoint,
    kind: row.kind as PaymentKind,
    status: row.status as PaymentStatus,
    payer: row.payer,
    amountAtomic: row.amount_atomic === null ? null : BigInt(row.amount_atomic),
    asset: row.asset,
    payTo: row.pay_to,
    slot: row.slot === null ? null : Number(row.slot),
    blockTime: row.block_time === null ? null : toDate(row.block_time),
    response,
    jobId: row.job_id,
    requestHash: row.request_hash,
    claimedAt: toDate(row.claimed_at),
    verifiedAt: row.verified_at === null ? null : toDate(row.verified_at),
    completedAt: row.completed_at === null ? null : toDate(row.completed_at),
    createdAt: toDate(row.created_at),
  };
}

function verifiedFromRecord(record: PaymentRecord): VerifiedPayment | undefined {
  if (
    record.payer === null ||
    record.amountAtomic === null ||
    record.asset === null ||
    record.payTo === null ||
    record.slot === null ||
    record.blockTime === null
  ) {
    return undefined;
  }
  return {
    signature: record.signature,
    network: record.network,
    payer: record.payer,
    amountAtomic: record.amountAtomic,
    asset: record.asset,
    payTo: record.payTo,
    slot: record.slot,
    blockTime: record.blockTime,
    rpcMs: 0,
  };
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
