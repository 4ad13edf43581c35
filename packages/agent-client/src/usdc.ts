// USDC amounts as agent-pay reads and prints them. Kept here rather than imported from
// @repo/x402-solana/client so that a free call or --help loads none of the Solana modules.

/** Decimals of USDC (and of the local ledger's test USDC): 1 USDC = 1,000,000 atomic units. */
export const USDC_DECIMALS = 6;

const SCALE = 10n ** BigInt(USDC_DECIMALS);

/**
 * The default per-payment spend cap of `agent-pay`, in atomic USDC units: 1 USDC, like the official
 * x402 clients' `$1` (packages/agent-client/README.md, "Options").
 */
export const DEFAULT_MAX_AMOUNT_ATOMIC = 1_000_000n;

/**
 * Parses a decimal USDC amount (`"25"`, `"0.5"`, `"1.000001"`) into atomic units.
 * @param text a non-negative decimal with at most 6 fractional digits
 * @returns the amount in atomic USDC units
 * @throws RangeError when `text` is not such a decimal
 */
export function parseUsdc(text: string): bigint {
  const match = /^([0-9]+)(?:\.([0-9]{1,6}))?$/.exec(text.trim());
  if (!match) throw new RangeError(`not a USDC amount with at most ${USDC_DECIMALS} decimals: "${text}"`);
  const [, whole = '0', fraction = ''] = match;
  return BigInt(whole) * SCALE + BigInt(fraction.padEnd(USDC_DECIMALS, '0'));
}

/**
 * An amount as a person reads it: at least two decimals, more only when the amount has them
 * (`200000n` → `"0.20"`, `15000000n` → `"15.00"`, `1n` → `"0.000001"`).
 * @param atomic amount in atomic USDC units (non-negative)
 */
export function formatUsdc(atomic: bigint): string {
  const whole = atomic / SCALE;
  const fraction = (atomic % SCALE).toString().padStart(USDC_DECIMALS, '0').replace(/0+$/, '');
  return `${whole}.${fraction.padEnd(2, '0')}`;
}

/**
 * An amount as a command-line value, without trailing zeros (`15000000n` → `"15"`, `200000n` →
 * `"0.2"`): what `--max-amount` and `pnpm ledger fund` take.
 * @param atomic amount in atomic USDC units (non-negative)
 */
export function usdcArgument(atomic: bigint): string {
  const whole = atomic / SCALE;
  const fraction = (atomic % SCALE).toString().padStart(USDC_DECIMALS, '0').replace(/0+$/, '');
  return fraction === '' ? whole.toString() : `${whole}.${fraction}`;
}

/**
 * The whole number of USDC that covers `shortfall` atomic units, at least 1: the amount a funding
 * command proposes (`150000n` → `1n`, `15000000n` → `15n`, `15000001n` → `16n`).
 * @param shortfall atomic USDC units missing (may be zero or negative: then 1)
 */
export function wholeUsdcCovering(shortfall: bigint): bigint {
  if (shortfall <= 0n) return 1n;
  const whole = (shortfall + SCALE - 1n) / SCALE;
  return whole < 1n ? 1n : whole;
}
