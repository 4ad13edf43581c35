import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type * as Bs58 from 'bs58' with { 'resolution-mode': 'import' };

// bs58 ships a CommonJS build with ESM-only typings: types in ESM mode, the build through require.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- see above
const bs58 = (require('bs58') as typeof Bs58).default;

/** Every key starts with this (skill-router spec, "API key"). */
export const API_KEY_PREFIX = 'sk_router_';

/** Characters of the key kept as its display prefix: `sk_router_` plus six key characters. */
export const DISPLAY_PREFIX_LENGTH = API_KEY_PREFIX.length + 6;

/** A fresh key: the secret (shown once) and what is stored. */
export interface NewApiKey {
  /** The full key, `sk_router_` + base58 of 32 random bytes; never stored. */
  apiKey: string;
  /** Leading characters, stored and shown to identify the key. */
  prefix: string;
  /** Lowercase hex SHA-256 of the full key, stored. */
  keyHash: string;
}

/**
 * Creates a key from 32 bytes of `crypto.randomBytes` (ARCHITECTURE.md, "API keys").
 * @returns the secret, its display prefix and its hash
 */
export function generateApiKey(): NewApiKey {
  const apiKey = API_KEY_PREFIX + bs58.encode(randomBytes(32));
  return { apiKey, prefix: apiKey.slice(0, DISPLAY_PREFIX_LENGTH), keyHash: hashApiKey(apiKey) };
}

/**
 * The stored form of a key.
 * @param apiKey the full key as sent in `x-api-key`
 * @returns lowercase hex SHA-256
 */
export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey, 'utf8').digest('hex');
}

/**
 * Whether a presented key has a plausible shape (prefix, base58 body of 32 bytes: 43 or 44 characters),
 * checked before any database lookup.
 */
export function looksLikeApiKey(value: string): boolean {
  return /^sk_router_[1-9A-HJ-NP-Za-km-z]{40,46}$/.test(value);
}

/**
 * Constant-time comparison of two hex hashes of equal length.
 * @returns `true` when they are equal
 */
export function hashesEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && left.length > 0 && timingSafeEqual(left, right);
}
