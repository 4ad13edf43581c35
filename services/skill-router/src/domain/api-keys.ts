import { apiKeyScheme, type ApiKeyScheme } from '@repo/service-kit';

/**
 * skill-router's API key format (README, "Keys"): `sk_router_` + base58 of 32 random bytes, with a
 * 16-character display prefix (`sk_router_` plus six key characters). `generate()` returns
 * `{ key, hash, displayPrefix }`; `looksLike(value)` checks a presented `x-api-key` before any lookup.
 * Keys are hashed and compared with `hashApiKey` and `hashesEqual` of `@repo/service-kit`.
 */
export const skillRouterKeys: ApiKeyScheme = apiKeyScheme('sk_router_', 6);
