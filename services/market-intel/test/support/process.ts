import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { Keypair } from '@solana/web3.js';
import { resetAndMigrate } from '@repo/db-migrate/testing';
import { resetVhost } from '@repo/queue/testing';
import {
  runScoped,
  spawnService,
  TcpProxy,
  testDatabaseUrl,
  type ServiceProcess,
} from '@repo/service-kit/testing';

/**
 * A Solana JSON-RPC stand-in that knows no transaction: every `getTransaction` answers `null`, so
 * each paid request with a well-formed proof spends the verifier's bounded retries (about a second)
 * and ends in a 402 `not_found`: a slow request that is certain to be in flight at a given moment.
 */
export async function startEmptyRpc(): Promise<{ url: string; calls: () => number; close(): Promise<void> }> {
  let calls = 0;
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
    req.on('end', () => {
      calls++;
      let id: unknown = null;
      try {
        id = (JSON.parse(raw) as { id?: unknown }).id ?? null;
      } catch {
        // not JSON: answer with id null
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ jsonrpc: '2.0', id, result: null }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  return {
    url: `http://127.0.0.1:${address.port}`,
    calls: () => calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

/** A random, well-formed transaction signature (base58 of 64 bytes) that no ledger knows. */
export function unknownSignature(): string {
  const bytes = randomBytes(64);
  bytes[0] = bytes[0]! | 1; // no leading zero byte, so the base58 form has no leading '1's to add
  let n = BigInt(`0x${bytes.toString('hex')}`);
  let out = '';
  while (n > 0n) {
    out = ALPHABET[Number(n % 58n)]! + out;
    n /= 58n;
  }
  return out;
}

/** A market-intel process whose PostgreSQL and RabbitMQ connections go through proxies a test can cut. */
export interface ProxiedMarketIntel {
  service: ServiceProcess;
  pg: TcpProxy;
  amqp: TcpProxy;
  rpc: Awaited<ReturnType<typeof startEmptyRpc>>;
  vhost: string;
  databaseUrl: string;
  close(): Promise<void>;
}

/**
 * Resets database and vhost `name` (of this run, `runScoped`), then spawns `src/main.ts` with DATABASE_URL and AMQP_URL through
 * {@link TcpProxy}s and the Solana RPC pointed at {@link startEmptyRpc}.
 * @param env extra environment (e.g. SHUTDOWN_TIMEOUT_MS)
 * @param options `migrationsDir`: the migrations applied before the start (default the service's own)
 */
export async function spawnProxiedMarketIntel(
  name: string,
  env: Record<string, string> = {},
  options: { migrationsDir?: string } = {},
): Promise<ProxiedMarketIntel> {
  const vhost = runScoped(name);
  const databaseUrl = testDatabaseUrl(name);
  await resetAndMigrate(
    databaseUrl,
    options.migrationsDir ?? path.join(__dirname, '../../prisma/migrations'),
  );
  const amqpUrl = await resetVhost(vhost);
  const pg = await TcpProxy.forUrl(databaseUrl, 5432);
  const amqp = await TcpProxy.forUrl(amqpUrl, 5672);
  const rpc = await startEmptyRpc();
  const service = await spawnService({
    cwd: path.join(__dirname, '../..'),
    env: {
      DATABASE_URL: pg.url,
      AMQP_URL: amqp.url,
      SOLANA_RPC_URL: rpc.url,
      SOLANA_DEVNET_RPC_URL: rpc.url,
      USDC_MINT: Keypair.generate().publicKey.toBase58(),
      MERCHANT_TOKEN_ACCOUNT: Keypair.generate().publicKey.toBase58(),
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
      INSTANCE_ID: `${name}-${process.pid}`,
      ...env,
    },
  });
  return {
    service,
    pg: pg.proxy,
    amqp: amqp.proxy,
    rpc,
    vhost,
    databaseUrl,
    async close() {
      await service.stop();
      await pg.proxy.close();
      await amqp.proxy.close();
      await rpc.close();
    },
  };
}
