import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { normalizeHostname, parseAddress, stripBrackets, type ParsedAddress } from './classify';

/**
 * The SSRF policy. Without an allowlist only public addresses are reachable.
 */
export interface SsrfPolicy {
  /**
   * Development/test exceptions. Each entry is a host name (exact match, case-insensitive, trailing
   * dot ignored: `localhost`), an IP literal (`127.0.0.1`, `::1`, `[::1]`) or a CIDR block
   * (`10.0.0.0/8`, `fd00::/8`). An allowlisted host name permits every address it resolves to;
   * an IP or CIDR entry permits those addresses whatever host name led to them.
   * Scheme and credential checks always apply. Invalid entries throw a TypeError when used.
   */
  allowlist?: readonly string[];
}

/** An allowlist parsed once: host names and address ranges. */
export interface CompiledAllowlist {
  readonly hosts: ReadonlySet<string>;
  readonly ranges: ReadonlyArray<readonly [ParsedAddress, number]>;
}

const HOST_LABEL = /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/;

/** Parses one allowlist entry into a host name or a range, or throws a TypeError naming it. */
function parseEntry(raw: string): { host: string } | { range: readonly [ParsedAddress, number] } {
  const entry = stripBrackets(raw.trim());
  if (entry.includes('/')) {
    if (!ipaddr.isValidCIDR(entry))
      throw new TypeError(`SSRF allowlist entry "${raw}" is not a valid CIDR block`);
    const [base, bits] = ipaddr.parseCIDR(entry);
    if (base.kind() === 'ipv6' && (base as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) {
      return { range: [(base as ipaddr.IPv6).toIPv4Address(), bits - 96] };
    }
    return { range: [base, bits] };
  }
  if (isIP(entry.split('%')[0] ?? '') !== 0) {
    const addr = parseAddress(entry);
    return { range: [addr, addr.kind() === 'ipv4' ? 32 : 128] };
  }
  const host = normalizeHostname(entry);
  // Numeric forms like 2130706433 or 0x7f.1 are IP addresses to a URL parser, never host names.
  if (ipaddr.isValid(host)) {
    throw new TypeError(`SSRF allowlist entry "${raw}" must be written as a dotted-decimal IPv4 address`);
  }
  if (host.length === 0 || host.length > 253 || !host.split('.').every((label) => HOST_LABEL.test(label))) {
    throw new TypeError(`SSRF allowlist entry "${raw}" is not a host name, IP address or CIDR block`);
  }
  return { host };
}

/**
 * Validates allowlist entries once, for repeated matching.
 * @throws TypeError naming the first invalid entry
 */
export function compileAllowlist(entries: readonly string[] | undefined): CompiledAllowlist {
  const hosts = new Set<string>();
  const ranges: Array<readonly [ParsedAddress, number]> = [];
  for (const raw of entries ?? []) {
    if (raw.trim() === '') continue;
    const parsed = parseEntry(raw);
    if ('host' in parsed) hosts.add(parsed.host);
    else ranges.push(parsed.range);
  }
  return { hosts, ranges };
}

/**
 * Parses a development allowlist from an environment variable such as
 * `SSRF_ALLOWLIST=127.0.0.1,localhost,10.0.0.0/8`: entries separated by commas and/or whitespace,
 * blanks ignored, host names lower-cased. Unset or blank input gives `[]` (nothing allowlisted).
 * @param csv the variable's value
 * @returns the normalised entries, ready for {@link SsrfPolicy.allowlist}
 * @throws TypeError naming the first entry that is not a host name, IP address or CIDR block, so
 *   a service's config parsing fails fast
 */
export function parseAllowlist(csv: string | undefined): string[] {
  if (csv === undefined) return [];
  const entries = csv
    .split(/[\s,]+/)
    .map((e) => e.trim())
    .filter((e) => e !== '');
  return entries.map((raw) => {
    const parsed = parseEntry(raw);
    return 'host' in parsed ? parsed.host : stripBrackets(raw.trim());
  });
}

/** Whether a (normalised) host name is on the allowlist. */
export function isHostAllowed(list: CompiledAllowlist, host: string): boolean {
  return list.hosts.has(normalizeHostname(stripBrackets(host)));
}

/** Whether an address falls inside an allowlisted IP or CIDR entry. */
export function isAddressAllowed(list: CompiledAllowlist, addr: ParsedAddress): boolean {
  return list.ranges.some(([base, bits]) => base.kind() === addr.kind() && addr.match(base, bits));
}
