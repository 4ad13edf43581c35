import type { X402Network } from '@repo/schemas';
import type { VerifiedPayment } from '@repo/x402-core';
import type { AttemptCounter, CountedAttempt } from './attempts';

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
   * milliseconds ago (sightings of payments never completed), and, in the same statement, the
   * verification-attempt counters of the ledger's table whose window ended an hour ago or more.
   * @returns the number of payment rows deleted
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
