import { classifyAddress } from '@repo/ssrf-guard';
import { ConfigError } from './config';

/**
 * One setting production must not run with (each service's README, "Security" or "Configuration";
 * docs/deploying.md, "Deploying"):
 * - `broker`: a `remote` AMQP URL that also has RabbitMQ's default `guest:guest` or no credentials;
 * - `remote`: a URL (database, broker, RPC) that reaches this machine, which in a container is the pod
 *   itself, never the intended server (see {@link productionProblems} for what counts);
 * - `empty`: a development-only list (`SSRF_ALLOWLIST`) that must be empty;
 * - `secret`: a key shorter than 32 bytes, still holding a template's `CHANGE_ME`, or visibly not
 *   random (see {@link estimatedEntropyBits}); `required`: missing counts too;
 * - `set`: a setting whose development default production must not rely on: its raw value must be
 *   given (`why` says what it decides);
 * - `enabled`: a switch production must not turn off: an explicit `false` is refused (`why` says
 *   what turning it off would do);
 * - `cors`: a comma-separated `CORS_ORIGINS`: `*` and `http:` origins are refused (a page served over
 *   plain HTTP, or any page, could then call the API from a visitor's browser).
 * A missing value passes every kind but a required `secret` and `set`: whether it may be missing is
 * the schema's call.
 */
export type ProductionCheck =
  | { kind: 'broker' | 'remote' | 'empty' | 'cors'; name: string; value: string | undefined }
  | { kind: 'secret'; name: string; value: string | undefined; required?: boolean }
  | { kind: 'set'; name: string; value: string | undefined; why: string }
  | { kind: 'enabled'; name: string; value: boolean | undefined; why: string };

/**
 * Names that are this machine whatever DNS says: `localhost` and every `*.localhost` (RFC 6761,
 * section 6.3), and the loopback names Debian's and Docker's `/etc/hosts` carry.
 */
const LOCAL_NAMES = new Set([
  'localhost',
  'localhost.localdomain',
  'localhost6',
  'ip6-localhost',
  'ip6-loopback',
]);

/**
 * Why a connection to `host` (a URL's host or a pg `host` parameter, as written) reaches this
 * machine, or undefined when it names another one. Classification, not resolution: IP literals in
 * any form the clients accept (`127.1`, `2130706433`, `0x7f.1`, `[::ffff:127.0.0.1]`) are classified
 * by `@repo/ssrf-guard` (loopback and unspecified refused), `localhost` names by {@link LOCAL_NAMES};
 * other names are not looked up at boot.
 */
function localHost(host: string): string | undefined {
  let text = host;
  try {
    // pg decodes the host (`%6cocalhost`, `%2Fvar%2Frun%2Fpostgresql`).
    text = decodeURIComponent(host);
  } catch {
    // Not percent-encoding: the client sees it as written.
  }
  text = text.trim();
  if (text === '') return 'names no host, so the client connects to this machine';
  if (text.startsWith('/')) return `points at the Unix socket ${text}, a connection to this machine`;
  const name = text.toLowerCase().replace(/\.+$/, '');
  if (LOCAL_NAMES.has(name) || name.endsWith('.localhost')) return `points at ${host}, a loopback address`;
  let addressClass;
  try {
    addressClass = classifyAddress(name);
  } catch {
    return undefined; // a DNS name other than localhost
  }
  if (addressClass === 'loopback') return `points at ${host}, a loopback address`;
  if (addressClass === 'unspecified')
    return `points at ${host}, the unspecified address (a connection to it reaches this machine)`;
  return undefined;
}

/**
 * A connection URL and the hosts it makes its client connect to, as written: for `postgres:` and
 * `postgresql:` every non-empty `host` query parameter (pg lets the last one override the URL's
 * host, and libpq-style strings use it for sockets) or, without one, the URL's host; for any other
 * scheme the URL's host. A pg URL with credentials but no host (`postgresql://u@/db`), which pg reads
 * with an empty host, gives `['']`.
 * @returns the parsed URL and the hosts, or undefined when `value` is not a URL
 */
function connectionHosts(value: string): { url: URL; hosts: string[] } | undefined {
  const pg = /^postgres(ql)?:/i.test(value);
  let url: URL;
  let noHost = false;
  try {
    url = new URL(value);
  } catch {
    if (!pg) return undefined;
    try {
      // The same fallback as pg's connection-string parser: a dummy host that it then drops.
      url = new URL(value.replace('@/', '@___DUMMY___/'));
      noHost = true;
    } catch {
      return undefined;
    }
  }
  const params = pg ? url.searchParams.getAll('host').filter((h) => h !== '') : [];
  return { url, hosts: params.length > 0 ? params : [noHost ? '' : url.hostname] };
}

/** Bits a secret must be estimated at by {@link estimatedEntropyBits} (see there for why 128). */
const MIN_SECRET_BITS = 128;

/**
 * A rough entropy estimate of a secret, in bits: the Shannon entropy of its characters' frequencies
 * (bits per character) times the length of its shortest repeating unit (`abcabcab` counts as `abc`).
 * It only tells apart keys that are visibly not random — one character, a short alphabet, a word
 * repeated — from random ones, and cannot prove a key random: a typed sentence can pass.
 *
 * Why {@link MIN_SECRET_BITS} = 128: the estimate undercounts random text, since a string of n
 * characters from an alphabet of k is estimated about (k − 1) / (2 n ln 2) bits per character short of
 * log2 k. The keys the README asks for, 32 random bytes, come out far above it: in base64
 * (`openssl rand -base64 32`) at 180–250 bits, in hex (`openssl rand -hex 32`) at 220–256. Below it
 * fall `a` × 32 (0), `ab` × 16 (2), `password` repeated (22, however often), and also the hex of only
 * 16 random bytes (at most 128, usually about 115): half the key the README asks for.
 * @param secret the secret as configured
 * @returns the estimate in bits (0 for an empty string)
 */
export function estimatedEntropyBits(secret: string): number {
  const chars = [...secret];
  const n = chars.length;
  if (n === 0) return 0;
  const counts = new Map<string, number>();
  for (const c of chars) counts.set(c, (counts.get(c) ?? 0) + 1);
  let perChar = 0;
  for (const count of counts.values()) perChar -= (count / n) * Math.log2(count / n);
  // Shortest period from the prefix function (Knuth–Morris–Pratt): n minus the longest proper
  // prefix that is also a suffix.
  const border = new Array<number>(n).fill(0);
  for (let i = 1, k = 0; i < n; i += 1) {
    while (k > 0 && chars[i] !== chars[k]) k = border[k - 1] ?? 0;
    if (chars[i] === chars[k]) k += 1;
    border[i] = k;
  }
  return perChar * (n - (border[n - 1] ?? 0));
}

/**
 * The problems of a configuration for production, one `NAME: why` line each (secret values are never
 * echoed). `remote` (and `broker`) URLs are refused when they reach this machine: a host that is
 * `localhost`, `*.localhost` or another local name (a trailing dot, case and percent-encoding
 * ignored), a loopback or unspecified IP address in any form (`127.1`, `2130706433`, `0`, `[::]`,
 * `[::ffff:127.0.0.1]`), a Unix socket path, or no host at all; for PostgreSQL URLs the `host` query
 * parameters count instead of the URL's host when present. Names are not resolved. A value that is
 * not a URL is refused too (its client would fall back to this machine or fail).
 * @param checks what each setting must satisfy (see {@link ProductionCheck})
 * @returns the problems, in the order of `checks`; empty when none
 */
export function productionProblems(checks: readonly ProductionCheck[]): string[] {
  const problems: string[] = [];
  for (const check of checks) {
    const { name } = check;
    if (check.kind === 'enabled') {
      if (check.value === false) problems.push(`${name}: must not be false in production (${check.why})`);
      continue;
    }
    const { value } = check;
    if (check.kind === 'set') {
      if (value === undefined || value.trim() === '')
        problems.push(`${name}: must be set explicitly in production (${check.why})`);
      continue;
    }
    if (check.kind === 'secret') {
      if (value === undefined || value === '') {
        if (check.required) problems.push(`${name}: required in production`);
        continue;
      }
      const short = Buffer.byteLength(value, 'utf8') < 32;
      const placeholder = /CHANGE_ME/i.test(value);
      if (short)
        problems.push(`${name}: must be at least 32 bytes in production (e.g. openssl rand -base64 32)`);
      if (placeholder)
        problems.push(`${name}: still the CHANGE_ME placeholder of the secret template; set a random value`);
      // Judged only once long enough and not a placeholder, so that each secret gets one reason.
      if (!short && !placeholder && estimatedEntropyBits(value) < MIN_SECRET_BITS)
        problems.push(
          `${name}: does not look random (repeated or too few distinct characters); use 32 random bytes (e.g. openssl rand -base64 32)`,
        );
      continue;
    }
    if (value === undefined || value.trim() === '') continue;
    if (check.kind === 'empty') {
      problems.push(`${name}: must be empty in production (it lets requests reach private addresses)`);
      continue;
    }
    if (check.kind === 'cors') {
      for (const origin of value.split(',').map((o) => o.trim())) {
        if (origin === '*')
          problems.push(`${name}: "*" is not allowed in production; list the https:// origins that may call`);
        else if (/^http:/i.test(origin))
          problems.push(`${name}: ${origin} is plain HTTP; production allows https:// origins only`);
      }
      continue;
    }
    const connection = connectionHosts(value);
    if (!connection) {
      problems.push(`${name}: is not a URL whose host can be checked`);
      continue;
    }
    for (const host of connection.hosts) {
      const why = localHost(host);
      if (why) problems.push(`${name}: ${why}, in production`);
    }
    if (check.kind === 'broker') {
      const { url } = connection;
      const user = decodeURIComponent(url.username);
      const password = decodeURIComponent(url.password);
      if (user === '' && password === '')
        problems.push(`${name}: has no credentials (RabbitMQ then uses its default guest account)`);
      else if (user === 'guest' && password === 'guest')
        problems.push(`${name}: uses RabbitMQ's default guest:guest credentials in production`);
    }
  }
  return problems;
}

/**
 * Refuses to boot a production configuration with insecure settings, naming every problem at once;
 * any other `NODE_ENV` passes.
 * @param nodeEnv the parsed `NODE_ENV`
 * @param checks what each setting must satisfy (see {@link ProductionCheck})
 * @throws ConfigError listing every problem found by {@link productionProblems}
 */
export function assertProductionReady(nodeEnv: string, checks: readonly ProductionCheck[]): void {
  if (nodeEnv !== 'production') return;
  const problems = productionProblems(checks);
  if (problems.length > 0) throw new ConfigError(problems);
}
