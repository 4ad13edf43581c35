/*
 * The verdict simulation (docs/benchmarks.md, "Deployment verdicts (simulation)"; the method:
 * services/signal-feedback/docs/verdicts.md). Not a test: it generates synthetic hourly signal streams of
 * one treated and four control contexts with known effects, global drift, weekday seasonality and
 * volume shifts, and counts how often each method calls a deployment `regressed` or `improved`.
 *
 *   pnpm --filter @repo/signal-feedback simulate:verdicts [--runs 1000] [--seed 20261128]
 *
 * Every run draws from one seeded Mersenne Twister (@stdlib/random-base-mt19937): the same seed and
 * runs print the same table. For each scenario and run:
 * - the new verdict: `decideVerdict` on the windows of `comparisonWindows` (24-hour window: the
 *   before-window one week earlier, reweighted to the after-window's hour-of-week mix), treated against
 *   the four controls pooled;
 * - the old test: `twoProportionZTest` of the treated context, the 24 hours before the deployment
 *   against the 24 hours after it (what verification.ts did before controls);
 * - the sequential monitor: `decideVerdict` with `provisional: true` after every hour of the
 *   after-window (hours 1–24), a false alarm when any of them reports `regressionDetected`; and the old
 *   provisional figures read the same way (elapsed time after against as long before, p < alpha and the
 *   rate up).
 */
import mt19937 from '@stdlib/random-base-mt19937';
import binomialDraws from '@stdlib/random-base-binomial';
import poissonDraws from '@stdlib/random-base-poisson';
import { HOURS_PER_WEEK, type HourOfWeekCounts } from '../src/domain/causal-statistics/hour-of-week';
import { decideVerdict, type GroupWindows } from '../src/domain/causal-statistics/verdict';
import { comparisonWindows } from '../src/domain/causal-statistics/windows';
import { twoProportionZTest } from '../src/domain/verification';

const HOUR_MS = 3_600_000;
const WINDOW_HOURS = 24;
const ALPHA = 0.05;
const MIN_SIGNALS = 30;
const TYPE = 'payment_failed';
/** Hours simulated before the deployment: the placebo-before window starts two weeks earlier. */
const HISTORY_HOURS = 2 * HOURS_PER_WEEK;

/** One context's stream parameters. */
interface Context {
  /** Mean signals per hour at the busiest hour of a weekday. */
  volume: number;
  /** Baseline failing log-odds. */
  logOdds: number;
  /** Extra failing log-odds at weekends (its own weekday seasonality). */
  weekend: number;
}

const CONTEXTS: Context[] = [
  { volume: 120, logOdds: Math.log(0.05 / 0.95), weekend: 0.4 }, // treated
  { volume: 200, logOdds: Math.log(0.04 / 0.96), weekend: 0.2 },
  { volume: 150, logOdds: Math.log(0.06 / 0.94), weekend: 0.25 },
  { volume: 300, logOdds: Math.log(0.03 / 0.97), weekend: 0.15 },
  { volume: 100, logOdds: Math.log(0.08 / 0.92), weekend: 0.3 },
];

/** A scenario: what happens around the deployment besides chance. */
interface Scenario {
  name: string;
  /** True effect on the treated context's failing log-odds from the deployment on (0: none). */
  effect: number;
  /** Global drift in every context: an hourly random walk (sd 0.02), a step of ±0.4 within a day of the deployment. */
  drift: boolean;
  /** Every context's volume × 1.5 from the deployment on. */
  globalVolumeShift: boolean;
  /** The treated context logs 30% more, all non-failing, from the deployment on (a logging change). */
  loggingChange: boolean;
}

const SCENARIOS: Scenario[] = [
  { name: 'No effect, no drift', effect: 0, drift: false, globalVolumeShift: false, loggingChange: false },
  { name: 'No effect, global drift', effect: 0, drift: true, globalVolumeShift: false, loggingChange: false },
  {
    name: 'No effect, global volume ×1.5',
    effect: 0,
    drift: false,
    globalVolumeShift: true,
    loggingChange: false,
  },
  {
    name: 'No effect, treated logging change (+30% non-failing)',
    effect: 0,
    drift: false,
    globalVolumeShift: false,
    loggingChange: true,
  },
  {
    name: 'Harm OR 1.35 (log 0.3), no drift',
    effect: 0.3,
    drift: false,
    globalVolumeShift: false,
    loggingChange: false,
  },
  {
    name: 'Harm OR 1.35 (log 0.3), global drift',
    effect: 0.3,
    drift: true,
    globalVolumeShift: false,
    loggingChange: false,
  },
  {
    name: 'Harm OR 1.65 (log 0.5), global drift',
    effect: 0.5,
    drift: true,
    globalVolumeShift: false,
    loggingChange: false,
  },
];

/** Weekday seasonality of volume: half on weekends, a daytime peak (hour-of-week 0 = Monday 00:00 UTC). */
function volumeFactor(hourOfWeek: number): number {
  const day = Math.floor(hourOfWeek / 24);
  const hour = hourOfWeek % 24;
  const daytime = 0.3 + 0.7 * Math.max(0, Math.sin(((hour - 6) / 16) * Math.PI));
  return (day >= 5 ? 0.5 : 1) * daytime;
}

/** Extra failing log-odds at night (00–06 UTC), common to every context. */
const nightLogOdds = (hourOfWeek: number) => (hourOfWeek % 24 < 6 ? 0.2 : 0);

interface Streams {
  /** Per context, per simulated hour. */
  signals: number[][];
  failing: number[][];
  /** Hour-of-week of simulated hour 0. */
  offset: number;
  /** The deployment's simulated hour. */
  deployedAt: number;
}

function simulate(scenario: Scenario, draw: Draw): Streams {
  const hours = HISTORY_HOURS + WINDOW_HOURS;
  const offset = Math.floor(draw.uniform() * HOURS_PER_WEEK);
  const deployedAt = HISTORY_HOURS;
  const drift = new Array<number>(hours).fill(0);
  if (scenario.drift) {
    const stepAt = deployedAt - WINDOW_HOURS + Math.floor(draw.uniform() * 2 * WINDOW_HOURS);
    const step = draw.uniform() < 0.5 ? -0.4 : 0.4;
    let walk = 0;
    for (let i = 0; i < hours; i++) {
      walk += 0.02 * draw.normal();
      drift[i] = walk + (i >= stepAt ? step : 0);
    }
  }
  const signals: number[][] = [];
  const failing: number[][] = [];
  CONTEXTS.forEach((context, c) => {
    const n: number[] = [];
    const f: number[] = [];
    for (let i = 0; i < hours; i++) {
      const how = (offset + i) % HOURS_PER_WEEK;
      const after = i >= deployedAt;
      const weekend = Math.floor(how / 24) >= 5 ? context.weekend : 0;
      // Each context's own hourly noise: no stream is exactly binomial.
      const logOdds =
        context.logOdds +
        weekend +
        nightLogOdds(how) +
        (drift[i] ?? 0) +
        0.1 * draw.normal() +
        (c === 0 && after ? scenario.effect : 0);
      const mean = context.volume * volumeFactor(how) * (scenario.globalVolumeShift && after ? 1.5 : 1);
      const count = draw.poisson(mean);
      const bad = draw.binomial(count, 1 / (1 + Math.exp(-logOdds)));
      const extra = c === 0 && after && scenario.loggingChange ? draw.poisson(0.3 * mean) : 0;
      n.push(count + extra);
      f.push(bad);
    }
    signals.push(n);
    failing.push(f);
  });
  return { signals, failing, offset, deployedAt };
}

/** The hour-of-week counts of the given contexts in simulated hours [from, to). */
function hourOfWeek(streams: Streams, contexts: number[], from: number, to: number): HourOfWeekCounts {
  const signals = new Array<number>(HOURS_PER_WEEK).fill(0);
  const failing = new Array<number>(HOURS_PER_WEEK).fill(0);
  for (const c of contexts) {
    for (let i = from; i < to; i++) {
      const how = (streams.offset + i) % HOURS_PER_WEEK;
      signals[how] = (signals[how] ?? 0) + (streams.signals[c]?.[i] ?? 0);
      failing[how] = (failing[how] ?? 0) + (streams.failing[c]?.[i] ?? 0);
    }
  }
  return { signals, failing: { [TYPE]: failing } };
}

const sumOf = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);

/** The deployment's groups over the first `elapsed` hours of the after-window (`comparisonWindows`). */
function groups(streams: Streams, elapsed: number) {
  const origin = Date.UTC(2026, 0, 5); // a Monday: simulated hour i is origin + i hours
  const hourOf = (d: Date) => Math.round((d.getTime() - origin) / HOUR_MS);
  const w = comparisonWindows(new Date(origin + streams.deployedAt * HOUR_MS), elapsed * 60);
  const group = (contexts: number[]): GroupWindows => ({
    placeboBefore: hourOfWeek(streams, contexts, hourOf(w.placeboBefore.from), hourOf(w.placeboBefore.to)),
    before: hourOfWeek(streams, contexts, hourOf(w.before.from), hourOf(w.before.to)),
    after: hourOfWeek(streams, contexts, hourOf(w.after.from), hourOf(w.after.to)),
  });
  return { treated: group([0]), control: group([1, 2, 3, 4]), reweighted: w.reweighted };
}

/** The old test on the treated context: `hours` before the deployment against `hours` after it. */
function oldTest(streams: Streams, hours: number): 'improved' | 'regressed' | 'inconclusive' {
  const window = (from: number, to: number) => ({
    signals: sumOf(streams.signals[0]?.slice(from, to) ?? []),
    negative: sumOf(streams.failing[0]?.slice(from, to) ?? []),
  });
  const before = window(streams.deployedAt - hours, streams.deployedAt);
  const after = window(streams.deployedAt, streams.deployedAt + hours);
  if (before.signals < MIN_SIGNALS || after.signals < MIN_SIGNALS) return 'inconclusive';
  const test = twoProportionZTest(before, after);
  if (!test || !(test.pValue < ALPHA)) return 'inconclusive';
  return test.z > 0 ? 'regressed' : 'improved';
}

interface Draw {
  uniform: () => number;
  normal: () => number;
  poisson: (mean: number) => number;
  binomial: (n: number, p: number) => number;
}

function draws(seed: number): Draw {
  // The typings omit the generator's `normalized` (uniform on [0, 1), 53-bit resolution), which it has.
  const generator = mt19937.factory({ seed }) as ReturnType<typeof mt19937.factory> & {
    normalized: () => number;
  };
  const uniform = generator.normalized;
  const poisson = poissonDraws.factory({ prng: uniform });
  const binomial = binomialDraws.factory({ prng: uniform });
  return {
    uniform,
    // Box–Muller on the same stream keeps one seed for everything.
    normal: () => Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform()),
    poisson: (mean) => (mean > 0 ? poisson(mean) : 0),
    binomial: (n, p) => (n > 0 ? binomial(n, p) : 0),
  };
}

interface Tally {
  newRegressed: number;
  newImproved: number;
  newUnreliable: number;
  newAlarm: number;
  oldRegressed: number;
  oldImproved: number;
  oldAlarm: number;
}

function run(scenario: Scenario, runs: number, seed: number): Tally {
  const draw = draws(seed);
  const t: Tally = {
    newRegressed: 0,
    newImproved: 0,
    newUnreliable: 0,
    newAlarm: 0,
    oldRegressed: 0,
    oldImproved: 0,
    oldAlarm: 0,
  };
  const settings = { types: [TYPE], alpha: ALPHA, minSignals: MIN_SIGNALS };
  for (let r = 0; r < runs; r++) {
    const streams = simulate(scenario, draw);
    const final = decideVerdict({ ...groups(streams, WINDOW_HOURS), ...settings, provisional: false });
    if (final.verdict === 'regressed') t.newRegressed++;
    if (final.verdict === 'improved') t.newImproved++;
    if (final.reason === 'unreliable') t.newUnreliable++;
    const old = oldTest(streams, WINDOW_HOURS);
    if (old === 'regressed') t.oldRegressed++;
    if (old === 'improved') t.oldImproved++;
    let alarm = false;
    let oldAlarm = false;
    for (let hour = 1; hour <= WINDOW_HOURS; hour++) {
      if (!alarm) {
        const d = decideVerdict({ ...groups(streams, hour), ...settings, provisional: true });
        alarm = d.monitor?.regressionDetected ?? false;
      }
      if (!oldAlarm) oldAlarm = oldTest(streams, hour) === 'regressed';
    }
    if (alarm) t.newAlarm++;
    if (oldAlarm) t.oldAlarm++;
  }
  return t;
}

function argument(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const value = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(value) || value <= 0) throw new Error(`--${name} must be a positive integer`);
  return value;
}

function main(): void {
  const runs = argument('runs', 1000);
  const seed = argument('seed', 20261128);
  const pct = (k: number) => `${((100 * k) / runs).toFixed(1)}%`;
  const started = Date.now();
  const lines = [
    `Runs per scenario: ${runs}; seed ${seed}; alpha ${ALPHA}; 24-hour window; min signals ${MIN_SIGNALS}.`,
    '',
    '| Scenario | New: regressed | New: improved | New: unreliable | Monitor alarm (hourly) | Old: regressed | Old: improved | Old: alarm when peeking hourly |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  SCENARIOS.forEach((scenario, i) => {
    // One stream per scenario: any row can be reproduced alone.
    const t = run(scenario, runs, seed + i);
    lines.push(
      `| ${scenario.name} | ${pct(t.newRegressed)} | ${pct(t.newImproved)} | ${pct(t.newUnreliable)} | ${pct(t.newAlarm)} | ${pct(t.oldRegressed)} | ${pct(t.oldImproved)} | ${pct(t.oldAlarm)} |`,
    );
  });
  lines.push('', `Took ${((Date.now() - started) / 1000).toFixed(1)} s.`);
  console.log(lines.join('\n'));
}

main();
