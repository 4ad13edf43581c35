import { Keypair, PublicKey } from '@solana/web3.js';
import { getAssociatedTokenAddressSync, spawnLocalnet, type Localnet } from '@repo/solana-localnet';
import { buildPaymentRequirements } from '@repo/x402-core';
import { PrismaPaymentLedger } from '@repo/x402-ledger';
import { PgSqlClient } from '@repo/x402-ledger/testing';
import { SolanaPaymentVerifier } from '@repo/x402-solana';
import {
  fetchWithPayment,
  InsufficientFundsError,
  payForRequirements,
  PaymentRefusedError,
  RpcUnreachableError,
  SpendCapExceededError,
} from '@repo/x402-solana/client';
import { buildPaidApp, listen } from './support/app';

let localnet: Localnet;
let db: PgSqlClient;
let server: { url: string; close: () => Promise<void> };
const runs = { gaps: 0, keywords: 0, flaky: 0 };

beforeAll(async () => {
  localnet = await spawnLocalnet({ port: 0 });
  db = new PgSqlClient();
  const verifier = (network: 'solana' | 'solana-devnet') =>
    new SolanaPaymentVerifier({
      network,
      rpcUrl: localnet.networks[network].rpcUrl,
      asset: localnet.networks[network].mint,
      payTo: localnet.networks[network].merchantTokenAccount,
    });
  server = await listen(
    buildPaidApp(
      {
        ledger: new PrismaPaymentLedger(db),
        verifiers: { solana: verifier('solana'), 'solana-devnet': verifier('solana-devnet') },
      },
      runs,
    ),
  );
});

afterAll(async () => {
  await server?.close();
  await db?.close();
  await localnet?.close();
});

const rpcUrls = () => ({
  solana: localnet.networks.solana.rpcUrl,
  'solana-devnet': localnet.networks['solana-devnet'].rpcUrl,
});

function requirements(amountAtomic = 100_000n) {
  return buildPaymentRequirements({
    network: 'solana',
    asset: localnet.networks.solana.mint,
    payTo: localnet.networks.solana.merchantTokenAccount,
    amountAtomic,
    resource: 'http://127.0.0.1/x',
    description: 'x',
    mimeType: 'application/json',
  });
}

describe('the paying client', () => {
  it('When fetchWithPayment meets a 402, then it pays exactly the requirements, retries once with X-PAYMENT and returns the paid answer', async () => {
    const before = runs.gaps;
    const result = await fetchWithPayment(`${server.url}/api/v1/scout/gaps?limit=3`, {
      keypair: localnet.agent.keypair,
      rpcUrls: rpcUrls(),
    });
    expect(result.response.status).toBe(200);
    expect(result.body).toMatchObject({ count: 1, payer: localnet.agent.publicKey });
    expect(result.payment?.requirements.maxAmountRequired).toBe('100000');
    expect(result.payment).toMatchObject({ mode: 'push', network: 'solana', amountAtomic: 100_000n });
    expect(result.payment?.paymentResponse).toEqual({
      success: true,
      transaction: result.payment?.signature,
      network: 'solana',
      payer: localnet.agent.publicKey,
    });
    expect(runs.gaps - before).toBe(1);
    const rows = await db.$queryRawUnsafe<{ amount: string }[]>(
      'SELECT amount_atomic::text AS amount FROM x402_payments WHERE signature = $1',
      result.payment?.signature,
    );
    expect(rows).toEqual([{ amount: '100000' }]);
  });

  it('When fetchWithPayment is pointed at devnet, then it pays on devnet', async () => {
    const result = await fetchWithPayment(`${server.url}/api/v1/scout/keywords?network=devnet`, {
      keypair: localnet.agent.keypair,
      rpcUrls: rpcUrls(),
    });
    expect(result.response.status).toBe(200);
    expect(result.payment?.requirements).toMatchObject({
      network: 'solana-devnet',
      maxAmountRequired: '50000',
    });
    expect(result.body).toEqual([{ keyword: 'x402', count: 3 }]);
  });

  it('When the endpoint is free of charge, then no payment is made and no token moves', async () => {
    const before = await walletBalances();
    const result = await fetchWithPayment(`${server.url}/nope`, {
      keypair: localnet.agent.keypair,
      rpcUrls: rpcUrls(),
    });
    expect(result.response.status).toBe(404);
    expect(result.payment).toBeUndefined();
    expect(await walletBalances()).toEqual(before);
  });

  it('When the price is above maxAmountAtomic, then it refuses to pay with SpendCapExceededError and no token moves', async () => {
    const before = await walletBalances();
    const error = await fetchWithPayment(`${server.url}/api/v1/scout/gaps`, {
      keypair: localnet.agent.keypair,
      rpcUrls: rpcUrls(),
      maxAmountAtomic: 99_999n,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SpendCapExceededError);
    expect(error).toBeInstanceOf(PaymentRefusedError);
    expect(error).toMatchObject({ code: 'spend_cap_exceeded', priceAtomic: 100_000n, capAtomic: 99_999n });
    expect(await walletBalances()).toEqual(before);
  });

  it('When the wallet has no token account, then InsufficientFundsError no_token_account before anything is sent', async () => {
    const empty = Keypair.generate();
    const error = await payForRequirements({
      requirements: requirements(),
      keypair: empty,
      rpcUrl: localnet.networks.solana.rpcUrl,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InsufficientFundsError);
    expect((error as InsufficientFundsError).kind).toBe('no_token_account');
  });

  it('When the wallet holds less than the price, then InsufficientFundsError token_balance with the amounts', async () => {
    const poor = Keypair.generate();
    await localnet.fund(poor.publicKey.toBase58(), { network: 'solana', usdcAtomic: 10_000n });
    const error = await payForRequirements({
      requirements: requirements(),
      keypair: poor,
      rpcUrl: localnet.networks.solana.rpcUrl,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InsufficientFundsError);
    expect(error).toMatchObject({ kind: 'token_balance', required: 100_000n, available: 10_000n });
  });

  it('When the wallet holds USDC but no SOL, then InsufficientFundsError sol_for_fees', async () => {
    const noSol = Keypair.generate();
    await localnet.fund(noSol.publicKey.toBase58(), { network: 'solana', usdcAtomic: 500_000n, lamports: 0 });
    const error = await payForRequirements({
      requirements: requirements(),
      keypair: noSol,
      rpcUrl: localnet.networks.solana.rpcUrl,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InsufficientFundsError);
    expect(error).toMatchObject({ kind: 'sol_for_fees', available: 0n });
  });

  it('When the RPC cannot be reached, then RpcUnreachableError with the URL', async () => {
    const error = await payForRequirements({
      requirements: requirements(),
      keypair: localnet.agent.keypair,
      rpcUrl: 'http://127.0.0.1:1',
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcUnreachableError);
    expect((error as RpcUnreachableError).url).toBe('http://127.0.0.1:1');
    expect((error as Error).message).toContain('http://127.0.0.1:1');
  });

  it('When payForRequirements succeeds, then the merchant received exactly the amount', async () => {
    const before = await balanceOf(localnet.networks.solana.merchantTokenAccount);
    await payForRequirements({
      requirements: requirements(123_456n),
      keypair: localnet.agent.keypair,
      rpcUrl: localnet.networks.solana.rpcUrl,
    });
    expect((await balanceOf(localnet.networks.solana.merchantTokenAccount)) - before).toBe(123_456n);
  });
});

/** The agent's and the merchant's test USDC on the main network (atomic units). */
async function walletBalances(): Promise<{ agent: bigint; merchant: bigint }> {
  const info = localnet.networks.solana;
  const agentAccount = getAssociatedTokenAddressSync(
    new PublicKey(info.mint),
    localnet.agent.keypair.publicKey,
  );
  return {
    agent: await balanceOf(agentAccount.toBase58()),
    merchant: await balanceOf(info.merchantTokenAccount),
  };
}

async function balanceOf(tokenAccount: string): Promise<bigint> {
  const res = await fetch(localnet.networks.solana.rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'getTokenAccountBalance',
      params: [tokenAccount, { commitment: 'confirmed' }],
    }),
  });
  const json = (await res.json()) as { result: { value: { amount: string } } };
  return BigInt(json.result.value.amount);
}
