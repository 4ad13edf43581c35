// USDC amounts (6 decimals) as decimal strings and atomic units; kept here, light, so that importing
// the package does not load the Solana libraries.

/** Decimals of USDC: 1 USDC = 1,000,000 atomic units. */
export const USDC_DECIMALS = 6;

/**
 * Formats atomic units as a decimal amount without trailing zeros: `15000000n` → `"15"`, `50000n` →
 * `"0.05"`.
 * @param atomic amount in atomic units (non-negative)
 */
export function formatAtomic(atomic: bigint): string {
  const scale = 10n ** BigInt(USDC_DECIMALS);
  const fraction = (atomic % scale).toString().padStart(USDC_DECIMALS, '0').replace(/0+$/, '');
  return fraction === '' ? (atomic / scale).toString() : `${atomic / scale}.${fraction}`;
}

/**
 * Parses a decimal USDC amount (`"25"`, `"0.5"`, `"1.000001"`) into atomic units.
 * @throws RangeError when `text` is not a non-negative decimal with at most 6 fractional digits
 */
export function parseUsdc(text: string): bigint {
  const match = /^([0-9]+)(?:\.([0-9]{1,6}))?$/.exec(text.trim());
  if (!match) throw new RangeError(`not a USDC amount with at most ${USDC_DECIMALS} decimals: "${text}"`);
  const [, whole = '0', fraction = ''] = match;
  return BigInt(whole) * 10n ** BigInt(USDC_DECIMALS) + BigInt(fraction.padEnd(USDC_DECIMALS, '0'));
}
