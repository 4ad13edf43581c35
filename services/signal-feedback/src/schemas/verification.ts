import { z } from 'zod';

/** A verification's verdict (README, "Deployments and verification"). */
export const VerdictName = z.enum(['improved', 'regressed', 'inconclusive']);

/** One compared window of a verification. */
export const WindowFigures = z.object({
  from: z.iso.datetime().describe('inclusive'),
  to: z.iso.datetime().describe('exclusive'),
  signals: z.int().min(0).describe('every signal of the treated contexts in the window'),
  negative: z.int().min(0).describe('signals of the covered failing types (every negative signal when none)'),
  negative_rate: z
    .number()
    .min(0)
    .max(1)
    .nullable()
    .describe('negative / signals, four decimals; null without signals'),
});
/** A {@link WindowFigures}. */
export type WindowFigures = z.infer<typeof WindowFigures>;

/** A time window `[from, to)` of a verification. */
export const VerificationWindow = z.object({
  from: z.iso.datetime().describe('inclusive'),
  to: z.iso.datetime().describe('exclusive'),
});

/** An effect on the log-odds scale with its interval (README, "Deployments and verification"). */
export const EffectFigures = z.object({
  estimate: z.number().describe('log odds ratio (positive: the failing share rose), four decimals'),
  standard_error: z.number().min(0).describe('Woolf standard error of the estimate, four decimals'),
  ci_low: z.number().describe('lower bound of the two-sided 1 − alpha interval, log odds'),
  ci_high: z.number().describe('upper bound of the two-sided 1 − alpha interval, log odds'),
  odds_ratio: z.number().min(0).describe('exp(estimate), four significant digits'),
  odds_ratio_ci_low: z.number().min(0).describe('exp(ci_low)'),
  odds_ratio_ci_high: z.number().min(0).describe('exp(ci_high)'),
  z: z.number().nullable().describe('estimate / standard_error; null while provisional'),
  p_value: z
    .number()
    .min(0)
    .max(1)
    .nullable()
    .describe('two-sided fixed-horizon p-value, four significant digits; null while provisional'),
});
/** An {@link EffectFigures}. */
export type EffectFigures = z.infer<typeof EffectFigures>;

/** The labels of a verdict, the worst that applies (README, "Deployments and verification"). */
export const VerdictLabel = z.enum([
  'observational',
  'uncontrolled',
  'unreliable: pre_trend',
  'unreliable: volume_shift',
]);

/** A control context a verification counted. */
export const ControlContextFigures = z.object({
  context_id: z.uuid(),
  before_signals: z.int().min(0).describe('its signals in the before-window'),
  after_signals: z.int().min(0).describe('its signals in the after-window'),
});

/** Counts of the pooled control contexts in one window. */
export const ControlWindowFigures = z.object({
  signals: z.int().min(0),
  negative: z.int().min(0).describe('signals of the covered failing types'),
  negative_rate: z.number().min(0).max(1).nullable().describe('four decimals; null without signals'),
});

/** The comparison of a deployment's windows (README, "Deployments and verification"). */
export const VerificationResult = z.object({
  verdict: VerdictName,
  reason: z
    .enum(['significant', 'too_few_signals', 'not_significant', 'unreliable', 'provisional'])
    .describe(
      "too_few_signals: a compared cell has fewer than min_signals; not_significant: the effect's " +
        '(Holm-adjusted) p-value >= alpha; unreliable: the placebo or the traffic check failed (see label); ' +
        'provisional: the after-window is open, only the monitor may report a regression',
    ),
  provisional: z
    .boolean()
    .describe('true while the after-window is open: the figures cover the time elapsed so far'),
  provisional_note: z
    .string()
    .nullable()
    .describe('while provisional: "not final", and what the open-window monitor says instead'),
  label: VerdictLabel.describe(
    'observational: controlled but not randomized; uncontrolled: no usable control contexts, before/after ' +
      'only; unreliable: pre_trend (the placebo on the before period is significant) or volume_shift ' +
      '(the traffic check is significant)',
  ),
  effect: EffectFigures.extend({
    adjusted_p_value: z
      .number()
      .min(0)
      .max(1)
      .nullable()
      .describe('Holm-adjusted across the covered types with the pooled test; null while provisional'),
  })
    .nullable()
    .describe(
      'the estimated effect of the change: a difference-in-differences of the failing log odds (treated ' +
        'against control, before against after), or before/after when uncontrolled; null without signals',
    ),
  method: z.object({
    estimator: z
      .enum(['did', 'before_after'])
      .describe('did: difference-in-differences against the controls; before_after: treated only'),
    treated_contexts: z.array(z.uuid()).describe('the contexts the change touched'),
    control_selection: z
      .enum(['automatic', 'explicit'])
      .describe("automatic: the product's other contexts with at least min_signals in each window"),
    control_contexts: z.array(ControlContextFigures).describe('the control contexts counted'),
    signal_types: z
      .array(z.string())
      .describe("the failing types covered (the proposal's leading ones); empty: every negative signal"),
    windows: z.object({
      before: VerificationWindow,
      after: VerificationWindow,
      placebo_before: VerificationWindow.nullable().describe(
        "the placebo's before-window, one period earlier; null on verdicts stored before the placebo existed",
      ),
      placebo_after: VerificationWindow.nullable().describe("the placebo's after-window: the before-window"),
      period_minutes: z
        .int()
        .describe('how far the before-window lies behind the after-window: whole weeks, so weekdays match'),
      whole_weeks: z.boolean().describe('each window is a whole number of weeks'),
      reweighted: z
        .boolean()
        .describe("the before-window's counts are reweighted to the after-window's hour-of-week mix"),
    }),
  }),
  control: z
    .object({ before: ControlWindowFigures, after: ControlWindowFigures })
    .nullable()
    .describe('the pooled control contexts; null when none was usable'),
  naive: EffectFigures.nullable().describe(
    "the before/after log-odds effect of the treated contexts alone, beside the controlled effect (the old test's view)",
  ),
  placebo: EffectFigures.extend({
    significant: z.boolean().describe('p_value < alpha: the groups already drifted apart before the change'),
  })
    .nullable()
    .describe("the same estimate one window earlier (a fake deployment at the before-window's start)"),
  traffic: z
    .object({
      chi_square: z.number().min(0),
      p_value: z.number().min(0).max(1),
      expected_treated_after: z.number().min(0).describe('treated after-window signals the control predicts'),
      observed_treated_after: z.int().min(0),
      significant: z.boolean().describe('p_value < alpha: the volume shifted, rates may not compare'),
    })
    .nullable()
    .describe('the volume check (chi-square, 1 degree of freedom); null without controls'),
  per_type: z
    .array(
      z.object({
        signal_type: z.string().nullable().describe('null: every negative signal'),
        effect: EffectFigures.nullable(),
        adjusted_p_value: z
          .number()
          .min(0)
          .max(1)
          .nullable()
          .describe('Holm-adjusted; null while provisional'),
      }),
    )
    .describe('the effect per covered failing type'),
  monitor: z
    .object({
      always_valid_p_value: z.number().min(0).max(1),
      regression_detected: z.boolean().describe('the always-valid boundary for harm was crossed'),
    })
    .nullable()
    .describe('while provisional: the always-valid (mSPRT) monitor, safe to read at any time; else null'),
  before: WindowFigures.describe('the treated contexts in the before-window (raw counts)'),
  after: WindowFigures.describe('the treated contexts in the after-window (raw counts)'),
  z: z
    .number()
    .nullable()
    .describe('naive two-proportion z statistic (after minus before), four decimals; null while provisional'),
  p_value: z
    .number()
    .min(0)
    .max(1)
    .nullable()
    .describe('naive two-sided p-value, four significant digits; null while provisional'),
  alpha: z.number().describe('significance level'),
  min_signals: z.int().describe('fewest signals each compared cell needs for a verdict'),
  computed_at: z.iso.datetime(),
});
/** A {@link VerificationResult}. */
export type VerificationResult = z.infer<typeof VerificationResult>;
