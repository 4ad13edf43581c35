import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection, Keypair, PublicKey, type Transaction, type VersionedTransaction } from '@solana/web3.js';
import {
  createPayer,
  InsufficientFundsError,
  marketIntelClient,
  PaymentNotAllowedError,
  receiptOf,
  SpendLimitExceededError,
  waitForJob,
  type PaymentOffer,
  type PaymentReceipt,
  type SpendRecord,
  type SpendStore,
  type WalletAdapterSigner,
} from '../src/index';
import { startContractServer, type ContractServer } from './support/contract-server';

// Paying within limits against the contract server (x402 middleware, PostgreSQL ledger) and the local
// Solana ledger: every refusal is checked against the ledger's balances (nothing moved).
jest.setTimeout(60_000);

let server: ContractServer;
let connection: Connection;
const dir = mkdtempSync(join(tmpdir(), 'api-client-payments-'));

beforeAll(async () => {
  server = await startContractServer();
  connection = new Connection(server.localnet.networks.solana.rpcUrl, 'confirmed');
});
afterAll(() => server?.close());

/** A new wallet funded with 30 USDC and SOL on the local ledger, and its keypair file. */
async function wallet(): Promise<{ keypair: Keypair; file: string }> {
  const keypair = Keypair.generate();
  await server.localnet.fund(keypair.publicKey.toBase58(), { usdcAtomic: 30_000_000n });
  const file = join(dir, `${keypair.publicKey.toBase58()}.json`);
  writeFileSync(file, JSON.stringify([...keypair.secretKey]));
  return { keypair, file };
}

const TOKEN_PROGRAM = new PublicKey('TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA');
const ATA_PROGRAM = new PublicKey('ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL');

/** The associated token account of `owner` for `mint` (SPL Token). */
function tokenAccountOf(mint: PublicKey, owner: PublicKey): PublicKey {
  return PublicKey.findProgramAddressSync(
    [owner.toBuffer(), TOKEN_PROGRAM.toBuffer(), mint.toBuffer()],
    ATA_PROGRAM,
  )[0];
}

async function usdc(account: PublicKey): Promise<bigint> {
  return BigInt((await connection.getTokenAccountBalance(account)).value.amount);
}

async function balances(owner: Keypair): Promise<{ payer: bigint; merchant: bigint }> {
  const net = server.localnet.networks.solana;
  const mint = new PublicKey(net.mint);
  return {
    payer: await usdc(tokenAccountOf(mint, owner.publicKey)),
    merchant: await usdc(new PublicKey(net.merchantTokenAccount)),
  };
}

const rpcUrls = (): { solana: string } => ({ solana: server.localnet.networks.solana.rpcUrl });

describe('Paying within limits', () => {
  it('When a keypair file pays a data call, then the official scheme is used and the receipt names the signature, the amount in USDC and atomic units, the network, the payer and the request', async () => {
    const { keypair, file } = await wallet();
    const before = await balances(keypair);
    const seen: PaymentReceipt[] = [];
    const client = marketIntelClient(server.baseUrl, {
      signer: file,
      rpcUrls: rpcUrls(),
      onPayment: (r) => seen.push(r),
    });
    const { data, response } = await client.GET('/api/v1/scout/keywords', {
      params: { query: { limit: 5 } },
    });
    expect(data?.keywords).toEqual([{ keyword: 'x402', count: 3 }]);
    const receipt = receiptOf(response);
    expect(receipt).toEqual({
      scheme: 'official',
      network: 'solana',
      amountUsdc: '0.05',
      amountAtomic: '50000',
      asset: server.localnet.networks.solana.mint,
      payTo: server.localnet.networks.solana.merchantOwner,
      signature: expect.stringMatching(/^[1-9A-HJ-NP-Za-km-z]{64,88}$/),
      payer: keypair.publicKey.toBase58(),
      request: { method: 'GET', url: `${server.baseUrl}/api/v1/scout/keywords?limit=5` },
      paidAt: expect.any(String),
      paymentId: expect.stringMatching(/^pay_[0-9a-f]{32}$/),
      // The answer's signed receipt, checked (test/receipts.test.ts).
      evidence: expect.objectContaining({ status: 'verified' }),
    });
    expect(seen).toEqual([receipt]);
    const tx = await connection.getTransaction(receipt!.signature, {
      commitment: 'confirmed',
      maxSupportedTransactionVersion: 0,
    });
    expect(tx?.meta?.err).toBeNull();
    const after = await balances(keypair);
    expect(before.payer - after.payer).toBe(50_000n);
    expect(after.merchant - before.merchant).toBe(50_000n);
  });

  it('When the paid answer is lost on the way back, then the payer sends the same payment with its payment identifier again and is charged once', async () => {
    const { keypair, file } = await wallet();
    const before = await balances(keypair);
    const paidSends: string[] = [];
    const payer = createPayer({
      signer: file,
      rpcUrls: rpcUrls(),
      fetch: async (input, init) => {
        const request = new Request(input, init);
        const payment = request.headers.get('payment-signature');
        const response = await fetch(request);
        if (payment === null) return response;
        paidSends.push(payment);
        if (paidSends.length > 1) return response;
        // The server answered (and settled); the agent never hears it.
        await response.arrayBuffer();
        throw new TypeError('fetch failed', { cause: new Error('socket hang up') });
      },
    });
    const response = await payer.fetch(`${server.baseUrl}/api/v1/scout/keywords?limit=7`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ keywords: [{ keyword: 'x402', count: 3 }] });
    expect(paidSends).toHaveLength(2);
    expect(paidSends[1]).toBe(paidSends[0]);
    const sent = JSON.parse(Buffer.from(paidSends[0]!, 'base64').toString('utf8')) as {
      extensions: Record<string, { info: { id: string } }>;
    };
    const receipt = receiptOf(response)!;
    expect(sent.extensions['payment-identifier']?.info.id).toBe(receipt.paymentId);
    const after = await balances(keypair);
    expect(before.payer - after.payer).toBe(50_000n);
    expect(after.merchant - before.merchant).toBe(50_000n);
    expect(payer.receipts).toEqual([receipt]);
    expect(await payer.spent(3_600_000)).toBe(50_000n);
  });

  it('When paymentRetries is 0 and the paid answer is lost, then the network error reaches the caller and the payment still counts against the caps', async () => {
    const { keypair, file } = await wallet();
    const before = await balances(keypair);
    let paidSends = 0;
    const payer = createPayer({
      signer: file,
      rpcUrls: rpcUrls(),
      paymentRetries: 0,
      fetch: async (input, init) => {
        const request = new Request(input, init);
        const response = await fetch(request);
        if (!request.headers.has('payment-signature')) return response;
        paidSends += 1;
        await response.arrayBuffer();
        throw new TypeError('fetch failed');
      },
    });
    await expect(payer.fetch(`${server.baseUrl}/api/v1/scout/keywords?limit=8`)).rejects.toThrow(
      'fetch failed',
    );
    expect(paidSends).toBe(1);
    expect(await payer.spent(3_600_000)).toBe(50_000n);
    const after = await balances(keypair);
    expect(before.payer - after.payer).toBe(50_000n);
  });

  it('When the price is above the per-payment cap, then it is refused before anything is signed and no balance moves', async () => {
    const { keypair } = await wallet();
    const before = await balances(keypair);
    let signed = 0;
    const adapter: WalletAdapterSigner = {
      publicKey: keypair.publicKey,
      signTransaction: <T extends Transaction | VersionedTransaction>(tx: T): Promise<T> => {
        signed++;
        return Promise.resolve(tx);
      },
    };
    const payer = createPayer({ signer: adapter, rpcUrls: rpcUrls(), limits: { maxPerPayment: '0.10' } });
    const error = await payer.fetch(`${server.baseUrl}/api/v1/scout/brief`).catch((e: unknown) => e);
    expect(signed).toBe(0);
    expect(error).toBeInstanceOf(SpendLimitExceededError);
    expect(error).toMatchObject({
      code: 'spend_limit_exceeded',
      limit: 'per_payment',
      limitAtomic: 100_000n,
      offer: { amountUsdc: '0.2', scheme: 'official' },
    });
    expect(payer.receipts).toEqual([]);
    expect(await balances(keypair)).toEqual(before);
  });

  it('When the rolling hourly cap is reached, then the next payment is refused, and a payer sharing the store keeps the count', async () => {
    const { keypair } = await wallet();
    const before = await balances(keypair);
    const records: SpendRecord[] = [];
    const store: SpendStore = {
      since: (sinceMs) => records.filter((r) => r.at >= sinceMs),
      add: (record) => {
        records.push(record);
      },
    };
    const limits = { maxPerHour: '0.12', maxPerDay: '5', store };
    const payer = createPayer({ signer: keypair, rpcUrls: rpcUrls(), limits });
    const url = `${server.baseUrl}/api/v1/scout/keywords`;
    expect((await payer.fetch(url)).status).toBe(200);
    expect((await payer.fetch(url)).status).toBe(200);
    const third = await payer.fetch(url).catch((e: unknown) => e);
    expect(third).toMatchObject({ code: 'spend_limit_exceeded', limit: 'per_hour', spentAtomic: 100_000n });
    expect(records.map((r) => r.amountAtomic)).toEqual(['50000', '50000']);
    expect(await payer.spent(3_600_000)).toBe(100_000n);

    const restarted = createPayer({ signer: keypair, rpcUrls: rpcUrls(), limits });
    await expect(restarted.fetch(url)).rejects.toMatchObject({ limit: 'per_hour' });
    const after = await balances(keypair);
    expect(before.payer - after.payer).toBe(100_000n);
  });

  it('When two payments race for the last room under a cap, then exactly one is paid', async () => {
    const { keypair } = await wallet();
    const before = await balances(keypair);
    const payer = createPayer({ signer: keypair, rpcUrls: rpcUrls(), limits: { maxPerHour: '0.05' } });
    const url = `${server.baseUrl}/api/v1/scout/keywords`;
    const results = await Promise.allSettled([payer.fetch(url), payer.fetch(url)]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(before.payer - (await balances(keypair)).payer).toBe(50_000n);
  });

  it('When the host or the recipient is not allowed, then it is refused before anything is signed; an allowed recipient is paid', async () => {
    const { keypair } = await wallet();
    const before = await balances(keypair);
    const url = `${server.baseUrl}/api/v1/scout/keywords`;
    const host = createPayer({
      signer: keypair,
      rpcUrls: rpcUrls(),
      limits: { allowHosts: ['api.example.com'] },
    });
    await expect(host.fetch(url)).rejects.toMatchObject({ code: 'payment_not_allowed', rule: 'host' });
    const payTo = createPayer({
      signer: keypair,
      rpcUrls: rpcUrls(),
      limits: { allowPayTo: [Keypair.generate().publicKey.toBase58()] },
    });
    const refused = await payTo.fetch(url).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PaymentNotAllowedError);
    expect(refused).toMatchObject({ rule: 'pay_to' });
    expect(await balances(keypair)).toEqual(before);

    const allowed = createPayer({
      signer: keypair,
      rpcUrls: rpcUrls(),
      limits: {
        allowHosts: [new URL(server.baseUrl).host],
        allowPayTo: [server.localnet.networks.solana.merchantOwner],
      },
    });
    expect((await allowed.fetch(url)).status).toBe(200);
  });

  it('When the asset is not in allowAssets, then it is refused before anything is signed', async () => {
    const { keypair } = await wallet();
    const before = await balances(keypair);
    const payer = createPayer({
      signer: keypair,
      rpcUrls: rpcUrls(),
      limits: { allowAssets: ['EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v'] },
    });
    await expect(payer.fetch(`${server.baseUrl}/api/v1/scout/keywords`)).rejects.toMatchObject({
      code: 'payment_not_allowed',
      rule: 'asset',
    });
    expect(await balances(keypair)).toEqual(before);
  });

  it('When a server takes an official payment without reporting its settlement, then it still counts against the caps', async () => {
    const { keypair } = await wallet();
    const before = await balances(keypair);
    // A hostile front: forwards to the server and drops the settlement headers of its answers.
    const proxy = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const headers = Object.fromEntries(
          Object.entries(req.headers).filter(([k, v]) => k !== 'host' && typeof v === 'string'),
        ) as Record<string, string>;
        fetch(`${server.baseUrl}${req.url}`, {
          method: req.method,
          headers,
          ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
        }).then(
          async (answer) => {
            const out: Record<string, string> = {};
            answer.headers.forEach((v, k) => {
              if (!/payment-response|content-length|content-encoding|transfer-encoding/.test(k)) out[k] = v;
            });
            res.writeHead(answer.status, out);
            res.end(Buffer.from(await answer.arrayBuffer()));
          },
          () => res.destroy(),
        );
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      const payer = createPayer({ signer: keypair, rpcUrls: rpcUrls(), limits: { maxPerHour: '0.05' } });
      const response = await payer.fetch(`${proxyUrl}/api/v1/scout/keywords`);
      expect(response.status).toBe(200);
      expect(receiptOf(response)).toBeUndefined();
      expect(before.payer - (await balances(keypair)).payer).toBe(50_000n);
      expect(await payer.spent(3_600_000)).toBe(50_000n);
      await expect(payer.fetch(`${proxyUrl}/api/v1/scout/keywords`)).rejects.toMatchObject({
        limit: 'per_hour',
      });
      expect(before.payer - (await balances(keypair)).payer).toBe(50_000n);
    } finally {
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it('When dry-run is on, then the 402 comes back with the offer and nothing is paid; quote tells the same offer', async () => {
    const { keypair } = await wallet();
    const before = await balances(keypair);
    const offers: PaymentOffer[] = [];
    const client = marketIntelClient(server.baseUrl, {
      signer: keypair,
      rpcUrls: rpcUrls(),
      dryRun: true,
      onOffer: (o) => offers.push(o),
    });
    const { error, response } = await client.GET('/api/v1/scout/keywords');
    expect(response.status).toBe(402);
    expect(error).toMatchObject({ x402Version: 1 });
    expect(offers).toEqual([
      {
        scheme: 'official',
        network: 'solana',
        amountUsdc: '0.05',
        amountAtomic: '50000',
        asset: server.localnet.networks.solana.mint,
        payTo: server.localnet.networks.solana.merchantOwner,
        request: { method: 'GET', url: `${server.baseUrl}/api/v1/scout/keywords` },
      },
    ]);
    const payer = createPayer({ signer: keypair, rpcUrls: rpcUrls() });
    expect(await payer.quote(`${server.baseUrl}/api/v1/scout/keywords`)).toEqual(offers[0]);
    expect(await payer.quote(`${server.baseUrl}/api/v1/sectors`)).toBeUndefined();
    expect(await balances(keypair)).toEqual(before);
  });

  it('When the wallet holds less than the price, then InsufficientFundsError says so before anything is signed', async () => {
    const keypair = Keypair.generate();
    await server.localnet.fund(keypair.publicKey.toBase58(), { usdcAtomic: 10_000n });
    const payer = createPayer({ signer: keypair, rpcUrls: rpcUrls() });
    const error = await payer.fetch(`${server.baseUrl}/api/v1/scout/keywords`).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InsufficientFundsError);
    expect(error).toMatchObject({ kind: 'token_balance', required: 50_000n, available: 10_000n });
    expect(await payer.spent(3_600_000)).toBe(0n);
  });

  it('When a debate is started (25 USDC under a raised cap) and waited for, then the progress is heard and the verdict returned', async () => {
    const { keypair } = await wallet();
    const before = await balances(keypair);
    const market = marketIntelClient(server.baseUrl, {
      signer: keypair,
      rpcUrls: rpcUrls(),
      limits: { maxPerPayment: '25', maxPerDay: '30' },
    });
    const { data, response } = await market.POST('/api/v1/prove/debate', {
      body: { idea: 'A reconciliation copilot for mid-size fintechs, sold per seat.' },
    });
    expect(response.status).toBe(202);
    expect(receiptOf(response)).toMatchObject({ amountUsdc: '25', amountAtomic: '25000000' });
    const jobId = data!.jobId;
    const seen: number[] = [];
    const waiting = waitForJob(jobId, {
      baseUrl: server.baseUrl,
      initialDelayMs: 5,
      maxDelayMs: 20,
      onProgress: ({ progressPct }) => {
        seen.push(progressPct);
        const job = server.jobs.get(jobId)!;
        // The runner's part, played by the test: each read moves the debate on.
        server.jobs.set(
          jobId,
          progressPct < 50
            ? { ...job, status: 'running', progressPct: progressPct + 50 }
            : { ...job, status: 'completed', progressPct: 100, result: { verdict: 'CONDITIONAL_APPROVED' } },
        );
      },
    });
    const outcome = await waiting;
    expect(outcome).toMatchObject({ status: 'completed', result: { verdict: 'CONDITIONAL_APPROVED' } });
    expect(seen).toEqual([0, 50, 100]);
    expect(before.payer - (await balances(keypair)).payer).toBe(25_000_000n);
  });

  it('When push mode is asked, then the agent sends the transfer to the token account and the receipt says push', async () => {
    const { keypair } = await wallet();
    const before = await balances(keypair);
    const payer = createPayer({ signer: keypair, rpcUrls: rpcUrls(), mode: 'push' });
    const response = await payer.fetch(`${server.baseUrl}/api/v1/scout/keywords`);
    expect(response.status).toBe(200);
    expect(receiptOf(response)).toMatchObject({
      scheme: 'push',
      payTo: server.localnet.networks.solana.merchantTokenAccount,
      amountAtomic: '50000',
    });
    expect(before.payer - (await balances(keypair)).payer).toBe(50_000n);
  });

  it('When a wallet adapter signs, then the official scheme pays with its signature (test/signers.test.ts: every signer, both schemes)', async () => {
    const { keypair } = await wallet();
    const before = await balances(keypair);
    let signed = 0;
    const adapter: WalletAdapterSigner = {
      publicKey: keypair.publicKey,
      signTransaction: <T extends Transaction | VersionedTransaction>(tx: T): Promise<T> => {
        signed++;
        if ('version' in tx) tx.sign([keypair]);
        else tx.partialSign(keypair);
        return Promise.resolve(tx);
      },
    };
    const payer = createPayer({ signer: adapter, rpcUrls: rpcUrls() });
    const response = await payer.fetch(`${server.baseUrl}/api/v1/scout/keywords`);
    expect(response.status).toBe(200);
    expect(signed).toBe(1);
    expect(receiptOf(response)).toMatchObject({ scheme: 'official', payer: keypair.publicKey.toBase58() });
    expect(before.payer - (await balances(keypair)).payer).toBe(50_000n);
  });
});
