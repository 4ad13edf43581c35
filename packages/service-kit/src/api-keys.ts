import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type * as Bs58 from 'bs58' with { 'resolution-mode': 'import' };

// bs58 ships a CommonJS build with ESM-only typings, which a CommonJS package cannot `import` (TS1479).
// eslint-disable-next-line @typescript-eslint/no-require-imports -- see above
const bs58 = (require('bs58') as typeof Bs58).default;

/** A freshly generated API key: the secret (shown once, never stored) and what is stored. */
export interface NewApiKey {
  /** The full key: the scheme's prefix + base58 of 32 random bytes, e.g. `spk_3J98t1Wp...`. */
  key: string;
  /** Lowercase hex SHA-256 of the key (the stored form). */
  hash: string;
  /** The prefix plus the first key characters, stored and shown to identify the key. */
  displayPrefix: string;
}

/** A service's API key format (see {@link apiKeyScheme}). */
export interface ApiKeyScheme {
  /** Every key starts with this, e.g. `sk_router_`. */
  readonly prefix: string;
  /** A new key from 32 bytes of the CSPRNG. */
  generate(): NewApiKey;
  /** Whether a presented value has the key's shape (prefix + 43 or 44 base58 characters); checked before any database work. */
  looksLike(value: string): boolean;
}

/**
 * The one API key module of the services that issue keys: `<prefix>` + base58 of 32 random bytes,
 * stored as SHA-256 only, compared in constant time (README of each service, "API keys").
 * @param prefix e.g. `spk_` (signal-feedback) or `sk_router_` (skill-router)
 * @param displayChars key characters kept after the prefix for display
 */
export function apiKeyScheme(prefix: string, displayChars: number): ApiKeyScheme {
  const shape = new RegExp(`^${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[1-9A-HJ-NP-Za-km-z]{40,46}$`);
  return {
    prefix,
    generate() {
      const key = prefix + bs58.encode(randomBytes(32));
      return { key, hash: hashApiKey(key), displayPrefix: key.slice(0, prefix.length + displayChars) };
    },
    looksLike: (value) => shape.test(value),
  };
}

/**
 * The stored form of a key.
 * @returns lowercase hex SHA-256 of the UTF-8 key
 */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/**
 * Constant-time comparison of two hex SHA-256 digests.
 * @returns `true` when both are equal and non-empty (`false` for different lengths)
 */
export function hashesEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && left.length > 0 && timingSafeEqual(left, right);
}

/** The request headers {@link presentedApiKey} reads (a node `IncomingMessage`'s or express's). */
interface KeyHeaders {
  headers: Record<string, string | string[] | undefined>;
}

/**
 * The API key a request presents (docs/architecture.md, "One error dialect"): the `x-api-key` header,
 * else the token of `Authorization: Bearer <key>` (the scheme name in any case), so that clients built
 * for either convention work wherever a key is accepted. A blank header counts as none.
 * @returns the key as sent (trimmed), or `undefined` when neither header carries one
 */
export function presentedApiKey(req: KeyHeaders): string | undefined {
  const header = req.headers['x-api-key'];
  const direct = (typeof header === 'string' ? header : undefined)?.trim();
  if (direct) return direct;
  const authorization = req.headers.authorization;
  if (typeof authorization !== 'string') return undefined;
  const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
  return match?.[1];
}
