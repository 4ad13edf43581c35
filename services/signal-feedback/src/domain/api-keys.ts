import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type * as Bs58 from 'bs58' with { 'resolution-mode': 'import' };

// bs58 ships a CommonJS build with ESM-only typings, which a CommonJS package cannot `import` (TS1479).
// eslint-disable-next-line @typescript-eslint/no-require-imports -- see above
const bs58 = (require('bs58') as typeof Bs58).default;

/** Prefix of product API keys (README, "API keys"). */
export const API_KEY_PREFIX = 'spk_';
/** Characters of the key kept for display (`spk_` plus 8). */
const DISPLAY_LENGTH = API_KEY_PREFIX.length + 8;
/** Shape of a key: `spk_` + base58 of 32 random bytes (43 or 44 characters). */
const KEY_PATTERN = /^spk_[1-9A-HJ-NP-Za-km-z]{40,46}$/;

/** A newly generated key: the full key (shown once) and what is stored. */
export interface GeneratedApiKey {
  /** The full key, e.g. `spk_3J98t1Wp...`; never stored. */
  key: string;
  /** Lowercase hex SHA-256 of the key. */
  hash: string;
  /** The first 12 characters, for display. */
  displayPrefix: string;
}

/**
 * Generates a product API key: `spk_` + base58 of 32 bytes from the CSPRNG (README, "API keys").
 */
export function generateApiKey(): GeneratedApiKey {
  const key = API_KEY_PREFIX + bs58.encode(randomBytes(32));
  return { key, hash: hashApiKey(key), displayPrefix: key.slice(0, DISPLAY_LENGTH) };
}

/** Lowercase hex SHA-256 of a key (the stored form). */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Whether a presented value has the shape of an `spk_` key (checked before any database work). */
export function looksLikeApiKey(value: string): boolean {
  return KEY_PATTERN.test(value);
}

/**
 * Constant-time comparison of two hex SHA-256 digests.
 * @returns true when both are equal (false for different lengths)
 */
export function hashesEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}
