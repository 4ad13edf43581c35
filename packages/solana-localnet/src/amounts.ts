/**
 * Parses a whole-USDC decimal string (`"25"`, `"0.5"`, at most 6 fraction digits) into atomic units.
 * @throws Error for anything else (negative, exponent, more than 6 decimals, empty)
 */
export function parseUsdcAmount(text: string): bigint {
  const match = /^(\d+)(?:\.(\d{1,6}))?$/.exec(text.trim());
  if (match === null)
    throw new Error(`invalid USDC amount "${text}": use a decimal like 25 or 0.5 (at most 6 decimals)`);
  const whole = match[1] ?? '0';
  const fraction = (match[2] ?? '').padEnd(6, '0');
  return BigInt(whole) * 1_000_000n + BigInt(fraction);
}

/** Formats atomic units (6 decimals) as a whole-USDC decimal string, e.g. `25000000n` -> `"25"`. */
export function formatUsdcAmount(atomic: bigint): string {
  const negative = atomic < 0n;
  const abs = negative ? -atomic : atomic;
  const fraction = (abs % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${abs / 1_000_000n}${fraction ? `.${fraction}` : ''}`;
}
