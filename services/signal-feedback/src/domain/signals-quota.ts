import { AppError } from '@repo/errors';
import type { PlanName } from '../schemas/accounts';
import { SIGNAL_FEEDBACK_ERRORS } from './errors';
import { nextMonthStart, PLAN_LIMITS, PLANS } from './plans';

/** What a refused signal batch met (README, "Plans and quotas"). */
export interface SignalQuotaRefusal {
  plan: PlanName;
  /** Signals counted this month for the user before this batch. */
  used: number;
  /** New signals of the batch (duplicates of a `messageId` excluded). */
  requested: number;
  /** Signals of the batch skipped as duplicates of a `messageId`. */
  duplicates: number;
}

/**
 * The cheapest plan whose monthly signal limit takes `needed` signals, above `plan`; undefined when no
 * plan does (README, "Plans and quotas").
 */
export function planTaking(plan: PlanName, needed: number): PlanName | undefined {
  const from = PLANS.indexOf(plan);
  return PLANS.slice(from + 1).find((p) => PLAN_LIMITS[p].signalsPerMonth >= needed);
}

/**
 * The 429 `quota_exceeded` of a signal batch the month's quota cannot take, worded as what to do
 * (README, "Plans and quotas"):
 * - the batch is larger than the plan's whole monthly limit: waiting cannot help, so there is no
 *   Retry-After; the message says to split it into batches of at most what is left (or, when nothing
 *   is left, of at most the limit after the reset) or to upgrade;
 * - the batch fits the plan but not what is left: split it (at most `remaining` now, the rest after the
 *   reset) or upgrade; Retry-After gives the seconds to the reset, when the whole batch would be taken;
 * - nothing is left: Retry-After to the reset, or upgrade.
 * `details`: `{ plan, limit, used, remaining, requested, duplicates?, resets_at, upgrade_to }`, where
 * `upgrade_to` is `{ plan, signals_per_month }` of the cheapest plan that would take the batch now, or
 * null on the largest plan.
 * @param now the time of the request (the reset is the next UTC month)
 */
export function signalQuotaError(refusal: SignalQuotaRefusal, now: Date): AppError {
  const { plan, used, requested, duplicates } = refusal;
  const limit = PLAN_LIMITS[plan].signalsPerMonth;
  const remaining = Math.max(0, limit - used);
  const resetsAt = nextMonthStart(now);
  const resets = resetsAt.toISOString();
  const upgrade = planTaking(plan, used + requested);
  const upgradeText = upgrade
    ? `, or upgrade to the ${upgrade} plan (${fmt(PLAN_LIMITS[upgrade].signalsPerMonth)} signals a month)`
    : ` (the ${plan} plan is the largest)`;
  const batch = `This batch has ${fmt(requested)} ${duplicates > 0 ? 'new ' : ''}signal(s)`;
  const fitsPlan = requested <= limit;
  let message: string;
  if (!fitsPlan) {
    message =
      `${batch}, more than the ${plan} plan's whole monthly limit of ${fmt(limit)}: ` +
      (remaining > 0
        ? `split it into batches of at most ${fmt(remaining)} signal(s) (what is left this month; the limit resets at ${resets})`
        : `split it into batches of at most ${fmt(limit)} signal(s) and send them after the limit resets at ${resets}`) +
      upgradeText;
  } else if (remaining > 0) {
    message =
      `${batch} but only ${fmt(remaining)} of the ${plan} plan's ${fmt(limit)} monthly signals are left: ` +
      `split the batch and send at most ${fmt(remaining)} now and the rest after the limit resets at ${resets}` +
      upgradeText;
  } else {
    message =
      `The ${plan} plan's ${fmt(limit)} monthly signals are used up: send this batch after the limit resets ` +
      `at ${resets} (Retry-After)` +
      upgradeText;
  }
  return new AppError(SIGNAL_FEEDBACK_ERRORS.quota_exceeded, message, {
    details: {
      plan,
      limit,
      used,
      remaining,
      requested,
      ...(duplicates > 0 ? { duplicates } : {}),
      resets_at: resets,
      upgrade_to: upgrade ? { plan: upgrade, signals_per_month: PLAN_LIMITS[upgrade].signalsPerMonth } : null,
    },
    // Waiting helps only when the plan can take the batch at all.
    ...(fitsPlan
      ? {
          headers: {
            'Retry-After': String(Math.max(1, Math.ceil((resetsAt.getTime() - now.getTime()) / 1000))),
          },
        }
      : {}),
  });
}

/** 5000 -> "5,000": the way the README writes limits. */
function fmt(n: number): string {
  return n.toLocaleString('en-US');
}
