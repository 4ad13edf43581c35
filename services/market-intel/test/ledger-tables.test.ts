import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { applyMigrations, resetDatabase } from '@repo/db-migrate';
import { testDatabaseUrl } from '@repo/service-kit/testing';
import {
  X402_PAYMENT_IDENTIFIER_PRISMA_MODEL,
  X402_PAYMENT_PRISMA_MODEL,
  X402_REFUND_PRISMA_MODEL,
  X402_SIWX_NONCE_PRISMA_MODEL,
  X402_VERIFICATION_ATTEMPT_PRISMA_MODEL,
} from '@repo/x402-ledger';
import { prepareTestDatabase } from '@repo/x402-ledger/testing';

// The payment ledger's tables have one source, the Prisma models @repo/x402-ledger exports: this
// service's schema pastes them as they are, its migrations are generated from that schema, and the
// package's test fixtures are generated from the same models. Both must build the same tables.
jest.setTimeout(60_000);

const TABLES = [
  'x402_payments',
  'x402_refunds',
  'x402_verification_attempts',
  'x402_payment_identifiers',
  'x402_siwx_nonces',
  'rate_limits',
];

/** Columns (by name: migrations append the columns added later), constraints and indexes of TABLES. */
async function shapeOf(databaseUrl: string): Promise<unknown[]> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const columns = await db.query(
      `SELECT table_name, column_name, data_type, character_maximum_length, numeric_precision,
              numeric_scale, datetime_precision, is_nullable, column_default
         FROM information_schema.columns
        WHERE table_schema = 'public' AND table_name = ANY($1::text[])
        ORDER BY table_name, column_name`,
      [TABLES],
    );
    const constraints = await db.query(
      `SELECT conrelid::regclass::text AS table_name, conname, pg_get_constraintdef(oid) AS definition
         FROM pg_constraint
        WHERE conrelid::regclass::text = ANY($1::text[])
        ORDER BY 1, 2`,
      [TABLES],
    );
    const indexes = await db.query(
      `SELECT tablename, indexname, indexdef FROM pg_indexes
        WHERE schemaname = 'public' AND tablename = ANY($1::text[])
        ORDER BY 1, 2`,
      [TABLES],
    );
    return [columns.rows, constraints.rows, indexes.rows];
  } finally {
    await db.end();
  }
}

describe("the payment ledger's tables", () => {
  it('When schema.prisma is read, then it carries every model the ledger exports, as exported', () => {
    const schema = readFileSync(path.join(__dirname, '..', 'prisma', 'schema.prisma'), 'utf8');
    for (const model of [
      X402_PAYMENT_PRISMA_MODEL,
      X402_REFUND_PRISMA_MODEL,
      X402_VERIFICATION_ATTEMPT_PRISMA_MODEL,
      X402_PAYMENT_IDENTIFIER_PRISMA_MODEL,
      X402_SIWX_NONCE_PRISMA_MODEL,
    ]) {
      expect(schema).toContain(model);
    }
  });

  it("When one database gets this service's migrations and another the ledger's test fixtures, then their ledger tables are the same", async () => {
    const migrated = testDatabaseUrl('market_intel_ledger_tables_migrated_test');
    const fixtures = testDatabaseUrl('market_intel_ledger_tables_fixtures_test');
    await resetDatabase(migrated);
    await applyMigrations({
      databaseUrl: migrated,
      migrationsDir: path.join(__dirname, '..', 'prisma', 'migrations'),
      log: { info: () => undefined, warn: () => undefined },
    });
    await resetDatabase(fixtures);
    await prepareTestDatabase(fixtures);
    const expected = await shapeOf(migrated);
    expect(expected[0]).toEqual(expect.arrayContaining([expect.objectContaining({ table_name: TABLES[2] })]));
    expect(await shapeOf(fixtures)).toEqual(expected);
  });
});
