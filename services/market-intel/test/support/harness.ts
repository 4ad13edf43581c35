import { randomInt } from 'node:crypto';
import path from 'node:path';
import type { Keypair } from '@solana/web3.js';
import { applyMigrations, resetDatabase } from '@repo/db-migrate';
import type { X402Network } from '@repo/schemas';
import { resetVhost } from '@repo/queue/testing';
import { startService } from '@repo/service-kit';
import { runScoped, TcpProxy, testDatabaseUrl } from '@repo/service-kit/testing';
import { sendUsdcTransfer, spawnLocalnet, type Localnet } from '@repo/solana-localnet';
import { encodePaymentHeader } from '@repo/x402-core';
import type { PaymentEvent } from '@repo/x402-express';
import { fetchWithPayment, type FetchWithPaymentResult } from '@repo/x402-solana/client';
import { loadConfig, type MarketIntelConfig } from '../../src/config';
import type { Db } from '../../src/data/prisma';
import type { ReportRepository } from '../../src/data/reports';
import { compose, type MarketIntelService } from '../../src/composition';

export { buildReport } from './factories';

/** Base URL of the test PostgreSQL server (the database name is added per suite). */

/** A running market-intel on a fresh database, paid through a fresh local ledger. */
export interface Harness {
  baseUrl: string;
  /** Origin of the metrics listener (`/metrics`), apart from the public port as in production. */
  metricsUrl: string;
  /** The wired service (jobs, outbox, broker, health monitor...). */
  service: MarketIntelService;
  config: MarketIntelConfig;
  /** The environment `config` was loaded from (to start a variant of the service). */
  env: Record<string, string>;
  /** AMQP URL of this suite's own RabbitMQ vhost (through {@link Harness.brokerProxy} when there is one). */
  amqpUrl: string;
  vhost: string;
  /**
   * With `proxyBroker`: the TCP proxy every connection to RabbitMQ goes through, so a test can cut the
   * broker away (`cut()`, `restore()`) without touching another suite's or another run's connections.
   */
  brokerProxy: TcpProxy | null;
  db: Db;
  reports: ReportRepository;
  ledger: Localnet;
  agent: Keypair;
  rpcUrls: Record<X402Network, string>;
  /** Every payment event the gateway emitted, oldest first (clear it with `events.length = 0`). */
  events: PaymentEvent[];
  /** GET `path` paying whatever the 402 asks with the agent wallet. */
  pay(pathAndQuery: string): Promise<FetchWithPaymentResult>;
  /** GET `path` with an X-PAYMENT header for `signature` (base64 JSON). */
  getWithProof(pathAndQuery: string, signature: string, network?: X402Network): Promise<Response>;
  /** POSTs JSON to `path` with an X-PAYMENT header for `signature`. */
  postWithProof(
    pathAndQuery: string,
    body: unknown,
    signature: string,
    network?: X402Network,
  ): Promise<Response>;
  /** Sends a USDC `transferChecked` from the agent (amount in atomic units). */
  transfer(args: {
    amountAtomic: bigint;
    network?: X402Network;
    mint?: string;
    to?: string;
    skipPreflight?: boolean;
  }): Promise<string>;
  /** Number of rows in `x402_payments` for a signature. */
  paymentRows(signature: string): Promise<{ status: string; endpoint: string }[]>;
  close(): Promise<void>;
}

/** A replica of market-intel started by {@link startReplica}. */
export interface Replica {
  service: MarketIntelService;
  baseUrl: string;
  /** Origin of its metrics port. */
  metricsUrl: string;
  /** Runs the production shutdown steps (readiness off, HTTP drained, loops stopped, clients closed). */
  close(): Promise<void>;
}

/**
 * Starts one replica as production runs it (`startService` with the composition root: the consumers,
 * then the HTTP and metrics ports on free ports, then the loops) from `config`, and waits until it is
 * connected to RabbitMQ.
 * @param onPaymentEvent told of every payment event of the replica's gateway
 */
export async function startReplica(
  config: MarketIntelConfig,
  onPaymentEvent?: (event: PaymentEvent) => void,
): Promise<Replica> {
  let composed: MarketIntelService | undefined;
  const running = await startService({
    name: 'market-intel',
    loadConfig: () => ({
      ...config,
      HOST: '127.0.0.1',
      PORT: 0,
      METRICS_PORT: 0,
      SHUTDOWN_DRAIN_DELAY_MS: 0,
    }),
    compose: async (context) =>
      (composed = await compose(context.config, context.logger, onPaymentEvent ? { onPaymentEvent } : {})),
    bufferedLogs: false,
  });
  if (!composed) throw new Error('startService did not compose the service');
  const service = composed;
  await service.broker.waitForConnection(30_000);
  return {
    service,
    baseUrl: `http://127.0.0.1:${running.port}`,
    metricsUrl: `http://127.0.0.1:${running.metricsPort ?? 0}`,
    async close() {
      for (const step of running.shutdownSteps) await step.run();
    },
  };
}

/**
 * Starts the whole service as production runs it ({@link startReplica}: config from an environment,
 * Prisma, the x402 gateway, the consumers, the app, the loops) against a dropped-and-migrated database and a fresh vhost
 * named `dbName` for this run (`runScoped`), paid through a fresh local ledger or `options.ledger`.
 * @param options.ledger a ledger the caller started and closes (several harnesses of one file paying
 *   through one ledger, each payment its own transaction); default a new one, closed with the harness
 */
export async function startHarness(
  dbName: string,
  options: {
    freshnessSeconds?: number;
    env?: Record<string, string>;
    proxyBroker?: boolean;
    ledger?: Localnet;
  } = {},
): Promise<Harness> {
  const databaseUrl = testDatabaseUrl(dbName);
  const vhost = runScoped(dbName);
  // The database, the vhost and the ledger do not depend on one another: prepared side by side.
  const [directAmqpUrl, ledger] = await Promise.all([
    resetVhost(vhost),
    options.ledger ?? spawnLocalnet(),
    resetDatabase(databaseUrl).then(() =>
      applyMigrations({
        databaseUrl,
        migrationsDir: path.join(__dirname, '../../prisma/migrations'),
        log: { info: () => undefined, warn: () => undefined },
      }),
    ),
  ]);
  const proxied = options.proxyBroker ? await TcpProxy.forUrl(directAmqpUrl, 5672) : null;
  const amqpUrl = proxied?.url ?? directAmqpUrl;
  const env: Record<string, string> = {
    DATABASE_URL: databaseUrl,
    SOLANA_RPC_URL: ledger.networks.solana.rpcUrl,
    USDC_MINT: ledger.networks.solana.mint,
    MERCHANT_TOKEN_ACCOUNT: ledger.networks.solana.merchantTokenAccount,
    SOLANA_DEVNET_RPC_URL: ledger.networks['solana-devnet'].rpcUrl,
    USDC_MINT_DEVNET: ledger.networks['solana-devnet'].mint,
    MERCHANT_TOKEN_ACCOUNT_DEVNET: ledger.networks['solana-devnet'].merchantTokenAccount,
    // Both offers in every 402, as the dev stack runs: the official exact scheme is settled by the
    // ledger's fee payer.
    X402_FEE_PAYER_KEYPAIR: ledger.feePayer.keypairPath,
    MERCHANT_WALLET: ledger.networks.solana.merchantOwner,
    MERCHANT_WALLET_DEVNET: ledger.networks['solana-devnet'].merchantOwner,
    // Failed paid jobs are refunded from the ledger's refund wallet, as the dev stack runs.
    X402_REFUND_KEYPAIR: ledger.refundWallet.keypairPath,
    PAYMENT_FRESHNESS_SECONDS: String(options.freshnessSeconds ?? 600),
    DATABASE_POOL_SIZE: '20',
    AMQP_URL: amqpUrl,
    OUTBOX_SWEEP_INTERVAL_MS: '200',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    INSTANCE_ID: `test-${process.pid}`,
    ...options.env,
  };
  const config = loadConfig(env);
  const events: PaymentEvent[] = [];
  const replica = await startReplica(config, (e) => events.push(e));
  const { service, baseUrl } = replica;
  const { db, reports } = service;
  const rpcUrls = {
    solana: ledger.networks.solana.rpcUrl,
    'solana-devnet': ledger.networks['solana-devnet'].rpcUrl,
  };
  const agent = ledger.agent.keypair;

  return {
    baseUrl,
    metricsUrl: replica.metricsUrl,
    service,
    config,
    env,
    amqpUrl,
    vhost,
    brokerProxy: proxied?.proxy ?? null,
    db,
    reports,
    ledger,
    agent,
    rpcUrls,
    events,
    pay: (p) => fetchWithPayment(baseUrl + p, { keypair: agent, rpcUrls }),
    getWithProof: (p, signature, network = 'solana') =>
      fetch(baseUrl + p, { headers: { 'X-PAYMENT': encodePaymentHeader(network, signature) } }),
    postWithProof: (p, body, signature, network = 'solana') =>
      fetch(baseUrl + p, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'X-PAYMENT': encodePaymentHeader(network, signature) },
        body: JSON.stringify(body),
      }),
    transfer: ({ amountAtomic, network = 'solana', mint, to, skipPreflight }) =>
      sendUsdcTransfer({
        rpcUrl: rpcUrls[network],
        payer: agent,
        mint: mint ?? ledger.networks[network].mint,
        destinationTokenAccount: to ?? ledger.networks[network].merchantTokenAccount,
        amountAtomic,
        skipPreflight,
        computeUnitPriceMicroLamports: randomInt(1, 2 ** 20),
      }),
    paymentRows: (signature) =>
      db.$queryRawUnsafe<{ status: string; endpoint: string }[]>(
        'SELECT status, endpoint FROM x402_payments WHERE signature = $1',
        signature,
      ),
    async close() {
      await replica.close();
      if (!options.ledger) await ledger.close();
      await proxied?.proxy.close();
    },
  };
}
