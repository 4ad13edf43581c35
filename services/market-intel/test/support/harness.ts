import { randomInt } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import type { Keypair } from '@solana/web3.js';
import { applyMigrations, resetDatabase } from '@repo/db-migrate';
import type { X402Network } from '@repo/schemas';
import { createLogger, closeServer } from '@repo/service-kit';
import { sendUsdcTransfer, spawnLocalnet, type Localnet } from '@repo/solana-localnet';
import { encodePaymentHeader, fetchWithPayment, type FetchWithPaymentResult, type PaymentEvent } from '@repo/x402';
import { createApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import { createDb, type Db } from '../../src/data/prisma';
import { ReportRepository } from '../../src/data/reports';
import { unconfiguredHealth } from '../../src/domain/health';
import { createPaymentGateway, paymentGate } from '../../src/payments';

export { buildReport } from './factories';

/** Base URL of the test PostgreSQL server (the database name is added per suite). */
const PG_BASE = process.env.TEST_DATABASE_BASE_URL ?? 'postgresql://postgres@127.0.0.1:5432';

/** A running market-intel on a fresh database, paid through a fresh local ledger. */
export interface Harness {
  baseUrl: string;
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
  /** Sends a USDC `transferChecked` from the agent (amount in atomic units). */
  transfer(args: { amountAtomic: bigint; network?: X402Network; mint?: string; to?: string; skipPreflight?: boolean }): Promise<string>;
  /** Number of rows in `x402_payments` for a signature. */
  paymentRows(signature: string): Promise<{ status: string; endpoint: string }[]>;
  close(): Promise<void>;
}

/**
 * Starts the whole service as production wires it (config from an environment, Prisma, the x402
 * gateway, createApp, an HTTP listener) against a dropped-and-migrated database named `dbName`.
 */
export async function startHarness(dbName: string, options: { freshnessSeconds?: number } = {}): Promise<Harness> {
  const databaseUrl = `${PG_BASE}/${dbName}`;
  await resetDatabase(databaseUrl);
  await applyMigrations({ databaseUrl, migrationsDir: path.join(__dirname, '../../prisma/migrations'), log: { info: () => undefined, warn: () => undefined } });
  const ledger = await spawnLocalnet();
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    SOLANA_RPC_URL: ledger.networks.solana.rpcUrl,
    USDC_MINT: ledger.networks.solana.mint,
    MERCHANT_TOKEN_ACCOUNT: ledger.networks.solana.merchantTokenAccount,
    SOLANA_DEVNET_RPC_URL: ledger.networks['solana-devnet'].rpcUrl,
    USDC_MINT_DEVNET: ledger.networks['solana-devnet'].mint,
    MERCHANT_TOKEN_ACCOUNT_DEVNET: ledger.networks['solana-devnet'].merchantTokenAccount,
    PAYMENT_FRESHNESS_SECONDS: String(options.freshnessSeconds ?? 600),
    LOG_LEVEL: 'silent',
  });
  const db = createDb(config.DATABASE_URL, 20);
  const reports = new ReportRepository(db);
  const logger = createLogger({ name: 'market-intel-test', level: 'silent' });
  const events: PaymentEvent[] = [];
  const payments = createPaymentGateway(config, db);
  const app = createApp({
    logger,
    reports,
    pay: paymentGate({ ...payments, onPaymentEvent: (e) => events.push(e) }, config.PAYMENT_MAX_TIMEOUT_SECONDS),
    health: unconfiguredHealth(),
  });
  const server: Server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  const baseUrl = `http://127.0.0.1:${address.port}`;
  const rpcUrls = { solana: ledger.networks.solana.rpcUrl, 'solana-devnet': ledger.networks['solana-devnet'].rpcUrl };
  const agent = ledger.agent.keypair;

  return {
    baseUrl,
    db,
    reports,
    ledger,
    agent,
    rpcUrls,
    events,
    pay: (p) => fetchWithPayment(baseUrl + p, { keypair: agent, rpcUrls }),
    getWithProof: (p, signature, network = 'solana') =>
      fetch(baseUrl + p, { headers: { 'X-PAYMENT': encodePaymentHeader(network, signature) } }),
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
      await closeServer(server);
      await payments.close();
      await db.$disconnect();
      await ledger.close();
    },
  };
}
