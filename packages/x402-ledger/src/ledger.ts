import { randomUUID } from 'node:crypto';
import { AppError } from '@repo/errors';
import type { VerifiedPayment } from '@repo/x402-core';
import { X402_VERIFICATION_ATTEMPTS_TABLE } from './attempts';
import { CLAIM_INSERT, recordVerified, take, type TakenRow } from './claim-statements';
import { delay, gate, waitAtMost, type Gate } from './gates';
import {
  SELECT_ROW,
  toRecord,
  verifiedFromRecord,
  X402_PAYMENTS_TABLE,
  type PaymentRow,
} from './payments-table';
import { SettledCache, settledOutcome } from './settled-cache';
import type {
  ClaimOutcome,
  ClaimRequest,
  PaymentClaim,
  PaymentLedger,
  PaymentLedgerOptions,
  PaymentRecord,
  SqlClient,
  StoredResponse,
} from './types';

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
  private readonly settled: SettledCache;
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
    this.settled = new SettledCache(
      options.settledCacheSize ?? 10_000,
      options.settledCacheBytes ?? 16 * 1024 * 1024,
    );
    this.now = options.now;
  }

  /** The first-sighting time to store: the configured clock's, or null for the database's `now()`. */
  private sightedAt(): string | null {
    return this.now ? this.now().toISOString() : null;
  }

  /** {@inheritDoc PaymentLedger.claim} */
  async claim(request: ClaimRequest): Promise<ClaimOutcome> {
    const known = this.settled.get(request.signature);
    if (known) return settledOutcome(known, request);
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
      const created = await take(
        this.db,
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
        this.settled.remember(record);
        return settledOutcome(record, request);
      }
      if (record.endpoint !== request.endpoint || record.network !== request.network) {
        if (record.status !== 'processing') return { outcome: 'other_endpoint', record };
        // Unverified, the signature binds nothing yet: never answer a final-looking refusal.
        if (!row.lease_free) return { outcome: 'busy', record, retryAfterSeconds: 1 };
        // An abandoned unverified claim is taken over for this request's endpoint.
        const moved = await take(
          this.db,
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
        const taken = await take(
          this.db,
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

  /** {@inheritDoc PaymentLedger.markVerified} */
  async markVerified(claim: PaymentClaim, payment: VerifiedPayment): Promise<boolean> {
    return recordVerified(this.db, claim, payment, "status = 'verified', claimed_at = now()");
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
        return await recordVerified(
          this.db,
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
        await recordVerified(this.db, claim, verified, "status = 'verified', claim_token = NULL");
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
    await this.letGo(
      claim,
      `UPDATE ${X402_PAYMENTS_TABLE} SET claim_token = NULL
         WHERE signature = $1 AND claim_token = $2 AND status = 'processing'`,
    );
  }

  /** {@inheritDoc PaymentLedger.forget} */
  async forget(claim: PaymentClaim): Promise<void> {
    await this.letGo(
      claim,
      `DELETE FROM ${X402_PAYMENTS_TABLE} WHERE signature = $1 AND claim_token = $2 AND status = 'processing'`,
    );
  }

  /**
   * Runs `statement` on the claim's row (`$1` its signature, `$2` its claim token), then opens the
   * claim's gate whether it succeeded or not: how a claim that served nothing is let go.
   */
  private async letGo(claim: PaymentClaim, statement: string): Promise<void> {
    try {
      await this.db.$executeRawUnsafe(statement, claim.signature, claim.token);
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
    // Counters are kept an hour past their window, so a replica whose clock lags still finds its own.
    return this.db.$executeRawUnsafe(
      `WITH ended AS (DELETE FROM ${X402_VERIFICATION_ATTEMPTS_TABLE} WHERE expire < $3::bigint)
       DELETE FROM ${X402_PAYMENTS_TABLE}
        WHERE status = 'processing'
          AND created_at < now() - make_interval(secs => $1::double precision)
          AND (claim_token IS NULL OR claimed_at < now() - make_interval(secs => $2::double precision))`,
      olderThanMs / 1000,
      this.leaseSeconds,
      String(Date.now() - 3_600_000),
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
