import { randomBytes } from 'node:crypto';
import {
  ComputeBudgetProgram,
  Connection,
  Keypair,
  LAMPORTS_PER_SOL,
  PublicKey,
  SystemProgram,
  TransactionInstruction,
  TransactionMessage,
  VersionedTransaction,
} from '@solana/web3.js';
import { createKeyPairSignerFromBytes } from '@solana/kit';
import { PaymentRequiredV2Schema } from '@x402/core/schemas';
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client } from '@x402/fetch';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import { Error402 } from '@repo/schemas';
import {
  bs58,
  createTransferCheckedInstruction,
  getAssociatedTokenAddressSync,
  spawnLocalnet,
  waitForSignature,
  type Localnet,
} from '@repo/solana-localnet';
import { CAIP2_NETWORKS, decodePaymentResponse, encodePaymentHeader } from '@repo/x402-core';
import { type PaymentGateway } from '../src/index';
import { PrismaPaymentLedger } from '@repo/x402-ledger';
import { PgSqlClient } from '@repo/x402-ledger/testing';
import { ExactSvmSettler, SolanaPaymentVerifier } from '@repo/x402-solana';
import { buildPaidApp, listen, type HandlerRuns } from './support/app';
import { countingRpcProxy, type CountingRpcProxy } from './support/rpc-proxy';

// The official x402 v2 client (@x402/fetch + @x402/svm) paying the middleware through the official
// exact SVM scheme, settled by the official facilitator on the local ledger.
jest.setTimeout(60_000);

let localnet: Localnet;
let db: PgSqlClient;
let server: { url: string; close: () => Promise<void> };
let pushOnly: { url: string; close: () => Promise<void> };
let runs: HandlerRuns;
/** Between the paying server (its verifier and settler) and the ledger. */
let rpc: CountingRpcProxy;
const feePayer = Keypair.generate();
const devnet = () => localnet.networks['solana-devnet'];

function gateway(withSettler: boolean, rpcUrl: string): PaymentGateway {
  const info = { ...devnet(), rpcUrl };
  return {
    ledger: new PrismaPaymentLedger(db),
    verifiers: {
      'solana-devnet': new SolanaPaymentVerifier(
        { network: 'solana-devnet', rpcUrl: info.rpcUrl, asset: info.mint, payTo: info.merchantTokenAccount },
        { fetchAttempts: 4, fetchDelayMs: 100, rpcTimeoutMs: 5_000 },
      ),
    },
    ...(withSettler
      ? {
          settlers: {
            'solana-devnet': new ExactSvmSettler({
              network: 'solana-devnet',
              rpcUrl: info.rpcUrl,
              asset: info.mint,
              payTo: info.merchantOwner,
              feePayerSecretKey: feePayer.secretKey,
            }),
          },
        }
      : {}),
  };
}

/** An official client paying with `payer` (default: the ledger's agent), USDC up to 30 per payment. */
async function officialFetch(payer: Keypair = localnet.agent.keypair): Promise<typeof fetch> {
  const client = new x402Client();
  client.register(
    CAIP2_NETWORKS['solana-devnet'] as `${string}:${string}`,
    new ExactSvmScheme(await createKeyPairSignerFromBytes(payer.secretKey), { rpcUrl: devnet().rpcUrl }),
  );
  client.setSpendControls({
    allowedAssets: [
      {
        network: CAIP2_NETWORKS['solana-devnet'] as `${string}:${string}`,
        asset: devnet().mint,
        maxAmountPerPayment: '30000000',
      },
    ],
  });
  return wrapFetchWithPayment(fetch, client);
}

async function balances(): Promise<{
  agentUsdc: bigint;
  merchantUsdc: bigint;
  agentSol: number;
  feePayerSol: number;
}> {
  const connection = new Connection(devnet().rpcUrl, 'confirmed');
  const tokens = async (owner: string) => {
    const ata = getAssociatedTokenAddressSync(new PublicKey(devnet().mint), new PublicKey(owner), true);
    return BigInt((await connection.getTokenAccountBalance(ata)).value.amount);
  };
  return {
    agentUsdc: await tokens(localnet.agent.publicKey),
    merchantUsdc: await tokens(devnet().merchantOwner),
    agentSol: await connection.getBalance(localnet.agent.keypair.publicKey),
    feePayerSol: await connection.getBalance(feePayer.publicKey),
  };
}

beforeAll(async () => {
  localnet = await spawnLocalnet({ port: 0 });
  db = new PgSqlClient();
  runs = { gaps: 0, keywords: 0, flaky: 0 };
  const connection = new Connection(devnet().rpcUrl, 'confirmed');
  const airdrop = await connection.requestAirdrop(feePayer.publicKey, 10 * LAMPORTS_PER_SOL);
  await waitForSignature(connection, airdrop);
  rpc = await countingRpcProxy(devnet().rpcUrl);
  server = await listen(buildPaidApp(gateway(true, rpc.url), runs));
  pushOnly = await listen(buildPaidApp(gateway(false, devnet().rpcUrl), runs));
});

afterAll(async () => {
  await server?.close();
  await pushOnly?.close();
  await rpc?.close();
  await db?.close();
  await localnet?.close();
});

describe('The 402 of a network with the official scheme', () => {
  it('When payment is missing, then the body is the v1 Error402 and PAYMENT-REQUIRED is a v2 PaymentRequired the official schema accepts', async () => {
    const res = await fetch(`${server.url}/api/v1/scout/gaps?network=devnet`);
    expect(res.status).toBe(402);
    const body = Error402.parse(await res.json());
    expect(body.accepts[0]).toMatchObject({
      payTo: devnet().merchantTokenAccount,
      maxAmountRequired: '100000',
    });
    const header = res.headers.get('payment-required');
    expect(header).not.toBeNull();
    const required = PaymentRequiredV2Schema.parse(
      JSON.parse(Buffer.from(header ?? '', 'base64').toString('utf8')),
    );
    expect(required).toEqual({
      x402Version: 2,
      error: 'PAYMENT-SIGNATURE header is required',
      resource: {
        url: `${server.url}/api/v1/scout/gaps?network=devnet`,
        description: 'Market gaps',
        mimeType: 'application/json',
      },
      accepts: [
        {
          scheme: 'exact',
          network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
          amount: '100000',
          asset: devnet().mint,
          payTo: devnet().merchantOwner,
          maxTimeoutSeconds: 60,
          extra: { feePayer: feePayer.publicKey.toBase58() },
        },
      ],
      extensions: {},
    });
  });

  it('When the network has no fee payer configured, then the 402 carries no PAYMENT-REQUIRED', async () => {
    const res = await fetch(`${pushOnly.url}/api/v1/scout/gaps?network=devnet`);
    expect(res.status).toBe(402);
    expect(res.headers.get('payment-required')).toBeNull();
  });
});

describe('Paying with the official client', () => {
  it('When @x402/fetch pays, then 200 with PAYMENT-RESPONSE and X-PAYMENT-RESPONSE, the agent pays the price and no SOL, the fee payer pays the fee', async () => {
    const before = await balances();
    const runsBefore = runs.gaps;
    const callsBefore = new Map(rpc.calls);
    const res = await (await officialFetch())(`${server.url}/api/v1/scout/gaps?network=devnet`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { payer: string };
    expect(body.payer).toBe(localnet.agent.publicKey);
    expect(runs.gaps).toBe(runsBefore + 1);
    const settlement = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '');
    expect(settlement).toMatchObject({
      success: true,
      network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
      payer: localnet.agent.publicKey,
    });
    expect(decodePaymentResponse(res.headers.get('x-payment-response') ?? '')).toEqual({
      success: true,
      transaction: settlement.transaction,
      network: 'solana-devnet',
      payer: localnet.agent.publicKey,
    });
    const after = await balances();
    expect(after.agentUsdc).toBe(before.agentUsdc - 100_000n);
    expect(after.merchantUsdc).toBe(before.merchantUsdc + 100_000n);
    expect(after.agentSol).toBe(before.agentSol);
    expect(after.feePayerSol).toBeLessThan(before.feePayerSol);
    expect(before.feePayerSol - after.feePayerSol).toBeLessThanOrEqual(10_000 + 1);
    const rows = await db.$queryRawUnsafe<
      { status: string; payer: string; slot: string; block_time: Date; amount_atomic: string }[]
    >(
      'SELECT status, payer, slot::text AS slot, block_time, amount_atomic::text AS amount_atomic FROM x402_payments WHERE signature = $1',
      settlement.transaction,
    );
    expect(rows).toMatchObject([
      { status: 'completed', payer: localnet.agent.publicKey, amount_atomic: '100000' },
    ]);
    // The settlement's confirmation is the verification: no getTransaction after our own send, whose
    // preflight is the simulation.
    const calls = (method: string) => (rpc.calls.get(method) ?? 0) - (callsBefore.get(method) ?? 0);
    expect([calls('simulateTransaction'), calls('sendTransaction'), calls('getTransaction')]).toEqual([
      0, 1, 0,
    ]);
    expect(calls('getSignatureStatuses')).toBeGreaterThanOrEqual(1);
    const landed = await new Connection(devnet().rpcUrl, 'confirmed').getTransaction(settlement.transaction, {
      maxSupportedTransactionVersion: 0,
    });
    expect(Number(rows[0]?.slot)).toBe(landed?.slot);
    expect(Math.abs((rows[0]?.block_time.getTime() ?? 0) / 1000 - (landed?.blockTime ?? 0))).toBeLessThan(5);
  });
});

describe('A settled official-scheme payment seen on chain', () => {
  it('When a watcher presents its signature on another query of the same endpoint, then 400 payment_reused; the payer replays', async () => {
    const payerUrl = `${server.url}/api/v1/scout/gaps?network=devnet&sector=fintech`;
    const res = await (await officialFetch())(payerUrl);
    expect(res.status).toBe(200);
    const answer = await res.text();
    const { transaction } = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '');
    const header = encodePaymentHeader('solana-devnet', transaction);
    const runsAfterPayment = runs.gaps;

    const stolen = await fetch(`${server.url}/api/v1/scout/gaps?network=devnet&sector=climate&limit=50`, {
      headers: { 'X-PAYMENT': header },
    });
    expect(stolen.status).toBe(400);
    expect(await stolen.json()).toMatchObject({ code: 'payment_reused' });
    const replay = await fetch(payerUrl, { headers: { 'X-PAYMENT': header } });
    expect(replay.status).toBe(200);
    expect(await replay.text()).toBe(answer);
    expect(runs.gaps).toBe(runsAfterPayment);
  });
});

const MEMO_PROGRAM = new PublicKey('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');

/** How {@link officialTransaction} departs from what the official client builds. */
interface Tampering {
  amount?: bigint;
  mint?: string;
  destinationOwner?: string;
  extraInstruction?: boolean;
  feePayerInTransfer?: boolean;
  computeUnitPrice?: number;
  expiredBlockhash?: boolean;
  unsignedByPayer?: boolean;
  feePayer?: PublicKey;
}

/**
 * A payment transaction laid out as `@x402/svm`'s client lays it out (compute limit, compute price,
 * transferChecked to the merchant wallet's associated token account, memo; fee payer first, signed
 * by the payer only), with one tampering applied; base64 wire format.
 */
async function officialTransaction(t: Tampering = {}): Promise<string> {
  const info = devnet();
  const connection = new Connection(info.rpcUrl, 'confirmed');
  const payer = localnet.agent.keypair;
  const mint = new PublicKey(t.mint ?? info.mint);
  const authority = t.feePayerInTransfer ? feePayer.publicKey : payer.publicKey;
  const transfer = createTransferCheckedInstruction(
    getAssociatedTokenAddressSync(mint, authority, true),
    mint,
    getAssociatedTokenAddressSync(mint, new PublicKey(t.destinationOwner ?? info.merchantOwner), true),
    authority,
    t.amount ?? 100_000n,
    6,
  );
  const instructions = [
    ComputeBudgetProgram.setComputeUnitLimit({ units: 20_000 }),
    ComputeBudgetProgram.setComputeUnitPrice({ microLamports: t.computeUnitPrice ?? 1 }),
    transfer,
    new TransactionInstruction({
      programId: MEMO_PROGRAM,
      keys: [],
      data: Buffer.from(randomBytes(16).toString('hex')),
    }),
    ...(t.extraInstruction
      ? [
          SystemProgram.transfer({
            fromPubkey: payer.publicKey,
            toPubkey: Keypair.generate().publicKey,
            lamports: 1000,
          }),
        ]
      : []),
  ];
  if (t.expiredBlockhash) await callRpc(info.rpcUrl, 'localnet_expireBlockhashes', []);
  const blockhash = t.expiredBlockhash
    ? bs58.encode(randomBytes(32))
    : (await connection.getLatestBlockhash()).blockhash;
  const message = new TransactionMessage({
    payerKey: t.feePayer ?? feePayer.publicKey,
    recentBlockhash: blockhash,
    instructions,
  }).compileToV0Message();
  const tx = new VersionedTransaction(message);
  if (!t.unsignedByPayer) tx.sign(t.feePayerInTransfer ? [] : [payer]);
  return Buffer.from(tx.serialize()).toString('base64');
}

async function callRpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return ((await res.json()) as { result?: unknown }).result;
}

/** The PAYMENT-SIGNATURE value of a v2 payment of `transaction` accepting the server's offer (or `accepted`). */
async function paymentSignature(transaction: string, accepted?: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${server.url}/api/v1/scout/gaps?network=devnet`);
  const offer = (
    JSON.parse(Buffer.from(res.headers.get('payment-required') ?? '', 'base64').toString('utf8')) as {
      accepts: Record<string, unknown>[];
    }
  ).accepts[0];
  return Buffer.from(
    JSON.stringify({ x402Version: 2, accepted: { ...offer, ...accepted }, payload: { transaction } }),
  ).toString('base64');
}

describe('Official-scheme payments the server refuses', () => {
  it('When the untampered transaction is presented, then it pays (the builder is faithful)', async () => {
    const before = await balances();
    const res = await fetch(`${server.url}/api/v1/scout/gaps?network=devnet`, {
      headers: { 'PAYMENT-SIGNATURE': await paymentSignature(await officialTransaction()) },
    });
    expect(res.status).toBe(200);
    expect((await balances()).agentUsdc).toBe(before.agentUsdc - 100_000n);
  });

  it.each<[string, Tampering, string]>([
    ['a wrong amount', { amount: 99_999n }, 'amount_mismatch'],
    [
      'a wrong destination',
      { destinationOwner: Keypair.generate().publicKey.toBase58() },
      'recipient_mismatch',
    ],
    ['an extra instruction', { extraInstruction: true }, 'unknown_fifth_instruction'],
    [
      'the fee payer among the transfer accounts',
      { feePayerInTransfer: true },
      'fee_payer_transferring_funds',
    ],
    ['a compute price above the cap', { computeUnitPrice: 5_000_000 }, 'compute_price_instruction_too_high'],
    ['an expired blockhash', { expiredBlockhash: true }, 'simulation_failed'],
    ['no payer signature', { unsignedByPayer: true }, 'signature_invalid'],
  ])(
    "When the transaction has %s, then 402 with the facilitator's reason, nothing settled and no balance moves",
    async (_what, tampering, reason) => {
      const before = await balances();
      const runsBefore = runs.gaps;
      const transaction = await officialTransaction(tampering);
      const res = await fetch(`${server.url}/api/v1/scout/gaps?network=devnet`, {
        headers: { 'PAYMENT-SIGNATURE': await paymentSignature(transaction) },
      });
      expect(res.status).toBe(402);
      const body = Error402.parse(await res.json());
      expect(body.details?.reason).toMatch(new RegExp(`^invalid_exact_svm_.*${reason}$`));
      expect(res.headers.get('payment-required')).not.toBeNull();
      expect(runs.gaps).toBe(runsBefore);
      const after = await balances();
      expect(after).toEqual(before);
      const settler = new ExactSvmSettler({
        network: 'solana-devnet',
        rpcUrl: devnet().rpcUrl,
        asset: devnet().mint,
        payTo: devnet().merchantOwner,
        feePayerSecretKey: feePayer.secretKey,
      });
      const claimKey = await settler
        .signatureOf(transaction)
        .then((claim) => claim.signature)
        .catch(() => null);
      if (claimKey !== null)
        expect(
          await db.$queryRawUnsafe('SELECT status FROM x402_payments WHERE signature = $1', claimKey),
        ).toEqual([]);
    },
  );

  it('When the transaction is for a mint other than the offer, then 402 and nothing moves', async () => {
    const before = await balances();
    const res = await fetch(`${server.url}/api/v1/scout/gaps?network=devnet`, {
      headers: {
        'PAYMENT-SIGNATURE': await paymentSignature(
          await officialTransaction({ mint: localnet.networks.solana.mint }),
        ),
      },
    });
    expect(res.status).toBe(402);
    expect(await balances()).toEqual(before);
  });

  it('When the payment accepted another offer, or another wallet pays the fee, then 402 before anything is sent', async () => {
    const before = await balances();
    const cheaper = await fetch(`${server.url}/api/v1/scout/gaps?network=devnet`, {
      headers: { 'PAYMENT-SIGNATURE': await paymentSignature(await officialTransaction(), { amount: '1' }) },
    });
    expect(cheaper.status).toBe(402);
    expect((await cheaper.json()) as unknown).toMatchObject({
      details: { reason: 'invalid_payment_requirements' },
    });
    const otherFeePayer = await fetch(`${server.url}/api/v1/scout/gaps?network=devnet`, {
      headers: {
        'PAYMENT-SIGNATURE': await paymentSignature(
          await officialTransaction({ feePayer: localnet.agent.keypair.publicKey }),
        ),
      },
    });
    expect(otherFeePayer.status).toBe(402);
    expect((await otherFeePayer.json()) as unknown).toMatchObject({
      details: { reason: 'invalid_exact_svm_fee_payer_not_managed_by_facilitator' },
    });
    expect(await balances()).toEqual(before);
  });

  it('When twenty identical payments arrive at once, then one settlement and twenty identical answers', async () => {
    const before = await balances();
    const runsBefore = runs.gaps;
    const header = await paymentSignature(await officialTransaction());
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        fetch(`${server.url}/api/v1/scout/gaps?network=devnet`, {
          headers: { 'PAYMENT-SIGNATURE': header },
        }).then(async (r) => ({ status: r.status, body: await r.text() })),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(new Set(answers.map((a) => a.body)).size).toBe(1);
    expect(runs.gaps).toBe(runsBefore + 1);
    const after = await balances();
    expect(after.agentUsdc).toBe(before.agentUsdc - 100_000n);
    expect(after.merchantUsdc).toBe(before.merchantUsdc + 100_000n);
  });
});
