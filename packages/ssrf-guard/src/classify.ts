import ipaddr from 'ipaddr.js';

/**
 * What kind of destination an IP address is, as far as outbound requests are concerned.
 *
 * - `public`: globally routable unicast; the only class allowed without an allowlist entry.
 * - `loopback`: 127.0.0.0/8, ::1.
 * - `private`: RFC 1918 (10/8, 172.16/12, 192.168/16) and the deprecated IPv6 site-local fec0::/10.
 * - `link-local`: 169.254.0.0/16, fe80::/10.
 * - `unique-local`: IPv6 fc00::/7 (RFC 4193).
 * - `carrier-grade-nat`: 100.64.0.0/10 (RFC 6598).
 * - `multicast`: 224.0.0.0/4, ff00::/8.
 * - `unspecified`: 0.0.0.0/8, ::.
 * - `reserved`: documentation, benchmarking, broadcast, 240/4, IPv6 outside 2000::/3 and other
 *   special-purpose blocks (RFC 6890).
 * - `metadata`: cloud instance-metadata endpoints such as 169.254.169.254, fd00:ec2::254 and
 *   100.100.100.200 (checked before the range they sit in).
 */
export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'unique-local'
  | 'carrier-grade-nat'
  | 'multicast'
  | 'unspecified'
  | 'reserved'
  | 'metadata';

/** IPv4 cloud metadata endpoints: AWS/GCP/Azure/OCI/DigitalOcean IMDS, AWS ECS task and EKS pod identity, Alibaba, Azure WireServer, Oracle classic. */
const METADATA_IPV4 = new Set([
  '169.254.169.254',
  '169.254.170.2',
  '169.254.170.23',
  '100.100.100.200',
  '168.63.129.16',
  '192.0.0.192',
]);

/** IPv6 cloud metadata endpoints: AWS IMDS and EKS pod identity over IPv6. */
const METADATA_IPV6 = ['fd00:ec2::254', 'fd00:ec2::23'].map((a) => ipaddr.IPv6.parse(a));

/** Host names that resolve to a metadata service inside cloud networks (compared lower-case, without a trailing dot). */
const METADATA_HOSTNAMES = new Set([
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'instance-data',
  'instance-data.ec2.internal',
]);

/** The parsed form of an address, IPv4-mapped IPv6 already unwrapped. */
export type ParsedAddress = ipaddr.IPv4 | ipaddr.IPv6;

/** Removes the square brackets a URL puts around an IPv6 literal. */
export function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/**
 * Parses an IP address (IPv4 in any form inet_aton accepts, IPv6 with or without brackets or zone)
 * and unwraps IPv4-mapped IPv6 (::ffff:a.b.c.d) to the IPv4 address it denotes.
 * @throws TypeError when `ip` is not an IP address.
 */
export function parseAddress(ip: string): ParsedAddress {
  const text = stripBrackets(ip.trim());
  if (!ipaddr.isValid(text)) throw new TypeError(`"${ip}" is not an IP address`);
  const parsed = ipaddr.parse(text);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
    return (parsed as ipaddr.IPv6).toIPv4Address();
  }
  return parsed;
}

function classifyIPv4(addr: ipaddr.IPv4): AddressClass {
  if (METADATA_IPV4.has(addr.toString())) return 'metadata';
  switch (addr.range()) {
    case 'unspecified':
      return 'unspecified';
    case 'loopback':
      return 'loopback';
    case 'private':
      return 'private';
    case 'linkLocal':
      return 'link-local';
    case 'carrierGradeNat':
      return 'carrier-grade-nat';
    case 'multicast':
      return 'multicast';
    case 'broadcast':
    case 'reserved':
      return 'reserved';
    default:
      // unicast, as112 and amt are globally routed anycast/unicast.
      return 'public';
  }
}

/** Classifies the IPv4 address carried in two 16-bit IPv6 parts (NAT64, 6to4, SIIT). */
function classifyEmbedded(high: number, low: number): AddressClass {
  return classifyIPv4(new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]));
}

function classifyIPv6(addr: ipaddr.IPv6): AddressClass {
  if (METADATA_IPV6.some((m) => addr.match(m, 128))) return 'metadata';
  const p = addr.parts;
  // ipaddr.js returns range names beyond its declared union (deprecatedSiteLocal, discard, ...).
  const range: string = addr.range();
  switch (range) {
    case 'unspecified':
      return 'unspecified';
    case 'loopback':
      return 'loopback';
    case 'linkLocal':
      return 'link-local';
    case 'uniqueLocal':
      return 'unique-local';
    case 'multicast':
      return 'multicast';
    case 'deprecatedSiteLocal':
      return 'private';
    case 'rfc6145':
      // ::ffff:0:a.b.c.d (SIIT) reaches the embedded IPv4 address.
      return classifyEmbedded(p[6] ?? 0, p[7] ?? 0);
    case 'rfc6052':
      // 64:ff9b::/96 is NAT64 to the embedded IPv4 address; 64:ff9b:1::/48 is for local use.
      return p[2] === 0 ? classifyEmbedded(p[6] ?? 0, p[7] ?? 0) : 'reserved';
    case '6to4':
      return classifyEmbedded(p[1] ?? 0, p[2] ?? 0);
    case 'amt':
    case 'as112v6':
      return 'public';
    case 'unicast':
      // Only 2000::/3 is allocated as global unicast; ::a.b.c.d (IPv4-compatible) and the rest are not.
      return ((p[0] ?? 0) & 0xe000) === 0x2000 ? 'public' : 'reserved';
    default:
      // teredo, benchmarking, discard, orchid, segment routing, documentation, ...
      return 'reserved';
  }
}

/** Classifies an already parsed address (see {@link parseAddress}). */
export function classifyParsed(addr: ParsedAddress): AddressClass {
  return addr.kind() === 'ipv4' ? classifyIPv4(addr as ipaddr.IPv4) : classifyIPv6(addr as ipaddr.IPv6);
}

/**
 * Classifies an IP address for outbound-request policy.
 *
 * Accepts IPv4 in dotted or any inet_aton form (`2130706433`, `0x7f.1`), IPv6 with or without
 * brackets and zone index; IPv4-mapped IPv6 (`::ffff:127.0.0.1`), NAT64 (`64:ff9b::/96`) and 6to4
 * (`2002::/16`) addresses are classified by the IPv4 address they carry.
 * @param ip the address as text
 * @returns its {@link AddressClass}; only `public` is allowed by default
 * @throws TypeError when `ip` is not an IP address
 */
export function classifyAddress(ip: string): AddressClass {
  return classifyParsed(parseAddress(ip));
}

/** Lower-cases a host name and drops the trailing dot of a fully qualified name. */
export function normalizeHostname(host: string): string {
  const lower = host.trim().toLowerCase();
  return lower.endsWith('.') ? lower.slice(0, -1) : lower;
}

/**
 * Whether a host name is a well-known cloud metadata name (`metadata.google.internal`, `metadata`, ...),
 * compared case-insensitively and ignoring a trailing dot.
 */
export function isMetadataHostname(host: string): boolean {
  return METADATA_HOSTNAMES.has(normalizeHostname(host));
}
