import { randomUUID } from 'node:crypto';
import type { X402Network } from '@repo/schemas';
import { X402_PAYMENTS_TABLE } from './payments-table';
import type { SqlClient } from './types';

/** Name of the refunds table. */
export const X402_REFUNDS_TABLE = 'x402_refunds';

/**
 * The Prisma model every service that refunds x402 payments pastes into its `schema.prisma` beside
 * `X402_PAYMENT_PRISMA_MODEL`; its migration creates the `x402_refunds` table
 * {@link PrismaRefundLedger} uses.
 */
export const X402_REFUND_PRISMA_MODEL = `/// x402 refunds (@repo/x402-ledger): at most one per payment, sent from the refund wallet until confirmed, or held as unclaimable.
model X402Refund {
  /// The refunded payment's transaction signature (x402_payments.signature).
  paymentSignature     String    @id @map("payment_signature")
  network              String
  /// The wallet that paid (the payment transfer's authority).
  payer                String
  /// Atomic units of \`asset\` returned: the whole amount paid.
  amountAtomic         Decimal   @map("amount_atomic") @db.Decimal(39, 0)
  asset                String
  /// Why it is refunded, e.g. "job_failed:<code>".
  reason               String
  jobId                String?   @map("job_id")
  /// pending (being sent), confirmed (on chain) or unclaimable (held, never sent: see unclaimableReason).
  status               String    @default("pending")
  /// The token account the refund pays into: the one the payment came from, read from the payment on chain.
  destination          String?
  /// Why an unclaimable refund is held, e.g. "source_account_closed".
  unclaimableReason    String?   @map("unclaimable_reason")
  /// The refund transaction of the current attempt, stored signed before it is sent.
  signature            String?   @unique
  transaction          String?
  lastValidBlockHeight BigInt?   @map("last_valid_block_height")
  slot                 BigInt?
  /// Refund transactions built so far (a new one only once the last failed or expired).
  attempts             Int       @default(0)
  lastError            String?   @map("last_error")
  claimToken           String?   @map("claim_token")
  nextAttemptAt        DateTime  @default(now()) @map("next_attempt_at") @db.Timestamptz(3)
  createdAt            DateTime  @default(now()) @map("created_at") @db.Timestamptz(3)
  confirmedAt          DateTime? @map("confirmed_at") @db.Timestamptz(3)

  @@index([status, nextAttemptAt])
  @@index([jobId])
  @@map("x402_refunds")
}
`;

/**
 * `pending`: being sent (or waiting for the next attempt); `confirmed`: on chain, final;
 * `unclaimable`: held, final, never sent (the account the payment came from is gone or changed:
 * README "@repo/x402-ledger", "Refunds").
 */
export type RefundStatus = 'pending' | 'confirmed' | 'unclaimable';

/** One refund as a plain object. */
export interface RefundRecord {
  /** The refunded payment's transaction signature (primary key). */
  paymentSignature: string;
  /** The payment's network. */
  network: X402Network;
  /** The wallet that paid (the payment's transfer authority). */
  payer: string;
  /**
   * The merchant token account the payment went into (`x402_payments.pay_to`, read with the refund):
   * picks the payment's transfer on chain; null when the payment row does not name it.
   */
  payTo: string | null;
  /** Atomic units of `asset` returned. */
  amountAtomic: bigint;
  /** The mint. */
  asset: string;
  /** Why it is refunded. */
  reason: string;
  /** The job the payment bought, if any. */
  jobId: string | null;
  status: RefundStatus;
  /** The token account the refund pays into (the payment's source), once read from the chain. */
  destination: string | null;
  /** Why the refund is held, when `status` is `unclaimable` (e.g. `source_account_closed`). */
  unclaimableReason: string | null;
  /** The current (or, once confirmed, the landed) refund transaction's signature. */
  signature: string | null;
  /** The current attempt's signed wire transaction (base64), to send again after a crash. */
  transaction: string | null;
  /** The last block height at which the current attempt can land. */
  lastValidBlockHeight: number | null;
  /** The slot it landed in, once confirmed. */
  slot: number | null;
  /** Refund transactions built so far. */
  attempts: number;
  /** The last failure, for operators (never shown to payers). */
  lastError: string | null;
  createdAt: Date;
  confirmedAt: Date | null;
}

/** The right to work on one refund, held until {@link PrismaRefundLedger.release} or the lease ends. */
export interface RefundClaim {
  /** Opaque lease token; every write is conditional on it. */
  token: string;
  /** The refund as it was when claimed. */
  refund: RefundRecord;
}

interface RefundRow {
  payment_signature: string;
  network: string;
  payer: string;
  pay_to: string | null;
  amount_atomic: string;
  asset: string;
  reason: string;
  job_id: string | null;
  status: string;
  destination: string | null;
  unclaimable_reason: string | null;
  signature: string | null;
  transaction: string | null;
  last_valid_block_height: string | null;
  slot: string | null;
  attempts: number;
  last_error: string | null;
  created_at: Date | string;
  confirmed_at: Date | string | null;
  claim_token: string | null;
}

// The merchant account is the payment's (`x402_payments.pay_to`), read with every refund.
const COLUMNS = `payment_signature, network, payer,
  (SELECT p.pay_to FROM ${X402_PAYMENTS_TABLE} p WHERE p.signature = ${X402_REFUNDS_TABLE}.payment_signature) AS pay_to,
  amount_atomic::text AS amount_atomic, asset, reason, job_id, status, destination, unclaimable_reason,
  signature, transaction, last_valid_block_height::text AS last_valid_block_height,
  slot::text AS slot, attempts, last_error, created_at, confirmed_at, claim_token`;

function toRecord(row: RefundRow): RefundRecord {
  return {
    paymentSignature: row.payment_signature,
    network: row.network as X402Network,
    payer: row.payer,
    payTo: row.pay_to,
    amountAtomic: BigInt(row.amount_atomic),
    asset: row.asset,
    reason: row.reason,
    jobId: row.job_id,
    status: row.status as RefundStatus,
    destination: row.destination,
    unclaimableReason: row.unclaimable_reason,
    signature: row.signature,
    transaction: row.transaction,
    lastValidBlockHeight: row.last_valid_block_height === null ? null : Number(row.last_valid_block_height),
    slot: row.slot === null ? null : Number(row.slot),
    attempts: row.attempts,
    lastError: row.last_error,
    createdAt: new Date(row.created_at),
    confirmedAt: row.confirmed_at === null ? null : new Date(row.confirmed_at),
  };
}

/**
 * Refunds of x402 payments in PostgreSQL (README "@repo/x402-ledger", "Refunds"), through a Prisma
 * client or any {@link SqlClient}: at most one row per payment (its signature is the key), claimed
 * with a lease (`FOR UPDATE SKIP LOCKED`, then a token every write is conditional on) so one replica
 * works on a refund at a time, and holding the signed transaction of the current attempt so that a
 * crash between signing and sending leads to that same transaction being sent again, never to a
 * second one. A new attempt may only be recorded once the last one was cleared (it failed on chain or
 * expired without landing). Only `pending` refunds are ever claimed: `confirmed` and `unclaimable`
 * are final.
 */
export class PrismaRefundLedger {
  /** @param db the database client (Prisma client or adapter) */
  constructor(private readonly db: SqlClient) {}

  /**
   * Queues the refund of a verified payment: the whole amount, to its payer, in its network and mint
   * (read from `x402_payments`). Pass the service's transaction client so that the refund commits
   * with the state change that causes it.
   * @param paymentSignature the payment's transaction signature
   * @param reason why, e.g. `job_failed:llm_unavailable`
   * @param tx the transaction to write in (default this ledger's client)
   * @returns the payment's network when queued now; null when it was queued before or the payment is
   *   unknown or not verified (nothing to refund)
   */
  async queue(
    paymentSignature: string,
    reason: { reason: string; jobId?: string },
    tx: SqlClient = this.db,
  ): Promise<X402Network | null> {
    const rows = await tx.$queryRawUnsafe<{ network: X402Network }[]>(
      `INSERT INTO ${X402_REFUNDS_TABLE} (payment_signature, network, payer, amount_atomic, asset, reason, job_id)
       SELECT signature, network, payer, amount_atomic, asset, $2, $3 FROM ${X402_PAYMENTS_TABLE}
        WHERE signature = $1 AND payer IS NOT NULL AND amount_atomic IS NOT NULL AND asset IS NOT NULL
       ON CONFLICT (payment_signature) DO NOTHING
       RETURNING network`,
      paymentSignature,
      reason.reason,
      reason.jobId ?? null,
    );
    return rows[0]?.network ?? null;
  }

  /**
   * Claims up to `limit` pending refunds that are due (oldest first), each for `leaseMs`
   * milliseconds; refunds another replica holds are skipped. "Due" compares at the column's
   * millisecond precision: a stored time is rounded, up as often as down, so a refund queued or
   * released just now is due at once, not half a millisecond later.
   */
  async claimDue(limit: number, leaseMs: number): Promise<RefundClaim[]> {
    const token = randomUUID();
    const rows = await this.db.$queryRawUnsafe<RefundRow[]>(
      `UPDATE ${X402_REFUNDS_TABLE} SET claim_token = $1,
              next_attempt_at = now() + ($3::int * interval '1 millisecond')
        WHERE payment_signature IN (
          SELECT payment_signature FROM ${X402_REFUNDS_TABLE}
           WHERE status = 'pending' AND next_attempt_at <= now()::timestamptz(3)
           ORDER BY next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED)
        RETURNING ${COLUMNS}`,
      token,
      limit,
      leaseMs,
    );
    return rows.map((row) => ({ token, refund: toRecord(row) }));
  }

  /**
   * Records a signed refund transaction as the claim's current attempt, before it is sent.
   * @param attempt the signed transaction (signature, base64 wire bytes, last valid block height) and
   *   the token account it pays into
   * @returns `false` (record nothing, send nothing) when the lease was lost, an attempt is recorded or
   *   the refund is no longer pending
   */
  async recordAttempt(
    claim: RefundClaim,
    attempt: { signature: string; transaction: string; lastValidBlockHeight: number; destination: string },
  ): Promise<boolean> {
    const count = await this.db.$executeRawUnsafe(
      `UPDATE ${X402_REFUNDS_TABLE} SET signature = $3, transaction = $4, last_valid_block_height = $5,
              destination = $6, attempts = attempts + 1
        WHERE payment_signature = $1 AND claim_token = $2 AND status = 'pending' AND signature IS NULL`,
      claim.refund.paymentSignature,
      claim.token,
      attempt.signature,
      attempt.transaction,
      attempt.lastValidBlockHeight,
      attempt.destination,
    );
    if (count > 0) {
      Object.assign(claim.refund, { ...attempt, attempts: claim.refund.attempts + 1 });
    }
    return count > 0;
  }

  /**
   * Clears the current attempt `signature`, which failed on chain or expired without landing, so
   * that a new one may be built.
   * @returns `false` when the lease was lost or another attempt is current
   */
  async clearAttempt(claim: RefundClaim, signature: string, error: string): Promise<boolean> {
    const count = await this.db.$executeRawUnsafe(
      `UPDATE ${X402_REFUNDS_TABLE} SET signature = NULL, transaction = NULL, last_valid_block_height = NULL,
              last_error = $4
        WHERE payment_signature = $1 AND claim_token = $2 AND signature = $3 AND status = 'pending'`,
      claim.refund.paymentSignature,
      claim.token,
      signature,
      error.slice(0, 1000),
    );
    if (count > 0) {
      Object.assign(claim.refund, { signature: null, transaction: null, lastValidBlockHeight: null });
    }
    return count > 0;
  }

  /**
   * Marks the refund confirmed with the attempt `signature` that landed at `slot`, and ends the claim.
   * @returns `false` when the lease was lost or another attempt is current
   */
  async markConfirmed(claim: RefundClaim, signature: string, slot: number): Promise<boolean> {
    const count = await this.db.$executeRawUnsafe(
      `UPDATE ${X402_REFUNDS_TABLE} SET status = 'confirmed', slot = $4, confirmed_at = now(),
              claim_token = NULL, last_error = NULL, transaction = NULL
        WHERE payment_signature = $1 AND claim_token = $2 AND signature = $3 AND status = 'pending'`,
      claim.refund.paymentSignature,
      claim.token,
      signature,
      slot,
    );
    return count > 0;
  }

  /**
   * Holds the refund as `unclaimable` (final: never claimed, built or sent again) and ends the claim:
   * the account the payment came from is gone or changed, and refunding would cost more than the
   * refund (README "@repo/x402-ledger", "Refunds"). Only while no attempt is current, since a stored
   * transaction may still land.
   * @param hold `reason` (a code such as `source_account_closed`), `destination` (the paying token
   *   account, when known) and `detail` (for operators, kept in `last_error`)
   * @returns `false` when the lease was lost, an attempt is current or the refund is no longer pending
   */
  async markUnclaimable(
    claim: RefundClaim,
    hold: { reason: string; destination: string | null; detail: string },
  ): Promise<boolean> {
    const count = await this.db.$executeRawUnsafe(
      `UPDATE ${X402_REFUNDS_TABLE} SET status = 'unclaimable', unclaimable_reason = $3,
              destination = COALESCE($4, destination), last_error = $5, claim_token = NULL
        WHERE payment_signature = $1 AND claim_token = $2 AND status = 'pending' AND signature IS NULL`,
      claim.refund.paymentSignature,
      claim.token,
      hold.reason,
      hold.destination,
      hold.detail.slice(0, 1000),
    );
    return count > 0;
  }

  /**
   * Ends the claim of a refund still pending; it is due again after `retryAfterMs` milliseconds.
   * @param error the failure to record for operators, if any
   */
  async release(claim: RefundClaim, retryAfterMs: number, error?: string): Promise<void> {
    await this.db.$executeRawUnsafe(
      `UPDATE ${X402_REFUNDS_TABLE} SET claim_token = NULL,
              next_attempt_at = now() + ($3::int * interval '1 millisecond'),
              last_error = COALESCE($4, last_error)
        WHERE payment_signature = $1 AND claim_token = $2`,
      claim.refund.paymentSignature,
      claim.token,
      Math.round(retryAfterMs),
      error === undefined ? null : error.slice(0, 1000),
    );
  }

  /** The refund of a payment, or null. */
  async forPayment(paymentSignature: string): Promise<RefundRecord | null> {
    const rows = await this.db.$queryRawUnsafe<RefundRow[]>(
      `SELECT ${COLUMNS} FROM ${X402_REFUNDS_TABLE} WHERE payment_signature = $1`,
      paymentSignature,
    );
    return rows[0] ? toRecord(rows[0]) : null;
  }

  /** Number of refunds not confirmed yet, per network (for a gauge). */
  async countPending(): Promise<Partial<Record<X402Network, number>>> {
    const rows = await this.db.$queryRawUnsafe<{ network: string; n: number }[]>(
      `SELECT network, count(*)::int AS n FROM ${X402_REFUNDS_TABLE} WHERE status = 'pending' GROUP BY network`,
    );
    return Object.fromEntries(rows.map((r) => [r.network, r.n]));
  }
}
