import type { ClaimOutcome, PaymentClaim, SqlClient } from '../src/index';
import { PgSqlClient } from '@repo/x402-ledger/testing';

/** The claim of a `claimed` outcome. */
export function claimedOf(outcome: ClaimOutcome): PaymentClaim {
  if (outcome.outcome !== 'claimed') throw new Error(`expected claimed, got ${outcome.outcome}`);
  return outcome.claim;
}

/** The `x402_payments` row of `signature`: status, lease, payer, amount, slot, job and stored status. */
export async function rowOf(db: SqlClient, signature: string): Promise<Record<string, unknown> | undefined> {
  const rows = await db.$queryRawUnsafe<Record<string, unknown>[]>(
    'SELECT status, claim_token, payer, amount_atomic::text AS amount, slot::text AS slot, job_id, response_status FROM x402_payments WHERE signature = $1',
    signature,
  );
  return rows[0];
}

/** `db` as a {@link SqlClient} that lists every statement it runs. */
export function countingClient(db: SqlClient): { client: SqlClient; statements: string[] } {
  const statements: string[] = [];
  const client: SqlClient = {
    $queryRawUnsafe: <T>(sql: string, ...values: unknown[]) => {
      statements.push(sql);
      return db.$queryRawUnsafe<T>(sql, ...values);
    },
    $executeRawUnsafe: (sql: string, ...values: unknown[]) => {
      statements.push(sql);
      return db.$executeRawUnsafe(sql, ...values);
    },
  };
  return { client, statements };
}

/**
 * Two clients of the test database, as two replicas would hold: pools that connect on first use,
 * closed after the file's tests.
 */
export function replicaClients(): { db: PgSqlClient; replicaDb: PgSqlClient } {
  const db = new PgSqlClient();
  const replicaDb = new PgSqlClient();
  afterAll(async () => {
    await db.close();
    await replicaDb.close();
  });
  return { db, replicaDb };
}
