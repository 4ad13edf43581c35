import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A new session token (sent in the cookie) and its stored hash, plus the CSRF token. */
export interface NewSessionTokens {
  /** base64url of 32 random bytes; only the client has it. */
  token: string;
  /** Lowercase hex SHA-256 of the token. */
  tokenHash: string;
  /** base64url of 32 random bytes: the synchronizer CSRF token. */
  csrfToken: string;
}

/** Fresh session and CSRF tokens from the CSPRNG (256 bits each). */
export function newSessionTokens(): NewSessionTokens {
  const token = randomBytes(32).toString('base64url');
  return { token, tokenHash: hashSessionToken(token), csrfToken: randomBytes(32).toString('base64url') };
}

/** Lowercase hex SHA-256 of a session token (the stored form). */
export function hashSessionToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Constant-time string equality (false for different lengths). */
export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}
