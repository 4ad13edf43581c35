import { ConfigError } from './config';

/**
 * One setting production must not run with (each service's README, "Security"):
 * - `broker`: an AMQP URL with RabbitMQ's default `guest:guest` or with no credentials;
 * - `remote`: a URL (database, broker, RPC) whose host is loopback (`localhost`, `127.0.0.0/8`, `::1`),
 *   which in a container is the pod itself, never the intended server;
 * - `empty`: a development-only list (`SSRF_ALLOWLIST`) that must be empty;
 * - `secret`: a key shorter than 32 bytes or still holding a template's `CHANGE_ME` (`required`:
 *   missing counts too).
 * A missing value passes every kind but a required `secret`: whether it may be missing is the schema's call.
 */
export type ProductionCheck =
  | { kind: 'broker' | 'remote' | 'empty'; name: string; value: string | undefined }
  | { kind: 'secret'; name: string; value: string | undefined; required?: boolean };

const LOOPBACK_HOSTS = /^(localhost|localhost\.localdomain|127(\.\d{1,3}){3}|\[?::1\]?|0\.0\.0\.0)$/i;

/**
 * The problems of a configuration for production, one `NAME: why` line each (values are never
 * echoed: they may be secrets).
 * @param checks what each setting must satisfy
 */
export function productionProblems(checks: readonly ProductionCheck[]): string[] {
  const problems: string[] = [];
  for (const check of checks) {
    const { name, value } = check;
    if (check.kind === 'secret') {
      if (value === undefined || value === '') {
        if (check.required) problems.push(`${name}: required in production`);
        continue;
      }
      if (Buffer.byteLength(value, 'utf8') < 32)
        problems.push(`${name}: must be at least 32 bytes in production (e.g. openssl rand -base64 32)`);
      if (/CHANGE_ME/i.test(value))
        problems.push(`${name}: still the CHANGE_ME placeholder of the secret template; set a random value`);
      continue;
    }
    if (value === undefined || value.trim() === '') continue;
    if (check.kind === 'empty') {
      problems.push(`${name}: must be empty in production (it lets requests reach private addresses)`);
      continue;
    }
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      continue; // the schema reports malformed URLs
    }
    if (LOOPBACK_HOSTS.test(url.hostname))
      problems.push(`${name}: points at ${url.hostname}, a loopback address, in production`);
    if (check.kind === 'broker') {
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
