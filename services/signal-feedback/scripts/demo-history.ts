// The signal-feedback demo's history import (scripts/demo.ts): the placebo's windows, through the
// operator command.
import { Readable } from 'node:stream';
import { runAdmin } from '../src/entry-points/cli/admin';

/**
 * Imports `signals` as history for the product with `admin import-signals <product-id> -` (README,
 * "Importing history"), each with a `messageId`; without a database URL, says so and imports nothing.
 * @returns the number of signals inserted
 * @throws Error when the command fails
 */
export async function importHistory(
  databaseUrl: string | undefined,
  productId: string,
  signals: readonly object[],
  log: (line: string) => void,
): Promise<number> {
  if (!databaseUrl) {
    log('no database URL (SIGNAL_FEEDBACK_DATABASE_URL): no history imported for the placebo');
    return 0;
  }
  const lines = signals.map((x, i) => JSON.stringify({ ...x, messageId: `demo-history-${i}` }) + '\n');
  const out: string[] = [];
  const code = await runAdmin(
    ['import-signals', productId, '-'],
    { DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent' },
    (l) => out.push(l),
    Readable.from(lines),
  );
  if (code !== 0) throw new Error(`admin import-signals exited with ${code}: ${out.join('; ')}`);
  const inserted = Number(/: (\d+) inserted/.exec(out[0] ?? '')?.[1] ?? 0);
  log(
    `admin import-signals: ${inserted} signals of the same minutes two weeks earlier imported as history ` +
      '(the API takes timestamps at most 7 days old; the placebo compares them with a week earlier)',
  );
  return inserted;
}
