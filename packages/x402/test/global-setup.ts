import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';

/**
 * Creates the x402_test database if needed and (re)creates the x402_payments table from the fixture,
 * once per jest run, before the test files run in parallel workers.
 */
export default async function globalSetup(): Promise<void> {
  const url = process.env.X402_TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/x402_test';
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
    await db.query('DROP TABLE IF EXISTS x402_payments');
    await db.query(readFileSync(join(__dirname, 'fixtures', 'x402_payments.sql'), 'utf8'));
  } finally {
    await db.end();
  }
}
