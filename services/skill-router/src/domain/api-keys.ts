import { createHash } from 'node:crypto';
import { apiKeyScheme, clientIpKey, type ApiKeyScheme } from '@repo/service-kit';

/**
 * skill-router's API key format (README, "Keys"): `sk_router_` + base58 of 32 random bytes, with a
 * 16-character display prefix (`sk_router_` plus six key characters). `generate()` returns
 * `{ key, hash, displayPrefix }`; `looksLike(value)` checks a presented `x-api-key` before any lookup.
 * Keys are hashed and compared with `hashApiKey` and `hashesEqual` of `@repo/service-kit`.
 */
export const skillRouterKeys: ApiKeyScheme = apiKeyScheme('sk_router_', 6);

/**
 * The network a key-creating client belongs to for {@link keyCohort}: its /24 for IPv4 (an IPv6
 * address carrying an IPv4 client's, such as NAT64 or 6to4, counts as that IPv4 address), its /64
 * for IPv6, `unknown` without a valid address (all such clients share one network).
 * @param ip the client address as express derives it (`req.ip`, through `TRUST_PROXY` hops)
 * @returns e.g. `203.0.113.0/24`, `2001:db8:1:2::/64` or `unknown`
 */
export function creationNetwork(ip: string | undefined): string {
  const key = clientIpKey(ip);
  if (key === 'unknown' || key.includes(':')) return key;
  const octets = key.split('.');
  return `${octets.slice(0, 3).join('.')}.0/24`;
}

/**
 * The reporter cohort of a new key (README, "Reputation"): keys created from the same /24 (IPv4) or
 * /64 (IPv6) on the same UTC day count as one reporter. Stored instead of the address: the lowercase
 * hex SHA-256 of `<YYYY-MM-DD>|<network>`, first 32 characters.
 * @param ip the creating client's address (`req.ip`)
 * @param now the creation time (its UTC day is used)
 */
export function keyCohort(ip: string | undefined, now: Date): string {
  const day = now.toISOString().slice(0, 10);
  return createHash('sha256')
    .update(`${day}|${creationNetwork(ip)}`)
    .digest('hex')
    .slice(0, 32);
}
