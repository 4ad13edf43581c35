// Spend controls (README, "Spend controls"): a per-payment cap, rolling per-hour and per-day caps kept
// across calls, checked and reserved before anything is signed.
import { formatAtomic, parseUsdc } from './usdc';

/** An amount of USDC: a decimal string (`"0.25"`) or atomic units as a bigint (`250_000n`). */
export type UsdcAmount = string | bigint;

/** One payment as a {@link SpendStore} keeps it. */
export interface SpendRecord {
  /** When it was made, in milliseconds since the epoch. */
  at: number;
  /** Atomic USDC units (6 decimals), as a decimal string. */
  amountAtomic: string;
  /**
   * The payment's transaction signature; `""` for an official-scheme payment the server took without
   * reporting its settlement (counted all the same: it may have been settled).
   */
  signature: string;
}

/**
 * Where the payments counted by the rolling caps are kept. The default keeps them in memory (lost
 * when the process ends); implement this to persist them (a file, a database) so that a restarted
 * agent keeps its limits. Calls may be async.
 */
export interface SpendStore {
  /** The payments made at or after `sinceMs` (milliseconds since the epoch). */
  since(sinceMs: number): SpendRecord[] | Promise<SpendRecord[]>;
  /** Records a payment made. */
  add(record: SpendRecord): void | Promise<void>;
}

/** Keeps payments in memory, forgetting those older than a day. */
export class MemorySpendStore implements SpendStore {
  private records: SpendRecord[] = [];

  /** @inheritdoc */
  since(sinceMs: number): SpendRecord[] {
    this.records = this.records.filter((r) => r.at >= Date.now() - DAY_MS);
    return this.records.filter((r) => r.at >= sinceMs);
  }

  /** @inheritdoc */
  add(record: SpendRecord): void {
    this.records.push(record);
  }
}

/** Spend controls of a payer; every cap is in USDC ({@link UsdcAmount}). */
export interface SpendLimits {
  /** Most one payment may cost; default 1 USDC (market-intel's compute jobs cost 15 and 25). */
  maxPerPayment?: UsdcAmount;
  /** Most all payments of the last 60 minutes may add up to (rolling); default none. */
  maxPerHour?: UsdcAmount;
  /** Most all payments of the last 24 hours may add up to (rolling); default none. */
  maxPerDay?: UsdcAmount;
  /**
   * Pay only these recipients: the offer's `payTo` (the merchant's wallet in the official scheme, its
   * token account in push mode; list both to allow both). Default: any.
   */
  allowPayTo?: string[];
  /**
   * Pay only requests to these hosts (`api.example.com`, `127.0.0.1:3001`; a redirect's target host
   * too). Default: any.
   */
  allowHosts?: string[];
  /**
   * Pay only in these mints (base58), e.g. USDC's `EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v`.
   * Default: any mint with 6 decimals (the caps count atomic units as USDC, so other decimals are
   * always refused).
   */
  allowAssets?: string[];
  /** Where the rolling caps' payments are kept; default in memory ({@link MemorySpendStore}). */
  store?: SpendStore;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** Default per-payment cap: 1 USDC, like the official x402 clients. */
export const DEFAULT_MAX_PER_PAYMENT_ATOMIC = 1_000_000n;

/**
 * Parses a {@link UsdcAmount} to atomic units.
 * @throws RangeError when a string is not a decimal with at most 6 fractional digits, or a bigint is negative
 */
export function toAtomic(amount: UsdcAmount): bigint {
  if (typeof amount === 'bigint') {
    if (amount < 0n) throw new RangeError('a USDC amount cannot be negative');
    return amount;
  }
  return parseUsdc(amount);
}

/** The cap a refusal names. */
export type SpendLimitKind = 'per_payment' | 'per_hour' | 'per_day';

/** Why a payment is over a cap: which one, the cap, and what was already spent in its window. */
export interface SpendLimitBreach {
  /** The cap exceeded. */
  limit: SpendLimitKind;
  /** The cap, in atomic USDC units. */
  limitAtomic: bigint;
  /** Already spent (and reserved) in the cap's window, in atomic USDC units; 0 for `per_payment`. */
  spentAtomic: bigint;
  /** A sentence naming the price and the cap in USDC. */
  message: string;
}

/**
 * Counts payments against the caps. A payment is reserved before it is signed (so concurrent calls
 * cannot together pass a cap), then committed to the store once made, or released when nothing was paid.
 */
export class SpendTracker {
  private readonly store: SpendStore;
  private readonly pending = new Map<number, bigint>();
  private nextId = 0;
  /** Reservations run one at a time, so two concurrent payments cannot both fit under one cap. */
  private lock: Promise<unknown> = Promise.resolve();
  private readonly perPayment: bigint;
  private readonly perHour: bigint | undefined;
  private readonly perDay: bigint | undefined;

  /** @param limits the caps (validated here: a bad amount throws RangeError at construction) */
  constructor(limits: SpendLimits = {}) {
    this.store = limits.store ?? new MemorySpendStore();
    this.perPayment =
      limits.maxPerPayment === undefined ? DEFAULT_MAX_PER_PAYMENT_ATOMIC : toAtomic(limits.maxPerPayment);
    this.perHour = limits.maxPerHour === undefined ? undefined : toAtomic(limits.maxPerHour);
    this.perDay = limits.maxPerDay === undefined ? undefined : toAtomic(limits.maxPerDay);
  }

  /** Atomic USDC units paid (committed) and reserved within the last `windowMs` milliseconds. */
  async spent(windowMs: number, now = Date.now()): Promise<bigint> {
    const records = await this.store.since(now - windowMs);
    let total = 0n;
    for (const record of records) total += BigInt(record.amountAtomic);
    for (const amount of this.pending.values()) total += amount;
    return total;
  }

  /**
   * Checks `amountAtomic` against every cap and, when it fits, reserves it.
   * @returns a reservation id for {@link commit} / {@link release}, or the breach
   */
  reserve(amountAtomic: bigint): Promise<{ id: number } | { breach: SpendLimitBreach }> {
    const run = this.lock.then(() => this.check(amountAtomic));
    this.lock = run.catch(() => undefined);
    return run;
  }

  private async check(amountAtomic: bigint): Promise<{ id: number } | { breach: SpendLimitBreach }> {
    const usdc = formatAtomic(amountAtomic);
    if (amountAtomic > this.perPayment)
      return {
        breach: {
          limit: 'per_payment',
          limitAtomic: this.perPayment,
          spentAtomic: 0n,
          message: `the price ${usdc} USDC is above the per-payment cap of ${formatAtomic(this.perPayment)} USDC`,
        },
      };
    const windows: [SpendLimitKind, bigint | undefined, number, string][] = [
      ['per_hour', this.perHour, HOUR_MS, 'hour'],
      ['per_day', this.perDay, DAY_MS, '24 hours'],
    ];
    for (const [limit, cap, windowMs, label] of windows) {
      if (cap === undefined) continue;
      const spent = await this.spent(windowMs);
      if (spent + amountAtomic > cap)
        return {
          breach: {
            limit,
            limitAtomic: cap,
            spentAtomic: spent,
            message: `the price ${usdc} USDC would bring the last ${label}'s spending to ${formatAtomic(spent + amountAtomic)} USDC, above its cap of ${formatAtomic(cap)} USDC`,
          },
        };
    }
    const id = this.nextId++;
    this.pending.set(id, amountAtomic);
    return { id };
  }

  /** Records a reserved payment as made. */
  async commit(id: number, signature: string, at = Date.now()): Promise<void> {
    const amount = this.pending.get(id);
    if (amount === undefined) return;
    try {
      await this.store.add({ at, amountAtomic: amount.toString(), signature });
    } finally {
      this.pending.delete(id);
    }
  }

  /** Drops a reservation: nothing was paid. */
  release(id: number): void {
    this.pending.delete(id);
  }
}
