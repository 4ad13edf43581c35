// USDC amounts as agent-pay reads and prints them. The parsing, the default cap and the plain
// formatting are the paying client's own, from the Solana-free `@repo/x402-solana/client-core`, so
// that a free call or --help loads none of the Solana modules.
import { formatAtomic, USDC_DECIMALS } from '@repo/x402-solana/client-core';

export { DEFAULT_MAX_AMOUNT_ATOMIC, parseUsdc, USDC_DECIMALS } from '@repo/x402-solana/client-core';

const SCALE = 10n ** BigInt(USDC_DECIMALS);

/**
 * An amount as a person reads it: at least two decimals, more only when the amount has them
 * (`200000n` → `"0.20"`, `15000000n` → `"15.00"`, `1n` → `"0.000001"`).
 * @param atomic amount in atomic USDC units (non-negative)
 */
export function formatUsdc(atomic: bigint): string {
  const [whole, fraction = ''] = formatAtomic(atomic).split('.');
  return `${whole}.${fraction.padEnd(2, '0')}`;
}

/**
 * An amount as a command-line value, without trailing zeros (`15000000n` → `"15"`, `200000n` →
 * `"0.2"`): what `--max-amount` and `pnpm ledger fund` take.
 * @param atomic amount in atomic USDC units (non-negative)
 */
export function usdcArgument(atomic: bigint): string {
  return formatAtomic(atomic);
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
