import type { X402Network } from '@repo/schemas';
import type { VerifiedPayment } from '@repo/x402-core';
import type { PaymentKind, PaymentRecord, PaymentStatus, StoredResponse } from './types';

/** Name of the ledger table. */
export const X402_PAYMENTS_TABLE = 'x402_payments';

/**
 * The Prisma model every service that takes x402 payments pastes into its `schema.prisma`; its
 * migration creates the `x402_payments` table `PrismaPaymentLedger` uses.
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

/** A row of `x402_payments` as `pg` returns it, with whether its lease is free. */
export interface PaymentRow {
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

/** Reads one row by signature (`$1`), with whether its lease (`$2` seconds) is free. */
export const SELECT_ROW = `SELECT signature, network, endpoint, kind, status, claim_token, payer,
  amount_atomic::text AS amount_atomic, asset, pay_to, slot::text AS slot, block_time,
  response_status, response_headers::text AS response_headers, response_body, job_id, request_hash,
  claimed_at, verified_at, completed_at, created_at,
  (claim_token IS NULL OR claimed_at < now() - make_interval(secs => $2::double precision)) AS lease_free
FROM ${X402_PAYMENTS_TABLE} WHERE signature = $1`;

/** A timestamp as `pg` or Prisma returns it, as a `Date`. */
export function toDate(value: Date | string): Date {
  return value instanceof Date ? value : new Date(value);
}

/** The plain object of a row. */
export function toRecord(row: PaymentRow): PaymentRecord {
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

/** The verified payment a `verified` row records, or `undefined` while a field is missing. */
export function verifiedFromRecord(record: PaymentRecord): VerifiedPayment | undefined {
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
