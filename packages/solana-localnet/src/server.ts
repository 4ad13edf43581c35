import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { Keypair, PublicKey } from '@solana/web3.js';
import { loadOrCreateKeypair, writeKeypairFile } from './keys';
import {
  CAIP2_NETWORK,
  DEFAULT_FUND_LAMPORTS,
  DEFAULT_FUND_USDC_ATOMIC,
  LOCALNET_NETWORKS,
  NetworkLedger,
  type LocalnetNetwork,
  type NetworkKeys,
} from './ledger';
import { callMethod, type RpcContext } from './rpc';
import { RpcError, RpcErrorCode } from './rpc-error';
import { RawJson } from './tx-json';

/** Options of {@link startLocalnet}. */
export interface LocalnetOptions {
  /** Interface to listen on. Default `127.0.0.1`. */
  host?: string;
  /** TCP port; 0 picks a free one. Default 8899. */
  port?: number;
  /**
   * Directory for keypairs, journals and `addresses.json`; state survives restarts. Omitted: state is
   * in memory and the agent and fee payer keypair files go to a fresh temp directory.
   */
  dataDir?: string;
  /** Test USDC (atomic units, 6 decimals) given to the agent on each network at first start. Default 1000 USDC. */
  agentUsdcAtomic?: bigint;
  /** Receives one human-readable line per notable event (startup, internal errors). Default: silent. */
  log?: (line: string) => void;
}

/** Where one network is served and its well-known accounts (base58 addresses). */
export interface LocalnetNetworkInfo {
  network: LocalnetNetwork;
  /** The x402 v2 network id (CAIP-2), e.g. `solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1` for `solana-devnet`. */
  caip2Network: string;
  /** JSON-RPC endpoint of this network: `url` for `solana`, `url + '/devnet'` for `solana-devnet`. */
  rpcUrl: string;
  /** The 6-decimal test USDC mint. */
  mint: string;
  /** The merchant wallet that owns {@link merchantTokenAccount}. */
  merchantOwner: string;
  /** The merchant's associated token account for {@link mint}: the x402 `payTo`. */
  merchantTokenAccount: string;
}

/** A running local ledger. */
export interface Localnet {
  /** Base URL, `http://127.0.0.1:PORT` (no trailing slash). */
  url: string;
  networks: Record<LocalnetNetwork, LocalnetNetworkInfo>;
  /** The demo agent wallet, funded with SOL and test USDC on both networks; `keypairPath` is a Solana CLI keypair file. */
  agent: { publicKey: string; keypairPath: string; keypair: Keypair };
  /**
   * The x402 fee payer (`extra.feePayer`; its keypair file is what `X402_FEE_PAYER_KEYPAIR` names): one
   * keypair for both networks, holding SOL only (100 SOL at start on each network), never a token
   * account. `keypairPath` is a Solana CLI keypair file.
   */
  feePayer: { publicKey: string; keypairPath: string; keypair: Keypair };
  /**
   * The refund wallet (what market-intel's `X402_REFUND_KEYPAIR` names): one keypair for both
   * networks, funded at start with 10 SOL and 100 000 test USDC on each, from which failed paid jobs
   * are refunded. `keypairPath` is a Solana CLI keypair file.
   */
  refundWallet: { publicKey: string; keypairPath: string; keypair: Keypair };
  /**
   * Airdrops `lamports` (default 10 SOL) to `owner`, creates its associated token account for the test
   * mint if missing and mints `usdcAtomic` (atomic units, default 1000 USDC) to it, on `network`
   * (default `'all'`).
   * @throws Error when `owner` is not a base58 public key; RpcError when the funding transaction fails
   */
  fund(
    owner: string,
    opts?: { network?: LocalnetNetwork | 'all'; usdcAtomic?: bigint; lamports?: number },
  ): Promise<void>;
  /** Stops the server (dropping open connections) and flushes and closes the journals. */
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 10 * 1024 * 1024;
const NETWORK_PATH: Record<LocalnetNetwork, string> = { solana: '', 'solana-devnet': '/devnet' };

/**
 * The JSON-RPC URL of `network` on a ledger whose base URL is `baseUrl`:
 * `baseUrl` itself for `solana`, `baseUrl + '/devnet'` for `solana-devnet` (trailing slashes ignored).
 */
export function rpcUrlFor(baseUrl: string, network: LocalnetNetwork): string {
  return `${baseUrl.replace(/\/+$/, '')}${NETWORK_PATH[network]}`;
}

/**
 * The readable block of addresses the CLI prints at start and for `info`. The CAIP-2 id and the fee
 * payer are printed when given (a ledger older than them reports neither).
 */
export function formatLocalnetAddresses(localnet: {
  url: string;
  networks: Record<LocalnetNetwork, Omit<LocalnetNetworkInfo, 'caip2Network'> & { caip2Network?: string }>;
  agent: { publicKey: string; keypairPath: string };
  feePayer?: { publicKey: string; keypairPath: string };
  refundWallet?: { publicKey: string; keypairPath: string };
}): string {
  const row = (label: string, value: string): string => `    ${label.padEnd(26)} ${value}`;
  const lines = [`Solana localnet (LiteSVM) listening on ${localnet.url}`];
  for (const network of LOCALNET_NETWORKS) {
    const info = localnet.networks[network];
    lines.push('', `  ${network}`);
    if (info.caip2Network !== undefined) lines.push(row('x402 v2 network (CAIP-2)', info.caip2Network));
    lines.push(
      row('rpcUrl', info.rpcUrl),
      row('usdc mint', info.mint),
      row('merchant owner (v2 payTo)', info.merchantOwner),
      row('merchant token (v1 payTo)', info.merchantTokenAccount),
    );
  }
  const wallet = (title: string, keys: { publicKey: string; keypairPath: string }): string[] => [
    '',
    `  ${title}`,
    row('public key', keys.publicKey),
    row('keypair file', keys.keypairPath),
  ];
  lines.push(...wallet('agent', localnet.agent));
  if (localnet.feePayer !== undefined) {
    lines.push(
      ...wallet('x402 fee payer (SOL only, both networks; X402_FEE_PAYER_KEYPAIR)', localnet.feePayer),
    );
  }
  if (localnet.refundWallet !== undefined) {
    lines.push(
      ...wallet(
        'refund wallet (SOL and test USDC, both networks; X402_REFUND_KEYPAIR)',
        localnet.refundWallet,
      ),
    );
  }
  return lines.join('\n');
}

function networkKeys(dataDir: string | undefined, network: LocalnetNetwork): NetworkKeys {
  if (dataDir === undefined) {
    return {
      faucet: Keypair.generate(),
      mint: Keypair.generate(),
      mintAuthority: Keypair.generate(),
      merchant: Keypair.generate(),
    };
  }
  const dir = path.join(dataDir, 'keys', network);
  return {
    faucet: loadOrCreateKeypair(path.join(dir, 'faucet.json')),
    mint: loadOrCreateKeypair(path.join(dir, 'mint.json')),
    mintAuthority: loadOrCreateKeypair(path.join(dir, 'mint-authority.json')),
    merchant: loadOrCreateKeypair(path.join(dir, 'merchant.json')),
  };
}

type JsonRpcError = { jsonrpc: '2.0'; id: unknown; error: { code: number; message: string; data?: unknown } };

function errorResponse(id: unknown, error: RpcError): JsonRpcError {
  return {
    jsonrpc: '2.0',
    id,
    error: {
      code: error.code,
      message: error.message,
      ...(error.data !== undefined ? { data: error.data } : {}),
    },
  };
}

/**
 * One JSON-RPC answer, serialised. Written by hand so a cached {@link RawJson} result is spliced in
 * rather than parsed and re-stringified; the text is what `JSON.stringify({ jsonrpc, id, result })`
 * gives (a result of `undefined` is left out, as it would be).
 */
function answerOne(ctx: RpcContext, request: unknown, log: (line: string) => void): string {
  if (typeof request !== 'object' || request === null || Array.isArray(request)) {
    return JSON.stringify(errorResponse(null, new RpcError(RpcErrorCode.invalidRequest, 'Invalid request')));
  }
  const { jsonrpc, method, params, id } = request as Record<string, unknown>;
  if (jsonrpc !== '2.0' || typeof method !== 'string') {
    return JSON.stringify(
      errorResponse(id ?? null, new RpcError(RpcErrorCode.invalidRequest, 'Invalid request')),
    );
  }
  try {
    const result = callMethod(ctx, method, params);
    const head = `{"jsonrpc":"2.0","id":${JSON.stringify(id ?? null)}`;
    if (result instanceof RawJson) return `${head},"result":${result.json}}`;
    const json = JSON.stringify(result) as string | undefined;
    return json === undefined ? `${head}}` : `${head},"result":${json}}`;
  } catch (error) {
    if (error instanceof RpcError) return JSON.stringify(errorResponse(id ?? null, error));
    log(`internal error in ${method}: ${(error as Error).stack ?? String(error)}`);
    return JSON.stringify(
      errorResponse(id ?? null, new RpcError(RpcErrorCode.internalError, 'Internal error')),
    );
  }
}

function routeNetwork(pathname: string): { network: LocalnetNetwork; health: boolean } | null {
  const trimmed = pathname.replace(/\/+$/, '');
  if (trimmed === '') return { network: 'solana', health: false };
  if (trimmed === '/health') return { network: 'solana', health: true };
  if (trimmed === '/devnet') return { network: 'solana-devnet', health: false };
  if (trimmed === '/devnet/health') return { network: 'solana-devnet', health: true };
  return null;
}

/**
 * Starts the ledger: one LiteSVM chain per network (`solana` at `/`, `solana-devnet` at `/devnet`),
 * each with a 6-decimal test USDC mint, the merchant's token account, the funded agent wallet, the
 * x402 fee payer (SOL only) and the refund wallet (SOL and test USDC),
 * served as Solana JSON-RPC 2.0 over HTTP POST (batches supported; `GET /health` answers `ok`).
 * With `dataDir`, replays the journals first so addresses, balances and transactions survive restarts,
 * and writes `<dataDir>/addresses.json`.
 * @throws Error when the port cannot be bound (e.g. EADDRINUSE) or the data directory is unusable
 */
export async function startLocalnet(options: LocalnetOptions = {}): Promise<Localnet> {
  const host = options.host ?? '127.0.0.1';
  const port = options.port ?? 8899;
  const log = options.log ?? (() => undefined);
  const agentUsdcAtomic = options.agentUsdcAtomic ?? DEFAULT_FUND_USDC_ATOMIC;
  const dataDir = options.dataDir === undefined ? undefined : path.resolve(options.dataDir);

  let agent: Keypair;
  let keypairPath: string;
  let feePayer: Keypair;
  let feePayerKeypairPath: string;
  let refundWallet: Keypair;
  let refundKeypairPath: string;
  if (dataDir === undefined) {
    const keysDir = fs.mkdtempSync(path.join(os.tmpdir(), 'solana-localnet-'));
    agent = Keypair.generate();
    keypairPath = path.join(keysDir, 'agent.json');
    writeKeypairFile(keypairPath, agent);
    feePayer = Keypair.generate();
    feePayerKeypairPath = path.join(keysDir, 'fee-payer.json');
    writeKeypairFile(feePayerKeypairPath, feePayer);
    refundWallet = Keypair.generate();
    refundKeypairPath = path.join(keysDir, 'refund.json');
    writeKeypairFile(refundKeypairPath, refundWallet);
  } else {
    fs.mkdirSync(dataDir, { recursive: true });
    keypairPath = path.join(dataDir, 'keys', 'agent.json');
    agent = loadOrCreateKeypair(keypairPath);
    feePayerKeypairPath = path.join(dataDir, 'keys', 'fee-payer.json');
    feePayer = loadOrCreateKeypair(feePayerKeypairPath);
    refundKeypairPath = path.join(dataDir, 'keys', 'refund.json');
    refundWallet = loadOrCreateKeypair(refundKeypairPath);
  }

  const ledgers = {} as Record<LocalnetNetwork, NetworkLedger>;
  for (const network of LOCALNET_NETWORKS) {
    const journal = dataDir === undefined ? undefined : path.join(dataDir, network, 'journal.jsonl');
    const ledger = new NetworkLedger(network, networkKeys(dataDir, network), journal);
    ledger.setup({
      agent: agent.publicKey,
      agentUsdcAtomic,
      feePayer: feePayer.publicKey,
      refundWallet: refundWallet.publicKey,
    });
    ledgers[network] = ledger;
  }

  const contexts = {} as Record<LocalnetNetwork, RpcContext>;
  const server = http.createServer((req, res) => {
    const route = routeNetwork((req.url ?? '/').split('?')[0] ?? '/');
    if (route === null) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found');
      return;
    }
    if (route.health) {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      return;
    }
    if (req.method !== 'POST') {
      res.writeHead(405, { 'content-type': 'text/plain', allow: 'POST' }).end('Use JSON-RPC 2.0 over POST');
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        res.writeHead(413, { 'content-type': 'text/plain' }).end('Payload too large');
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (res.headersSent) return;
      const ctx = contexts[route.network];
      let body: unknown;
      let payload: string | undefined;
      try {
        body = JSON.parse(
          chunks.length === 1
            ? (chunks[0] as Buffer).toString('utf8')
            : Buffer.concat(chunks).toString('utf8'),
        );
      } catch {
        payload = JSON.stringify(errorResponse(null, new RpcError(RpcErrorCode.parseError, 'Parse error')));
      }
      if (payload === undefined) {
        if (Array.isArray(body)) {
          payload =
            body.length === 0
              ? JSON.stringify(
                  errorResponse(null, new RpcError(RpcErrorCode.invalidRequest, 'Invalid request')),
                )
              : `[${body.map((request) => answerOne(ctx, request, log)).join(',')}]`;
        } else {
          payload = answerOne(ctx, body, log);
        }
      }
      // An explicit length sends head and body in one write, without chunked framing.
      res
        .writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) })
        .end(payload);
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const urlHost = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${urlHost}:${address.port}`;

  const networks = {} as Record<LocalnetNetwork, LocalnetNetworkInfo>;
  for (const network of LOCALNET_NETWORKS) {
    const ledger = ledgers[network];
    const rpcUrl = rpcUrlFor(url, network);
    contexts[network] = {
      ledger,
      agent: agent.publicKey,
      agentKeypairPath: keypairPath,
      feePayer: feePayer.publicKey,
      feePayerKeypairPath,
      refundWallet: refundWallet.publicKey,
      refundKeypairPath,
      rpcUrl,
    };
    networks[network] = {
      network,
      caip2Network: CAIP2_NETWORK[network],
      rpcUrl,
      mint: ledger.mint.toBase58(),
      merchantOwner: ledger.merchantOwner.toBase58(),
      merchantTokenAccount: ledger.merchantTokenAccount.toBase58(),
    };
  }

  if (dataDir !== undefined) {
    const addresses = {
      rpcUrl: url,
      networks: Object.fromEntries(
        LOCALNET_NETWORKS.map((n) => {
          const { caip2Network, rpcUrl, mint, merchantOwner, merchantTokenAccount } = networks[n];
          return [n, { caip2Network, rpcUrl, mint, merchantOwner, merchantTokenAccount }];
        }),
      ),
      agent: { publicKey: agent.publicKey.toBase58(), keypairPath },
      feePayer: { publicKey: feePayer.publicKey.toBase58(), keypairPath: feePayerKeypairPath },
      refundWallet: { publicKey: refundWallet.publicKey.toBase58(), keypairPath: refundKeypairPath },
    };
    fs.writeFileSync(path.join(dataDir, 'addresses.json'), `${JSON.stringify(addresses, null, 2)}\n`);
  }
  log(`listening on ${url} (solana at /, solana-devnet at /devnet)${dataDir ? `, data in ${dataDir}` : ''}`);

  let closed = false;
  return {
    url,
    networks,
    agent: { publicKey: agent.publicKey.toBase58(), keypairPath, keypair: agent },
    feePayer: {
      publicKey: feePayer.publicKey.toBase58(),
      keypairPath: feePayerKeypairPath,
      keypair: feePayer,
    },
    refundWallet: {
      publicKey: refundWallet.publicKey.toBase58(),
      keypairPath: refundKeypairPath,
      keypair: refundWallet,
    },
    async fund(owner, opts = {}) {
      const key = new PublicKey(owner);
      const targets =
        opts.network === undefined || opts.network === 'all' ? LOCALNET_NETWORKS : [opts.network];
      for (const network of targets) {
        ledgers[network].fund(
          key,
          opts.usdcAtomic ?? DEFAULT_FUND_USDC_ATOMIC,
          opts.lamports ?? DEFAULT_FUND_LAMPORTS,
        );
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      await new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
      for (const network of LOCALNET_NETWORKS) ledgers[network].close();
    },
  };
}
