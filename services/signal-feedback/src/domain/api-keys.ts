import { apiKeyScheme, type ApiKeyScheme } from '@repo/service-kit';

/**
 * signal-feedback's product API key format (README, "API keys"): `spk_` + base58 of 32 random bytes,
 * with a 12-character display prefix (`spk_` plus eight key characters). `generate()` returns
 * `{ key, hash, displayPrefix }` (the key is shown once; the SHA-256 hash and the display prefix are
 * stored); `looksLike(value)` refuses a malformed key before any database work. Keys are hashed and
 * compared with `hashApiKey` and `hashesEqual` of `@repo/service-kit`.
 */
export const signalFeedbackKeys: ApiKeyScheme = apiKeyScheme('spk_', 8);
