import { PlanName } from '../schemas/accounts';

/** Plan names, cheapest first (README, "Plans and quotas"). */
export const PLANS: readonly PlanName[] = PlanName.options;

/** Monthly limits of a plan; `null` means unlimited. */
export interface PlanLimits {
  /** Signals accepted per calendar month (UTC). */
  signalsPerMonth: number;
  /** Proposals created per calendar month (UTC); null: unlimited. */
  proposalsPerMonth: number | null;
  /** Deployments recorded per calendar month (UTC), limited like proposals; null: unlimited. */
  deploymentsPerMonth: number | null;
  /** Products a user may own at once; null: unlimited. */
  products: number | null;
  /** Monthly price in US dollars (informational; billing is out of scope). */
  priceUsd: number;
}

/** Per-plan limits (README, "Plans and quotas"). */
export const PLAN_LIMITS: Readonly<Record<PlanName, PlanLimits>> = {
  free: { signalsPerMonth: 500, proposalsPerMonth: 3, deploymentsPerMonth: 3, products: 1, priceUsd: 0 },
  builder: {
    signalsPerMonth: 5_000,
    proposalsPerMonth: 10,
    deploymentsPerMonth: 10,
    products: 1,
    priceUsd: 29,
  },
  growth: {
    signalsPerMonth: 50_000,
    proposalsPerMonth: null,
    deploymentsPerMonth: null,
    products: 5,
    priceUsd: 99,
  },
  scale: {
    signalsPerMonth: 500_000,
    proposalsPerMonth: null,
    deploymentsPerMonth: null,
    products: null,
    priceUsd: 299,
  },
};

/** Whether `value` names a plan. */
export function isPlanName(value: string): value is PlanName {
  return (PLANS as readonly string[]).includes(value);
}

/**
 * The first day (UTC) of the month containing `at`, as `YYYY-MM-01`: the key of the monthly usage counters.
 * @param at the instant
 */
export function monthKey(at: Date): string {
  return `${at.getUTCFullYear()}-${String(at.getUTCMonth() + 1).padStart(2, '0')}-01`;
}

/** The first instant of the next UTC month after `at` (when the monthly quotas reset). */
export function nextMonthStart(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1));
}
