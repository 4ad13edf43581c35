/* The windows of a deployment's comparison (services/signal-feedback/docs/verdicts.md, "Windows"). */

const WEEK_MINUTES = 7 * 24 * 60;
const MINUTE_MS = 60_000;

/** A half-open time window `[from, to)`. */
export interface TimeWindow {
  from: Date;
  to: Date;
}

/**
 * The windows of a deployment (services/signal-feedback/docs/verdicts.md, "Windows"): the after-window is `[deployedAt,
 * deployedAt + windowMinutes)`; the before-window is the after-window moved back by `periodMinutes`,
 * the smallest whole number of weeks ≥ the window (one week for every window of at most 7 days), so
 * both windows cover the same weekdays and hours of the day. The placebo compares the before-window
 * (as its "after") with the window one more period earlier (a fake deployment at `deployedAt −
 * periodMinutes`). `wholeWeeks`: the window is a whole number of weeks (every hour of the week is
 * equally covered and no reweighting is needed); otherwise `reweighted` is true and the before-windows
 * are post-stratified to their after-window's hour-of-week mix (`reweightToAfter`).
 * @param deployedAt the deployment time
 * @param windowMinutes the window's length in minutes (> 0)
 * @throws RangeError when windowMinutes is not a positive finite number
 */
export function comparisonWindows(
  deployedAt: Date,
  windowMinutes: number,
): {
  before: TimeWindow;
  after: TimeWindow;
  placeboBefore: TimeWindow;
  placeboAfter: TimeWindow;
  periodMinutes: number;
  wholeWeeks: boolean;
  reweighted: boolean;
} {
  if (!(Number.isFinite(windowMinutes) && windowMinutes > 0)) {
    throw new RangeError(`windowMinutes must be a finite number > 0, got ${windowMinutes}`);
  }
  const periodMinutes = Math.ceil(windowMinutes / WEEK_MINUTES) * WEEK_MINUTES;
  const at = (minutesFromDeployment: number) =>
    new Date(deployedAt.getTime() + minutesFromDeployment * MINUTE_MS);
  const window = (start: number): TimeWindow => ({ from: at(start), to: at(start + windowMinutes) });
  const wholeWeeks = windowMinutes % WEEK_MINUTES === 0;
  return {
    before: window(-periodMinutes),
    after: window(0),
    placeboBefore: window(-2 * periodMinutes),
    placeboAfter: window(-periodMinutes),
    periodMinutes,
    wholeWeeks,
    reweighted: !wholeWeeks,
  };
}
