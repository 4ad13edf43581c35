import type { Db } from './prisma';

/** Signals of one compared window: all of the context's signals, and those of the failing type. */
export interface WindowCounts {
  /** Every signal of the proposal's context in the window. */
  signals: number;
  /** The signals of the compared failing type (or every negative signal when the deployment has none). */
  negative: number;
}

/** The JSON one {@link countWindowSet} query answers. */
interface QueryResult {
  /** `[treated, window 0|1|2, hour of week, failing type or null, signals]` */
  cells: [boolean, number, number, string | null, number][];
  /** `[context id, before-window signals, after-window signals]` */
  controls: [string, number, number][];
}

/** Hour-of-week buckets: 168, bucket 0 = Monday 00:00–01:00 UTC. */
export const HOURS_PER_WEEK = 168;

/** A half-open time window `[from, to)`. */
export interface TimeWindow {
  from: Date;
  to: Date;
}

/** Signals of one group in one window per hour-of-week bucket (168 entries each). */
export interface HourOfWeekCells {
  /** Every signal of the group's contexts, per bucket. */
  signals: number[];
  /**
   * Failing signals per covered type, per bucket; the key `''` holds every negative signal when the
   * deployment covers no named type.
   */
  failing: Record<string, number[]>;
}

/** One control context the counts used, with its signals in the before- and after-window. */
export interface UsedControl {
  contextId: string;
  beforeSignals: number;
  afterSignals: number;
}

/** Outcome of {@link countWindowSet}. */
export interface WindowSetCounts {
  treated: { placeboBefore: HourOfWeekCells; before: HourOfWeekCells; after: HourOfWeekCells };
  /** The pooled control contexts; their cells are all zero when none was usable. */
  control: { placeboBefore: HourOfWeekCells; before: HourOfWeekCells; after: HourOfWeekCells };
  /** The control contexts counted, most signals first. */
  controls: UsedControl[];
}

/** What {@link countWindowSet} counts: a product's treated and control contexts in three windows. */
export interface WindowSetQuery {
  /** The product whose contexts are counted. */
  productId: string;
  treatedContextIds: readonly string[];
  /** The named control contexts; empty: the busiest other contexts with enough signals. */
  controlContextIds: readonly string[];
  /** The covered failing types; empty: every negative signal. */
  signalTypes: readonly string[];
  windows: { placeboBefore: TimeWindow; before: TimeWindow; after: TimeWindow };
  /** Signals a control needs in both the before- and the after-window to be chosen automatically. */
  minSignals: number;
  /** The most controls chosen automatically. */
  maxControls: number;
}

const emptyCells = (types: readonly string[]): HourOfWeekCells => ({
  signals: new Array<number>(HOURS_PER_WEEK).fill(0),
  failing: Object.fromEntries(
    (types.length > 0 ? types : ['']).map((t) => [t, new Array<number>(HOURS_PER_WEEK).fill(0)]),
  ),
});

/**
 * The hour-of-week counts of one window set, in one query over the product's signals by
 * `(product_id, created_at)`: per group (the treated contexts; the control contexts pooled), per
 * window (placebo-before, before, after; they may overlap), per hour-of-week bucket (UTC), every
 * signal and those of each covered failing type (every negative signal when `signalTypes` is empty).
 * The controls are `controlContextIds`, or when it is empty every other context of the product
 * with at least `minSignals` signals in both the before- and the after-window (at most
 * `maxControls`, the busiest).
 * @param db the Prisma client (or a transaction)
 */
export async function countWindowSet(
  db: Pick<Db, '$queryRawUnsafe'>,
  args: WindowSetQuery,
): Promise<WindowSetCounts> {
  const w = args.windows;
  const all = [w.placeboBefore, w.before, w.after];
  const from = new Date(Math.min(...all.map((x) => x.from.getTime())));
  const to = new Date(Math.max(...all.map((x) => x.to.getTime())));
  const rows = await db.$queryRawUnsafe<{ result: QueryResult }[]>(
    `WITH win(k, f, t) AS (VALUES (0, $5::timestamptz, $6::timestamptz), (1, $7::timestamptz, $8::timestamptz),
                                  (2, $9::timestamptz, $10::timestamptz)),
          -- One pass over the signals, down to (context, window, hour of week, failing type) counts.
          s AS (
            SELECT s.context_id, win.k,
                   -- Hour-of-week from the epoch, which began on a Thursday (72 hours after a Monday).
                   ((floor(date_part('epoch', s.created_at) / 3600)::bigint + 72) % 168)::int AS how,
                   CASE WHEN cardinality($4::text[]) = 0 THEN CASE WHEN s.sentiment = 'negative' THEN '' END
                        WHEN s.type = ANY($4::text[]) THEN s.type END AS ftype,
                   count(*)::int AS n
              FROM signals s JOIN win ON s.created_at >= win.f AND s.created_at < win.t
             WHERE s.product_id = $1::uuid AND s.created_at >= $11::timestamptz AND s.created_at < $12::timestamptz
               AND s.context_id IS NOT NULL
               AND (s.context_id = ANY($2::uuid[])
                    OR (cardinality($3::uuid[]) = 0 OR s.context_id = ANY($3::uuid[])))
             GROUP BY 1, 2, 3, 4),
          per_context AS (
            SELECT context_id, coalesce(sum(n) FILTER (WHERE k = 1), 0)::int AS before_n,
                   coalesce(sum(n) FILTER (WHERE k = 2), 0)::int AS after_n
              FROM s WHERE NOT (context_id = ANY($2::uuid[])) GROUP BY context_id),
          controls AS (
            SELECT context_id, before_n, after_n FROM per_context
             WHERE cardinality($3::uuid[]) > 0 OR (before_n >= $13 AND after_n >= $13)
             ORDER BY before_n + after_n DESC, context_id LIMIT $14),
          cells AS (
            SELECT s.context_id = ANY($2::uuid[]) AS treated, s.k, s.how, s.ftype, sum(s.n)::int AS n
              FROM s
             WHERE s.context_id = ANY($2::uuid[]) OR s.context_id IN (SELECT context_id FROM controls)
             GROUP BY 1, 2, 3, 4)
     SELECT json_build_object(
              'cells', coalesce((SELECT json_agg(json_build_array(treated, k, how, ftype, n)) FROM cells), '[]'::json),
              'controls', coalesce((SELECT json_agg(json_build_array(context_id, before_n, after_n)
                                             ORDER BY before_n + after_n DESC, context_id) FROM controls), '[]'::json)
            ) AS result`,
    args.productId,
    args.treatedContextIds,
    args.controlContextIds,
    args.signalTypes,
    w.placeboBefore.from,
    w.placeboBefore.to,
    w.before.from,
    w.before.to,
    w.after.from,
    w.after.to,
    from,
    to,
    args.minSignals,
    args.maxControls,
  );
  const result = rows[0]?.result ?? { cells: [], controls: [] };
  const group = () => ({
    placeboBefore: emptyCells(args.signalTypes),
    before: emptyCells(args.signalTypes),
    after: emptyCells(args.signalTypes),
  });
  const out: WindowSetCounts = {
    treated: group(),
    control: group(),
    controls: result.controls.map(([contextId, beforeSignals, afterSignals]) => ({
      contextId,
      beforeSignals,
      afterSignals,
    })),
  };
  const windowKeys = ['placeboBefore', 'before', 'after'] as const;
  for (const [treated, k, how, ftype, n] of result.cells) {
    const key = windowKeys[k];
    if (key === undefined || how < 0 || how >= HOURS_PER_WEEK) continue;
    const cells = (treated ? out.treated : out.control)[key];
    cells.signals[how] = (cells.signals[how] ?? 0) + n;
    const failing = ftype === null ? undefined : cells.failing[ftype];
    if (failing) failing[how] = (failing[how] ?? 0) + n;
  }
  return out;
}
