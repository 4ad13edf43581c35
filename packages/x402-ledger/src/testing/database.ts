import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { TEST_DATABASE_URL } from './pg-sql-client';

/**
 * Creates the test database if needed and (re)creates the `x402_payments`, `x402_refunds`,
 * `x402_verification_attempts`, `x402_payment_identifiers` and `x402_siwx_nonces` tables from the
 * fixtures generated from `X402_PAYMENT_PRISMA_MODEL`, `X402_REFUND_PRISMA_MODEL`,
 * `X402_VERIFICATION_ATTEMPT_PRISMA_MODEL`, `X402_PAYMENT_IDENTIFIER_PRISMA_MODEL` and
 * `X402_SIWX_NONCE_PRISMA_MODEL`, and the `rate_limits` table
 * of `@repo/service-kit`'s rate limits, whose layout an `AttemptCounter` may also name: for a jest
 * `globalSetup`, once per run, before the test files run in parallel workers.
 *
 * @param url the database, default {@link TEST_DATABASE_URL}
 * @throws Error from `pg` when PostgreSQL cannot be reached
 */
export async function prepareTestDatabase(url: string = TEST_DATABASE_URL): Promise<void> {
  const target = new URL(url);
  const databaseName = target.pathname.slice(1);
  const admin = new Client({
    connectionString: Object.assign(new URL(url), { pathname: '/postgres' }).toString(),
  });
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [databaseName]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE "${databaseName.replace(/"/g, '""')}"`);
  } finally {
    await admin.end();
  }
  const db = new Client({ connectionString: url });
  await db.connect();
  try {
    await db.query(
      'DROP TABLE IF EXISTS x402_payments, x402_refunds, x402_verification_attempts, x402_payment_identifiers, x402_siwx_nonces, rate_limits',
    );
    for (const fixture of [
      'x402_payments.sql',
      'x402_refunds.sql',
      'x402_verification_attempts.sql',
      'x402_payment_identifiers.sql',
      'x402_siwx_nonces.sql',
      'rate_limits.sql',
    ]) {
      await db.query(readFileSync(join(__dirname, '..', '..', 'fixtures', fixture), 'utf8'));
    }
  } finally {
    await db.end();
  }
}
