import type { X402Network } from '@repo/schemas';
import { X402_PAYMENTS_TABLE } from './payments-table';
import type { SqlClient } from './types';

/** Name of the table of used sign-in-with-x nonces. */
export const X402_SIWX_NONCES_TABLE = 'x402_siwx_nonces';

/**
 * The Prisma model every service that honours the x402 `sign-in-with-x` extension pastes into its
 * `schema.prisma` beside `X402Payment`; its migration creates the `x402_siwx_nonces` table
 * {@link PrismaSignInRecords} uses (README, "Sign-in-with-x").
 */
export const X402_SIWX_NONCE_PRISMA_MODEL = `/// x402 sign-in-with-x (@repo/x402-ledger): every nonce a valid sign-in proof used, kept until the proof expires, so that each is used once across replicas.
model X402SiwxNonce {
  /// The nonce of the signed message (the 402's challenge).
  nonce     String   @id
  /// The wallet (base58) whose signature of the message was checked.
  address   String
  /// When the signed message expires: the nonce may be forgotten after it.
  expiresAt DateTime @map("expires_at") @db.Timestamptz(3)
  createdAt DateTime @default(now()) @map("created_at") @db.Timestamptz(3)

  @@index([expiresAt])
  @@map("x402_siwx_nonces")
}
`;

/** What a payer paid for, as {@link SignInRecords.paidAccess} looks it up. */
export interface PaidAccessQuery {
  /** The wallet (base58) that signed in: the payment's transfer authority. */
  payer: string;
  network: X402Network;
  /** Endpoint identity, e.g. `"GET /api/v1/scout/gaps"`. */
  endpoint: string;
  /** The request's hash (`requestHash` of `@repo/x402-core`): the payment was for this very request. */
  requestHash: string;
  /** The earliest verification that still counts (the access window's start). */
  since: Date;
}

/** A completed payment found by {@link SignInRecords.paidAccess}. */
export interface PaidAccess {
  /** The payment's transaction signature. */
  signature: string;
  /** The job it started (asynchronous endpoints), else `null`. */
  jobId: string | null;
  /** When the payment was verified: the access window counts from then. */
  verifiedAt: Date;
}

/**
 * What sign-in-with-x needs from the ledger's database (README, "Sign-in-with-x"): single-use nonces
 * across replicas, and the payments a wallet made.
 */
export interface SignInRecords {
  /**
   * Records `nonce` as used by `address` until `expiresAt`, in one statement.
   * @returns `false` when it was used already (a replayed proof)
   */
  useNonce(nonce: string, address: string, expiresAt: Date): Promise<boolean>;
  /** The latest completed payment of `query.payer` for the request, verified at or after `query.since`. */
  paidAccess(query: PaidAccessQuery): Promise<PaidAccess | undefined>;
  /** The transfer authority of a verified payment, or `null` (unknown or not verified). */
  payerOf(signature: string): Promise<string | null>;
  /**
   * Deletes the nonces whose proofs expired before `before` (a proof past its expiry is refused anyway).
   * @returns the number of rows deleted
   */
  pruneNonces(before: Date): Promise<number>;
}

const USE_NONCE = `INSERT INTO ${X402_SIWX_NONCES_TABLE} (nonce, address, expires_at) VALUES ($1, $2, $3)
  ON CONFLICT (nonce) DO NOTHING RETURNING 1 AS used`;

const PAID_ACCESS = `SELECT signature, job_id, verified_at FROM ${X402_PAYMENTS_TABLE}
 WHERE payer = $1 AND network = $2 AND endpoint = $3 AND request_hash = $4
   AND status = 'completed' AND verified_at >= $5
 ORDER BY verified_at DESC LIMIT 1`;

/**
 * {@link SignInRecords} over PostgreSQL through a Prisma client or any {@link SqlClient}: the nonces
 * in `x402_siwx_nonces` (from {@link X402_SIWX_NONCE_PRISMA_MODEL}; its primary key makes a nonce
 * single use across replicas), the payments in `x402_payments` (by its `payer` index).
 */
export class PrismaSignInRecords implements SignInRecords {
  /** @param db the database client (Prisma client or adapter) */
  constructor(private readonly db: SqlClient) {}

  /** {@inheritDoc SignInRecords.useNonce} */
  async useNonce(nonce: string, address: string, expiresAt: Date): Promise<boolean> {
    const rows = await this.db.$queryRawUnsafe<{ used: number }[]>(USE_NONCE, nonce, address, expiresAt);
    return rows.length === 1;
  }

  /** {@inheritDoc SignInRecords.paidAccess} */
  async paidAccess(query: PaidAccessQuery): Promise<PaidAccess | undefined> {
    const rows = await this.db.$queryRawUnsafe<
      { signature: string; job_id: string | null; verified_at: Date }[]
    >(PAID_ACCESS, query.payer, query.network, query.endpoint, query.requestHash, query.since);
    const row = rows[0];
    return row && { signature: row.signature, jobId: row.job_id, verifiedAt: new Date(row.verified_at) };
  }

  /** {@inheritDoc SignInRecords.payerOf} */
  async payerOf(signature: string): Promise<string | null> {
    const rows = await this.db.$queryRawUnsafe<{ payer: string | null }[]>(
      `SELECT payer FROM ${X402_PAYMENTS_TABLE} WHERE signature = $1 AND verified_at IS NOT NULL`,
      signature,
    );
    return rows[0]?.payer ?? null;
  }

  /** {@inheritDoc SignInRecords.pruneNonces} */
  async pruneNonces(before: Date): Promise<number> {
    return this.db.$executeRawUnsafe(`DELETE FROM ${X402_SIWX_NONCES_TABLE} WHERE expires_at < $1`, before);
  }
}
