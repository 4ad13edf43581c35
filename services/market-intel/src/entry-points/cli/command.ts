import { openDatabase, type Db } from '../../data/prisma';

/**
 * Runs the `main` of a market-intel command (services/market-intel/README.md, "CLIs"): the
 * process exits with the status `main` resolves; an error it throws is printed as
 * `<name> failed: <message>` and the status is 1.
 * @param name the command's name, as its messages begin
 */
export function runCommand(name: string, main: () => Promise<number>): void {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(`${name} failed:`, err instanceof Error ? err.message : err);
      process.exit(1);
    },
  );
}

/**
 * Opens market-intel's database (`DATABASE_URL`, two connections) for a command, hands its client to
 * `use` and closes it when `use` is done, whatever the outcome.
 * @param name the command's name, as its messages begin
 * @returns what `use` resolves; 2, after `<name>: DATABASE_URL is not set`, when it is not set
 * @throws what `use` throws, once the database is closed
 */
export async function withDatabase(name: string, use: (db: Db) => Promise<number>): Promise<number> {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    console.error(`${name}: DATABASE_URL is not set`);
    return 2;
  }
  const database = openDatabase(databaseUrl, 2);
  try {
    return await use(database.prisma);
  } finally {
    await database.close();
  }
}
