import express from 'express';
import { Connection, Keypair, PublicKey } from '@solana/web3.js';
import { errorHandler, notFoundHandler } from '@repo/errors';
import type { X402Network } from '@repo/schemas';
import { spawnLocalnet, type Localnet, getAssociatedTokenAddressSync } from '@repo/solana-localnet';
import { CAIP2_NETWORKS } from '@repo/x402-core';
import { requirePayment, type PaymentGateway } from '../src/index';
import { PrismaPaymentLedger } from '@repo/x402-ledger';
import { PgSqlClient } from '@repo/x402-ledger/testing';
import { ExactSvmSettler, SolanaPaymentVerifier } from '@repo/x402-solana';
import {
  fetchWithPayment,
  InsufficientFundsError,
  PaymentRefusedError,
  RpcUnreachableError,
  SpendCapExceededError,
  decodePaymentRequired,
} from '@repo/x402-solana/client';
import { buildPaidApp, listen, type HandlerRuns } from './support/app';

// fetchWithPayment against real paid servers on the local ledger: the official exact SVM scheme when
// the 402 offers it (fee paid by the server), push mode otherwise or on request, and the spend cap.
jest.setTimeout(60_000);

type Server = { url: string; close: () => Promise<void> };

let localnet: Localnet;
let db: PgSqlClient;
/** Offers both schemes (fee payer: the ledger's). */
let both: Server;
/** Offers push mode only. */
let pushOnly: Server;
/** Offers both, but its fee payer holds no SOL: every official payment fails simulation. */
let brokeFeePayer: Server;
/** A 15 USDC route (the forge/ideate price) offering both schemes. */
let compute: Server;
const runs: HandlerRuns = { gaps: 0, keywords: 0, flaky: 0 };
const servers: Server[] = [];

function gateway(feePayerSecretKey: Uint8Array | undefined): PaymentGateway {
  const networks = ['solana', 'solana-devnet'] as const;
  const info = (network: X402Network) => localnet.networks[network];
  return {
    ledger: new PrismaPaymentLedger(db),
    verifiers: Object.fromEntries(
      networks.map((network) => [
        network,
        new SolanaPaymentVerifier(
          {
            network,
            rpcUrl: info(network).rpcUrl,
            asset: info(network).mint,
            payTo: info(network).merchantTokenAccount,
          },
          { fetchAttempts: 4, fetchDelayMs: 100, rpcTimeoutMs: 5_000 },
        ),
      ]),
    ),
    ...(feePayerSecretKey
      ? {
          settlers: Object.fromEntries(
            networks.map((network) => [
              network,
              new ExactSvmSettler({
                network,
                rpcUrl: info(network).rpcUrl,
                asset: info(network).mint,
                payTo: info(network).merchantOwner,
                feePayerSecretKey,
              }),
            ]),
          ),
        }
      : {}),
  };
}

beforeAll(async () => {
  localnet = await spawnLocalnet({ port: 0 });
  db = new PgSqlClient();
  const feePayer = localnet.feePayer.keypair.secretKey;
  both = await listen(buildPaidApp(gateway(feePayer), runs));
  pushOnly = await listen(buildPaidApp(gateway(undefined), runs));
  brokeFeePayer = await listen(buildPaidApp(gateway(Keypair.generate().secretKey), runs));
  const app = express();
  app.post(
    '/api/v1/forge/ideate',
    requirePayment({ ...gateway(feePayer), amountAtomic: 15_000_000n, description: 'Ideation' }),
    (_req, res) => {
      res.status(202).json({ jobId: 'job-1', status: 'queued' });
    },
  );
  app.use(notFoundHandler);
  app.use(errorHandler({ error: () => undefined, warn: () => undefined }));
  compute = await listen(app);
  servers.push(both, pushOnly, brokeFeePayer, compute);
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await db?.close();
  await localnet?.close();
});

const rpcUrls = () => ({
  solana: localnet.networks.solana.rpcUrl,
  'solana-devnet': localnet.networks['solana-devnet'].rpcUrl,
});

interface Balances {
  payerUsdc: bigint;
  payerSol: number;
  merchantUsdc: bigint;
  feePayerSol: number;
}

/** USDC (atomic) and SOL (lamports) of `payer`, the merchant and the ledger's fee payer on `network`. */
async function balances(payer: PublicKey, network: X402Network = 'solana-devnet'): Promise<Balances> {
  const info = localnet.networks[network];
  const connection = new Connection(info.rpcUrl, 'confirmed');
  const usdc = async (owner: PublicKey) => {
    const account = getAssociatedTokenAddressSync(new PublicKey(info.mint), owner, true);
    if (!(await connection.getAccountInfo(account))) return 0n;
    return BigInt((await connection.getTokenAccountBalance(account)).value.amount);
  };
  return {
    payerUsdc: await usdc(payer),
    payerSol: await connection.getBalance(payer),
    merchantUsdc: await usdc(new PublicKey(info.merchantOwner)),
    feePayerSol: await connection.getBalance(localnet.feePayer.keypair.publicKey),
  };
}

/** A fetch that records the payment headers of every request it makes. */
function recordingFetch(): {
  fetch: typeof fetch;
  requests: { paymentSignature: string | null; xPayment: string | null }[];
} {
  const requests: { paymentSignature: string | null; xPayment: string | null }[] = [];
  return {
    requests,
    fetch: (input, init) => {
      const headers = new Headers(init?.headers);
      requests.push({
        paymentSignature: headers.get('payment-signature'),
        xPayment: headers.get('x-payment'),
      });
      return fetch(input, init);
    },
  };
}

/** A fresh wallet with `usdcAtomic` test USDC and `lamports` SOL on both networks. */
async function wallet(usdcAtomic: bigint, lamports = 1_000_000_000): Promise<Keypair> {
  const keypair = Keypair.generate();
  await localnet.fund(keypair.publicKey.toBase58(), { usdcAtomic, lamports });
  return keypair;
}

async function rowsOfPayer(payer: PublicKey): Promise<unknown[]> {
  return db.$queryRawUnsafe<unknown[]>(
    'SELECT signature FROM x402_payments WHERE payer = $1',
    payer.toBase58(),
  );
}

describe('fetchWithPayment in auto mode', () => {
  it('When the server offers both schemes, then it pays with the official scheme: the agent pays the price and no SOL, the server fee payer pays the fee, PAYMENT-RESPONSE is decoded', async () => {
    const agent = localnet.agent.keypair;
    const before = await balances(agent.publicKey);
    const gapsBefore = runs.gaps;
    const recorder = recordingFetch();
    const url = `${both.url}/api/v1/scout/gaps?network=devnet`;
    const result = await fetchWithPayment(url, { keypair: agent, rpcUrls: rpcUrls(), fetch: recorder.fetch });

    expect(result.response.status).toBe(200);
    expect(result.body).toMatchObject({ count: 1, payer: localnet.agent.publicKey });
    expect(runs.gaps).toBe(gapsBefore + 1);
    const info = localnet.networks['solana-devnet'];
    expect(result.payment).toMatchObject({
      mode: 'official',
      network: 'solana-devnet',
      amountAtomic: 100_000n,
      asset: info.mint,
      payer: localnet.agent.publicKey,
      feePayer: localnet.feePayer.publicKey,
      requirements: {
        network: 'solana-devnet',
        maxAmountRequired: '100000',
        payTo: info.merchantTokenAccount,
      },
      accepted: { network: CAIP2_NETWORKS['solana-devnet'], amount: '100000', payTo: info.merchantOwner },
      settlement: {
        success: true,
        network: CAIP2_NETWORKS['solana-devnet'],
        payer: localnet.agent.publicKey,
      },
      paymentResponse: { success: true, network: 'solana-devnet', payer: localnet.agent.publicKey },
    });
    const signature = result.payment?.signature;
    expect(signature).toBe(result.payment?.settlement?.transaction);
    expect(result.payment?.paymentResponse?.transaction).toBe(signature);

    // One unpaid request, then one retry carrying PAYMENT-SIGNATURE (a v2 payload accepting the offer).
    expect(recorder.requests).toHaveLength(2);
    const retry = recorder.requests[1];
    expect(retry?.xPayment).toBeNull();
    const sent = JSON.parse(Buffer.from(retry?.paymentSignature ?? '', 'base64').toString('utf8')) as {
      x402Version: number;
      accepted: unknown;
      resource: { url: string };
      payload: { transaction: string };
    };
    expect(sent.x402Version).toBe(2);
    expect(sent.accepted).toEqual(result.payment?.accepted);
    expect(sent.resource.url).toBe(url);
    expect(typeof sent.payload.transaction).toBe('string');

    const after = await balances(agent.publicKey);
    expect(after.payerUsdc).toBe(before.payerUsdc - 100_000n);
    expect(after.merchantUsdc).toBe(before.merchantUsdc + 100_000n);
    expect(after.payerSol).toBe(before.payerSol);
    expect(after.feePayerSol).toBeLessThan(before.feePayerSol);
    expect(before.feePayerSol - after.feePayerSol).toBeLessThanOrEqual(10_001);
    expect(
      await db.$queryRawUnsafe('SELECT status, payer FROM x402_payments WHERE signature = $1', signature),
    ).toEqual([{ status: 'completed', payer: localnet.agent.publicKey }]);
  });

  it('When the wallet holds USDC but no SOL and the server offers both schemes, then it still pays (the server pays the fee)', async () => {
    const noSol = await wallet(500_000n, 0);
    const result = await fetchWithPayment(`${both.url}/api/v1/scout/keywords`, {
      keypair: noSol,
      rpcUrls: rpcUrls(),
    });
    expect(result.response.status).toBe(200);
    expect(result.payment).toMatchObject({
      mode: 'official',
      network: 'solana',
      payer: noSol.publicKey.toBase58(),
    });
    const after = await balances(noSol.publicKey, 'solana');
    expect(after.payerUsdc).toBe(450_000n);
    expect(after.payerSol).toBe(0);
  });

  it('When the server offers push mode only, then it pays in push mode and the agent pays the fee in SOL', async () => {
    const agent = localnet.agent.keypair;
    const before = await balances(agent.publicKey);
    const recorder = recordingFetch();
    const result = await fetchWithPayment(`${pushOnly.url}/api/v1/scout/gaps?network=devnet`, {
      keypair: agent,
      rpcUrls: rpcUrls(),
      fetch: recorder.fetch,
    });
    expect(result.response.status).toBe(200);
    expect(result.payment).toMatchObject({
      mode: 'push',
      network: 'solana-devnet',
      amountAtomic: 100_000n,
      payer: localnet.agent.publicKey,
      feePayer: localnet.agent.publicKey,
      paymentResponse: { success: true, network: 'solana-devnet', payer: localnet.agent.publicKey },
    });
    expect(result.payment?.paymentResponse?.transaction).toBe(result.payment?.signature);
    expect(result.payment?.accepted).toBeUndefined();
    expect(recorder.requests[1]?.paymentSignature).toBeNull();
    expect(recorder.requests[1]?.xPayment).not.toBeNull();
    const after = await balances(agent.publicKey);
    expect(after.payerUsdc).toBe(before.payerUsdc - 100_000n);
    expect(after.merchantUsdc).toBe(before.merchantUsdc + 100_000n);
    expect(after.payerSol).toBe(before.payerSol - 5_000);
    expect(after.feePayerSol).toBe(before.feePayerSol);
  });
});

describe('fetchWithPayment with a forced mode', () => {
  it('When push mode is forced against a server offering both schemes, then it pays in push mode', async () => {
    const agent = localnet.agent.keypair;
    const before = await balances(agent.publicKey);
    const recorder = recordingFetch();
    const result = await fetchWithPayment(`${both.url}/api/v1/scout/gaps?network=devnet`, {
      keypair: agent,
      rpcUrls: rpcUrls(),
      mode: 'push',
      fetch: recorder.fetch,
    });
    expect(result.response.status).toBe(200);
    expect(result.payment).toMatchObject({ mode: 'push', feePayer: localnet.agent.publicKey });
    expect(result.payment?.settlement).toMatchObject({ network: CAIP2_NETWORKS['solana-devnet'] });
    expect(recorder.requests[1]?.paymentSignature).toBeNull();
    expect(recorder.requests[1]?.xPayment).not.toBeNull();
    const after = await balances(agent.publicKey);
    expect(after.payerUsdc).toBe(before.payerUsdc - 100_000n);
    expect(after.payerSol).toBe(before.payerSol - 5_000);
    expect(after.feePayerSol).toBe(before.feePayerSol);
    expect(
      await db.$queryRawUnsafe(
        'SELECT status FROM x402_payments WHERE signature = $1',
        result.payment?.signature,
      ),
    ).toEqual([{ status: 'completed' }]);
  });

  it('When the official scheme is forced against a push-only server, then PaymentRefusedError and nothing is signed or sent', async () => {
    const payer = await wallet(1_000_000n);
    const before = await balances(payer.publicKey);
    const recorder = recordingFetch();
    const error = await fetchWithPayment(`${pushOnly.url}/api/v1/scout/gaps?network=devnet`, {
      keypair: payer,
      rpcUrls: rpcUrls(),
      mode: 'official',
      fetch: recorder.fetch,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PaymentRefusedError);
    expect((error as PaymentRefusedError).message).toMatch(/PAYMENT-REQUIRED/);
    expect(recorder.requests).toHaveLength(1);
    expect(await balances(payer.publicKey)).toEqual(before);
  });

  it('When the server refuses the official payment (402 again), then PaymentRefusedError with its details.reason and no balance moves', async () => {
    const payer = await wallet(1_000_000n);
    const before = await balances(payer.publicKey);
    const gapsBefore = runs.gaps;
    const error = await fetchWithPayment(`${brokeFeePayer.url}/api/v1/scout/gaps?network=devnet`, {
      keypair: payer,
      rpcUrls: rpcUrls(),
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PaymentRefusedError);
    const refused = error as PaymentRefusedError;
    expect(refused).toMatchObject({ code: 'payment_refused', status: 402, signature: undefined });
    // The official facilitator's simulation fails: the fee payer cannot pay the fee.
    expect(refused.reason).toMatch(/^invalid_exact_svm_.*simulation_failed$/);
    expect(refused.message).toContain(refused.reason ?? '?');
    expect(runs.gaps).toBe(gapsBefore);
    expect(await balances(payer.publicKey)).toEqual(before);
  });

  it('When the wallet has no token account, then InsufficientFundsError before anything is signed', async () => {
    const empty = Keypair.generate();
    const recorder = recordingFetch();
    const error = await fetchWithPayment(`${both.url}/api/v1/scout/gaps`, {
      keypair: empty,
      rpcUrls: rpcUrls(),
      fetch: recorder.fetch,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InsufficientFundsError);
    expect(error).toMatchObject({ kind: 'no_token_account', required: 100_000n });
    expect(recorder.requests).toHaveLength(1);
  });
});

describe('Official-scheme failures before signing', () => {
  it('When the RPC of the offered network cannot be reached, then RpcUnreachableError with the URL and no payment header is sent', async () => {
    const recorder = recordingFetch();
    const error = await fetchWithPayment(`${both.url}/api/v1/scout/gaps`, {
      keypair: localnet.agent.keypair,
      rpcUrls: { solana: 'http://127.0.0.1:1' },
      mode: 'official',
      fetch: recorder.fetch,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcUnreachableError);
    expect(error).toMatchObject({ url: 'http://127.0.0.1:1' });
    expect(recorder.requests).toHaveLength(1);
  });
});

describe('The per-payment spend cap', () => {
  it.each(['auto', 'push', 'official'] as const)(
    'When the price is above maxAmountAtomic in %s mode, then SpendCapExceededError naming price and cap, one request only and no balance moves',
    async (mode) => {
      const payer = await wallet(1_000_000n);
      const before = await balances(payer.publicKey);
      const recorder = recordingFetch();
      const error = await fetchWithPayment(`${both.url}/api/v1/scout/gaps?network=devnet`, {
        keypair: payer,
        rpcUrls: rpcUrls(),
        maxAmountAtomic: 99_999n,
        mode,
        fetch: recorder.fetch,
      }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SpendCapExceededError);
      expect(error).toMatchObject({
        code: 'spend_cap_exceeded',
        priceAtomic: 100_000n,
        capAtomic: 99_999n,
        asset: localnet.networks['solana-devnet'].mint,
      });
      expect((error as Error).message).toMatch(
        /asks 0\.1 USDC \(100000 atomic units\), above the per-payment cap of 0\.099999 USDC/,
      );
      expect(recorder.requests).toHaveLength(1);
      expect(await balances(payer.publicKey)).toEqual(before);
      expect(await rowsOfPayer(payer.publicKey)).toEqual([]);
    },
  );

  it('When no cap is given and the price is 15 USDC, then the default 1 USDC cap refuses it and no balance moves', async () => {
    const payer = await wallet(30_000_000n);
    const before = await balances(payer.publicKey, 'solana');
    const error = await fetchWithPayment(`${compute.url}/api/v1/forge/ideate`, {
      keypair: payer,
      rpcUrls: rpcUrls(),
      init: { method: 'POST' },
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpendCapExceededError);
    expect(error).toMatchObject({ priceAtomic: 15_000_000n, capAtomic: 1_000_000n });
    expect((error as Error).message).toContain('--max-amount 15');
    expect(await balances(payer.publicKey, 'solana')).toEqual(before);
    expect(await rowsOfPayer(payer.publicKey)).toEqual([]);
  });

  it('When the cap is raised to 25 USDC, then the 15 USDC price is paid with the official scheme', async () => {
    const payer = await wallet(30_000_000n);
    const before = await balances(payer.publicKey, 'solana');
    const result = await fetchWithPayment(`${compute.url}/api/v1/forge/ideate`, {
      keypair: payer,
      rpcUrls: rpcUrls(),
      init: { method: 'POST' },
      maxAmountAtomic: 25_000_000n,
    });
    expect(result.response.status).toBe(202);
    expect(result.payment).toMatchObject({ mode: 'official', amountAtomic: 15_000_000n });
    const after = await balances(payer.publicKey, 'solana');
    expect(after.payerUsdc).toBe(before.payerUsdc - 15_000_000n);
    expect(after.merchantUsdc).toBe(before.merchantUsdc + 15_000_000n);
    expect(after.payerSol).toBe(before.payerSol);
  });
});

describe('Decoding PAYMENT-REQUIRED', () => {
  it('When the header is base64 JSON of a v2 PaymentRequired, then it decodes; otherwise undefined', async () => {
    const res = await fetch(`${both.url}/api/v1/scout/gaps`);
    const header = res.headers.get('payment-required') ?? '';
    expect(decodePaymentRequired(header)).toMatchObject({
      x402Version: 2,
      accepts: [{ scheme: 'exact', network: CAIP2_NETWORKS.solana, amount: '100000' }],
    });
    expect(decodePaymentRequired('not base64 json')).toBeUndefined();
    expect(decodePaymentRequired(Buffer.from('{"x402Version":1}').toString('base64'))).toBeUndefined();
  });
});
