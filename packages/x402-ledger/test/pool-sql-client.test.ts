import { Pool, type PoolClient } from 'pg';
import { PoolSqlClient } from '../src/index';
import { TEST_DATABASE_URL } from '@repo/x402-ledger/testing';

let pool: Pool;

beforeAll(() => {
  pool = new Pool({ connectionString: TEST_DATABASE_URL, max: 2 });
});

afterAll(async () => {
  await pool.end();
});

/** Runs `work` on a connection of its own (no statement prepared on it yet), then closes it. */
async function onNewConnection(work: (connection: PoolClient) => Promise<void>): Promise<void> {
  const connection = await pool.connect();
  try {
    await work(connection);
  } finally {
    connection.release(true);
  }
}

/** The statements prepared on `connection`, as PostgreSQL lists them. */
async function prepared(connection: PoolClient): Promise<{ name: string; statement: string }[]> {
  const { rows } = await connection.query<{ name: string; statement: string }>(
    'SELECT name, statement FROM pg_prepared_statements ORDER BY name',
  );
  return rows;
}

describe('PoolSqlClient', () => {
  it('When one statement text runs again on a connection, then PostgreSQL holds it prepared once, under a name derived from the text', () =>
    onNewConnection(async (connection) => {
      const client = new PoolSqlClient(connection);
      const text = 'SELECT $1::int + 1 AS n';
      expect(await client.$queryRawUnsafe(text, 1)).toEqual([{ n: 2 }]);
      expect(await client.$queryRawUnsafe(text, 41)).toEqual([{ n: 42 }]);
      const other = 'SELECT $1::int * 2 AS n';
      expect(await new PoolSqlClient(connection).$executeRawUnsafe(other, 21)).toBe(1);

      const list = await prepared(connection);
      expect(list.map((s) => s.statement).sort()).toEqual([other, text]);
      for (const s of list) expect(s.name).toMatch(/^x402_[0-9a-f]{24}$/);
      expect(list[0]!.name).not.toBe(list[1]!.name);
    }));

  it('When a process runs more distinct statement texts than it names, then the rest run unnamed and still answer', () =>
    onNewConnection(async (connection) => {
      // A fresh copy of the module: the names already given by the other test do not count here.
      let Fresh: typeof PoolSqlClient | undefined;
      jest.isolateModules(() => {
        ({ PoolSqlClient: Fresh } =
          jest.requireActual<typeof import('../src/pool-sql-client')>('../src/pool-sql-client'));
      });
      const client = new Fresh!(connection);
      for (let k = 0; k < 300; k += 1) {
        expect(await client.$queryRawUnsafe(`SELECT $1::int - ${k} AS n`, 300)).toEqual([{ n: 300 - k }]);
      }
      const list = await prepared(connection);
      expect(list).toHaveLength(256);
      for (const s of list) expect(s.statement).toMatch(/^SELECT \$1::int - \d+ AS n$/);
    }));
});
