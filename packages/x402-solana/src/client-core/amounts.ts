/** Decimals of USDC (and of the local ledger's test USDC): 1 USDC = 1,000,000 atomic units. */
export const USDC_DECIMALS = 6;

/**
 * Default per-payment spend cap of {@link fetchWithPayment}, in atomic USDC units: 1 USDC, like the
 * official x402 clients' `$1` default (docs/payments.md "Paying for data (x402)").
 */
export const DEFAULT_MAX_AMOUNT_ATOMIC = 1_000_000n;

/**
 * Formats atomic units as a decimal amount without trailing zeros: `15000000n` → `"15"`, `100000n` →
 * `"0.1"`.
 * @param atomic amount in atomic units (non-negative)
 * @param decimals decimals of the token; default 6 (USDC)
 */
export function formatAtomic(atomic: bigint, decimals = USDC_DECIMALS): string {
  const scale = 10n ** BigInt(decimals);
  const whole = atomic / scale;
  const fraction = (atomic % scale).toString().padStart(decimals, '0').replace(/0+$/, '');
  return fraction === '' ? whole.toString() : `${whole}.${fraction}`;
}

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
  return BigInt(whole) * 10n ** BigInt(USDC_DECIMALS) + BigInt(fraction.padEnd(USDC_DECIMALS, '0'));
}
