import type { Db } from '../../src/data/prisma';

/** What {@link insertSignalHistory} writes. */
export interface SignalHistory {
  productId: string;
  contextId: string;
  /** Start of the span (inclusive), as a date or epoch milliseconds. */
  from: Date | number;
  /** End of the span (exclusive), as a date or epoch milliseconds. */
  to: Date | number;
  /** Signals written, evenly spaced over the span. */
  total: number;
  /** How many of them are `payment_failed` (negative); the rest are `checkout_completed` (positive). */
  failing: number;
  /** Whether the failing ones are spread evenly among the others (default: they come first). */
  spreadFailing?: boolean;
}

/**
 * Writes a context's signal history straight into the `signals` table in one statement, with
 * timestamps the API would refuse (older than 7 days) and at a volume the API's batches make slow.
 */
export async function insertSignalHistory(db: Db, history: SignalHistory): Promise<void> {
  const failing = history.spreadFailing ? 'g * $4 / $3 > (g - 1) * $4 / $3' : 'g <= $4';
  await db.$executeRawUnsafe(
    `INSERT INTO signals (product_id, context_id, type, sentiment, created_at)
     SELECT $1::uuid, $2::uuid,
            CASE WHEN ${failing} THEN 'payment_failed' ELSE 'checkout_completed' END,
            (CASE WHEN ${failing} THEN 'negative' ELSE 'positive' END)::"Sentiment",
            $5::timestamptz + (g - 1) * ($6::timestamptz - $5::timestamptz) / $3::int
       FROM generate_series(1, $3::int) AS g`,
    history.productId,
    history.contextId,
    history.total,
    history.failing,
    new Date(history.from),
    new Date(history.to),
  );
}
