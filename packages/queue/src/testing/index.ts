import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createTestVhost, deleteTestVhost } from '@repo/service-kit/testing';

const run = promisify(execFile);

/** Base AMQP URL of the test broker, without a vhost (`TEST_AMQP_BASE_URL`, default guest on 127.0.0.1:5672). */
export const TEST_AMQP_BASE_URL = process.env.TEST_AMQP_BASE_URL ?? 'amqp://guest:guest@127.0.0.1:5672';

async function rabbitmqctl(...args: string[]): Promise<string> {
  const { stdout } = await run('rabbitmqctl', ['-q', ...args], { timeout: 60_000 });
  return stdout;
}

/**
 * Deletes and re-creates the virtual host `name` (it must contain "test") with full permissions for
 * the user of {@link TEST_AMQP_BASE_URL}, so each suite starts from an empty broker. Through
 * RabbitMQ's management API when it answers, else `rabbitmqctl` on this machine
 * (`createTestVhost` in `@repo/service-kit/testing`).
 * @returns the AMQP URL of the vhost
 * @throws Error when the name lacks "test" or the broker refuses
 */
export async function resetVhost(name: string): Promise<string> {
  if (!name.includes('test'))
    throw new Error(`refusing to reset vhost "${name}": its name must contain "test"`);
  await deleteTestVhost(name);
  await createTestVhost(name, TEST_AMQP_BASE_URL);
  return `${TEST_AMQP_BASE_URL}/${encodeURIComponent(name)}`;
}

/** Deletes a test vhost (and everything in it). */
export async function deleteVhost(name: string): Promise<void> {
  if (!name.includes('test')) throw new Error(`refusing to delete vhost "${name}"`);
  await deleteTestVhost(name);
}

/** Force-closes every client connection to vhost `name`, as a broker failover would. */
export async function closeVhostConnections(name: string): Promise<void> {
  await rabbitmqctl('close_all_connections', '-p', name, 'closed by test');
}

/** Number of ready messages in `queue` of vhost `name`. */
export async function queueDepth(vhost: string, queue: string): Promise<number> {
  const out = await rabbitmqctl('list_queues', '-p', vhost, '--no-table-headers', 'name', 'messages_ready');
  for (const line of out.split('\n')) {
    const [queueName, count] = line.trim().split(/\s+/);
    if (queueName === queue) return Number(count);
  }
  return 0;
}

/** Polls a condition with a deadline (the one implementation, in `@repo/service-kit/testing`). */
export { waitFor } from '@repo/service-kit/testing';
