import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';

/** The database of these tests: the x402 ledger table, from @repo/x402's test fixture. */
export const AGENT_CLIENT_TEST_DATABASE_URL =
  process.env.AGENT_CLIENT_TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/agent_client_test';

export default async function globalSetup(): Promise<void> {
  const url = new URL(AGENT_CLIENT_TEST_DATABASE_URL);
  const name = url.pathname.slice(1);
  const admin = new Client({
    connectionString: Object.assign(new URL(url), { pathname: '/postgres' }).toString(),
  });
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
  } finally {
    await admin.end();
  }
  const db = new Client({ connectionString: url.toString() });
  await db.connect();
  try {
    await db.query('DROP TABLE IF EXISTS x402_payments');
    await db.query(
      readFileSync(join(__dirname, '..', '..', 'x402', 'test', 'fixtures', 'x402_payments.sql'), 'utf8'),
    );
  } finally {
    await db.end();
  }
}
