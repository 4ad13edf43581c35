import type { X402Network } from '@repo/schemas';
import { X402_PAYMENTS_TABLE } from './payments-table';
import type { SqlClient } from './types';

/** Name of the table of payment identifiers. */
export const X402_PAYMENT_IDENTIFIERS_TABLE = 'x402_payment_identifiers';

/**
 * The Prisma model every service that honours the x402 `payment-identifier` extension pastes into its
 * `schema.prisma` beside `X402Payment`; its migration creates the `x402_payment_identifiers` table
 * {@link PrismaPaymentIdentifiers} uses (README, "Payment identifiers").
 */
export const X402_PAYMENT_IDENTIFIER_PRISMA_MODEL = `/// x402 payment identifiers (@repo/x402-ledger): per payer wallet, the idempotency key of the payment-identifier extension and the payment it stands for.
model X402PaymentIdentifier {
  /// The payer wallet (base58) whose signature of the transaction was checked.
  payer       String
  /// The payment-identifier extension's id (16-128 characters: letters, digits, "-", "_").
  identifier  String
  /// The payment (x402_payments.signature) that answers every retry with this identifier.
  signature   String
  network     String
  endpoint    String
  /// Hash of the request the identifier was first used for: another request with it is a 409.
  requestHash String   @map("request_hash")
  /// When the identifier was bound to this payment.
  createdAt   DateTime @default(now()) @map("created_at") @db.Timestamptz(3)

  @@id([payer, identifier])
  @@map("x402_payment_identifiers")
}
`;

/** A payment presented with a payment identifier: who pays, under which identifier, for what. */
export interface IdentifierBinding {
  /** The payer wallet (base58), its signature of the transaction already checked. */
  payer: string;
  /** The `payment-identifier` id, already validated (16-128 characters of `[A-Za-z0-9_-]`). */
  identifier: string;
  /** The ledger key of this request's own payment (base58 transaction signature). */
  signature: string;
  /** The request's network. */
  network: X402Network;
  /** Endpoint identity, e.g. `"GET /api/v1/scout/gaps"`. */
  endpoint: string;
  /** The request's hash (`requestHash` of `@repo/x402-core`). */
  requestHash: string;
}

/**
 * Outcome of {@link PaymentIdentifiers.bind}:
 * - `bound`: the identifier was free and now stands for this request's own payment;
 * - `existing`: it already stands for `signature` (this payment's or an earlier one's) for the same
 *   request: that payment answers;
 * - `conflict`: it stands for another request (endpoint, network or request hash): 409.
 */
export type BindOutcome =
  | { outcome: 'bound'; signature: string }
  | { outcome: 'existing'; signature: string }
  | { outcome: 'conflict' };

/**
 * The payment-identifier store (README, "Payment identifiers"): one row per payer wallet and
 * identifier naming the payment that answers every request carrying it. It is written before any
 * network call; only the holder of the named payment's ledger claim may move it to another payment.
 */
export interface PaymentIdentifiers {
  /** Binds `binding.identifier` to `binding.signature` unless it is bound already, in one statement. */
  bind(binding: IdentifierBinding): Promise<BindOutcome>;
  /**
   * Moves the identifier from `from` to `binding.signature` (compare-and-set): call it only while
   * holding the ledger claim of `from`, whose payment did not verify.
   * @returns `false` when the identifier no longer names `from`
   */
  rebind(binding: IdentifierBinding, from: string): Promise<boolean>;
  /**
   * Deletes the identifier if it still names `binding.signature` (compare-and-set): call it only while
   * holding that payment's ledger claim, when it was refused before anything was sent, so that
   * refused attempts leave nothing behind.
   */
  unbind(binding: IdentifierBinding): Promise<void>;
  /** The signature the identifier of `payer` names, or `null`. */
  boundTo(payer: string, identifier: string): Promise<string | null>;
  /**
   * Deletes identifiers bound more than `olderThanMs` milliseconds ago whose payment never verified
   * and is not being processed (its ledger row is gone, or `processing` with no claim): identifiers
   * are kept as long as answers are.
   * @returns the number of rows deleted
   */
  prune(olderThanMs: number): Promise<number>;
}

interface BindingRow {
  signature: string;
  network: string;
  endpoint: string;
  request_hash: string;
}

const BIND = `WITH inserted AS (
  INSERT INTO ${X402_PAYMENT_IDENTIFIERS_TABLE} (payer, identifier, signature, network, endpoint, request_hash)
  VALUES ($1, $2, $3, $4, $5, $6)
  ON CONFLICT (payer, identifier) DO NOTHING
  RETURNING signature, network, endpoint, request_hash, true AS inserted)
SELECT signature, network, endpoint, request_hash, inserted FROM inserted
UNION ALL
SELECT signature, network, endpoint, request_hash, false FROM ${X402_PAYMENT_IDENTIFIERS_TABLE}
 WHERE payer = $1 AND identifier = $2 AND NOT EXISTS (SELECT 1 FROM inserted)`;

const SELECT_BINDING = `SELECT signature, network, endpoint, request_hash FROM ${X402_PAYMENT_IDENTIFIERS_TABLE}
 WHERE payer = $1 AND identifier = $2`;

/**
 * {@link PaymentIdentifiers} over PostgreSQL (raw SQL with placeholders) through a Prisma client or
 * any {@link SqlClient}; the table comes from {@link X402_PAYMENT_IDENTIFIER_PRISMA_MODEL}. The primary
 * key `(payer, identifier)` makes the binding hold across replicas.
 */
export class PrismaPaymentIdentifiers implements PaymentIdentifiers {
  /** @param db the database client (Prisma client or adapter) */
  constructor(private readonly db: SqlClient) {}

  /** {@inheritDoc PaymentIdentifiers.bind} */
  async bind(binding: IdentifierBinding): Promise<BindOutcome> {
    let row: (BindingRow & { inserted?: boolean }) | undefined = (
      await this.db.$queryRawUnsafe<(BindingRow & { inserted: boolean })[]>(
        BIND,
        binding.payer,
        binding.identifier,
        binding.signature,
        binding.network,
        binding.endpoint,
        binding.requestHash,
      )
    )[0];
    // A row another transaction committed while the insert waited is outside the statement's
    // snapshot: read it with a new one.
    row ??= (
      await this.db.$queryRawUnsafe<BindingRow[]>(SELECT_BINDING, binding.payer, binding.identifier)
    )[0];
    if (!row) throw new Error('payment identifier neither inserted nor found');
    if (
      row.network !== binding.network ||
      row.endpoint !== binding.endpoint ||
      row.request_hash !== binding.requestHash
    )
      return { outcome: 'conflict' };
    return { outcome: row.inserted === true ? 'bound' : 'existing', signature: row.signature };
  }

  /** {@inheritDoc PaymentIdentifiers.rebind} */
  async rebind(binding: IdentifierBinding, from: string): Promise<boolean> {
    const count = await this.db.$executeRawUnsafe(
      `UPDATE ${X402_PAYMENT_IDENTIFIERS_TABLE} SET signature = $3, created_at = now()
        WHERE payer = $1 AND identifier = $2 AND signature = $4
          AND network = $5 AND endpoint = $6 AND request_hash = $7`,
      binding.payer,
      binding.identifier,
      binding.signature,
      from,
      binding.network,
      binding.endpoint,
      binding.requestHash,
    );
    return count > 0;
  }

  /** {@inheritDoc PaymentIdentifiers.unbind} */
  async unbind(binding: IdentifierBinding): Promise<void> {
    await this.db.$executeRawUnsafe(
      `DELETE FROM ${X402_PAYMENT_IDENTIFIERS_TABLE} WHERE payer = $1 AND identifier = $2 AND signature = $3`,
      binding.payer,
      binding.identifier,
      binding.signature,
    );
  }

  /** {@inheritDoc PaymentIdentifiers.boundTo} */
  async boundTo(payer: string, identifier: string): Promise<string | null> {
    const rows = await this.db.$queryRawUnsafe<BindingRow[]>(SELECT_BINDING, payer, identifier);
    return rows[0]?.signature ?? null;
  }

  /** {@inheritDoc PaymentIdentifiers.prune} */
  async prune(olderThanMs: number): Promise<number> {
    return this.db.$executeRawUnsafe(
      `DELETE FROM ${X402_PAYMENT_IDENTIFIERS_TABLE} i
        WHERE i.created_at < now() - make_interval(secs => $1::double precision)
          AND NOT EXISTS (SELECT 1 FROM ${X402_PAYMENTS_TABLE} p
                           WHERE p.signature = i.signature
                             AND (p.status <> 'processing' OR p.claim_token IS NOT NULL))`,
      olderThanMs / 1000,
    );
  }
}
