import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * RabbitMQ's HTTP management API of the test broker (`TEST_RABBITMQ_MANAGEMENT_URL`, default
 * `http://guest:guest@127.0.0.1:15672`), used to create and delete vhosts when it answers; `rabbitmqctl`
 * otherwise.
 */
export const TEST_RABBITMQ_MANAGEMENT_URL =
  process.env.TEST_RABBITMQ_MANAGEMENT_URL ?? 'http://guest:guest@127.0.0.1:15672';

/** The API's origin and the Basic credentials of its URL (fetch refuses credentials in a URL). */
function managementTarget(): { origin: string; authorization: string } {
  const url = new URL(TEST_RABBITMQ_MANAGEMENT_URL);
  const user = decodeURIComponent(url.username || 'guest');
  const password = decodeURIComponent(url.password || 'guest');
  return {
    origin: url.origin,
    authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
  };
}

let managementAvailable: Promise<boolean> | undefined;

/**
 * Whether the management API answers (asked once per process): a `rabbitmqctl` call boots an Erlang
 * node, seconds on a busy machine, where the API answers in milliseconds.
 */
function useManagementApi(): Promise<boolean> {
  managementAvailable ??= (async () => {
    try {
      const { origin, authorization } = managementTarget();
      const res = await fetch(`${origin}/api/whoami`, {
        headers: { authorization },
        signal: AbortSignal.timeout(5_000),
      });
      await res.arrayBuffer();
      return res.ok;
    } catch {
      return false;
    }
  })();
  return managementAvailable;
}

/**
 * One management API call; a 404 is returned to the caller, any other failure thrown.
 * @throws Error on a status other than 2xx and 404
 */
async function management(method: string, path: string, body?: unknown): Promise<Response> {
  const { origin, authorization } = managementTarget();
  const res = await fetch(`${origin}${path}`, {
    method,
    headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(60_000),
  });
  if (!res.ok && res.status !== 404)
    throw new Error(`RabbitMQ management ${method} ${path}: ${res.status} ${await res.text()}`);
  return res;
}

async function rabbitmqctl(...args: string[]): Promise<string> {
  const { stdout } = await run('rabbitmqctl', ['-q', ...args], { timeout: 60_000 });
  return stdout;
}

/** The user of `amqpBaseUrl` (`guest` when it names none). */
function amqpUser(amqpBaseUrl: string): string {
  return decodeURIComponent(new URL(amqpBaseUrl).username || 'guest');
}

/**
 * Creates vhost `name`, which must not exist yet, and gives the user of `amqpBaseUrl` full permissions
 * on it, through the management API when it answers, else `rabbitmqctl`.
 * @param amqpBaseUrl AMQP URL of the broker without a vhost, e.g. `amqp://guest:guest@127.0.0.1:5672`
 * @throws Error when neither the API nor rabbitmqctl can create it
 */
export async function createTestVhost(name: string, amqpBaseUrl: string): Promise<void> {
  const user = amqpUser(amqpBaseUrl);
  if (await useManagementApi()) {
    const vhost = encodeURIComponent(name);
    await management('PUT', `/api/vhosts/${vhost}`, {});
    await management('PUT', `/api/permissions/${vhost}/${encodeURIComponent(user)}`, {
      configure: '.*',
      write: '.*',
      read: '.*',
    });
    return;
  }
  await rabbitmqctl('add_vhost', name);
  await rabbitmqctl('set_permissions', '-p', name, user, '.*', '.*', '.*');
}

/**
 * Deletes vhost `name` and everything in it (its connections are closed); nothing when it does not
 * exist. Through the management API when it answers, else `rabbitmqctl`.
 * @throws Error when the management API refuses the deletion (rabbitmqctl's failures are ignored)
 */
export async function deleteTestVhost(name: string): Promise<void> {
  if (await useManagementApi()) {
    await management('DELETE', `/api/vhosts/${encodeURIComponent(name)}`);
    return;
  }
  await rabbitmqctl('delete_vhost', name).catch(() => undefined);
}

/**
 * The names of the broker's vhosts, through the management API when it answers, else `rabbitmqctl`.
 * @throws Error when neither can list them
 */
export async function listTestVhosts(): Promise<string[]> {
  if (await useManagementApi()) {
    const res = await management('GET', '/api/vhosts?columns=name');
    return ((await res.json()) as { name: string }[]).map((v) => v.name);
  }
  const stdout = await rabbitmqctl('list_vhosts', '--no-table-headers', 'name');
  return stdout
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
}
