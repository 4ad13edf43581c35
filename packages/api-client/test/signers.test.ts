import { Connection, Keypair, PublicKey, type Transaction, type VersionedTransaction } from '@solana/web3.js';
import { createKeyPairSignerFromBytes, type TransactionPartialSigner } from '@solana/kit';
import * as internal from '@repo/x402-solana/client';
import * as core from '@repo/x402-solana/client-core';
import {
  createPayer,
  InsufficientFundsError,
  PaymentRefusedError,
  receiptOf,
  SpendLimitExceededError,
  X402ClientError,
  type PaymentMode,
  type WalletAdapterSigner,
} from '../src/index';
import { startContractServer, type ContractServer } from './support/contract-server';

// Every kind of signer (README, "Signers") pays both schemes against the contract server (x402
// middleware, PostgreSQL ledger) and the local Solana ledger; a refused payment never reaches the
// signer. The wallet adapter and kit signers below count how often they are asked to sign.
jest.setTimeout(60_000);

let server: ContractServer;
let connection: Connection;

beforeAll(async () => {
  server = await startContractServer();
  connection = new Connection(server.localnet.networks.solana.rpcUrl, 'confirmed');
});
afterAll(() => server?.close());

const rpcUrls = (): { solana: string } => ({ solana: server.localnet.networks.solana.rpcUrl });
const keywords = (): string => `${server.baseUrl}/api/v1/scout/keywords`;

/** A new wallet funded with 1 USDC and SOL on the local ledger. */
async function funded(): Promise<Keypair> {
  const keypair = Keypair.generate();
  await server.localnet.fund(keypair.publicKey.toBase58(), { network: 'solana', usdcAtomic: 1_000_000n });
  return keypair;
}

async function balances(owner: Keypair): Promise<{ payer: bigint; merchant: bigint }> {
  const net = server.localnet.networks.solana;
  const [ata] = PublicKey.findProgramAddressSync(
    [
      owner.publicKey.toBuffer(),
      new PublicKey('TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA').toBuffer(),
      new PublicKey(net.mint).toBuffer(),
    ],
    new PublicKey('ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL'),
  );
  const usdc = async (account: PublicKey) =>
    BigInt((await connection.getTokenAccountBalance(account)).value.amount);
  return { payer: await usdc(ata), merchant: await usdc(new PublicKey(net.merchantTokenAccount)) };
}

/** A wallet adapter over `keypair` (it never shows the key to the payer) that counts its signatures. */
function adapterOf(keypair: Keypair): WalletAdapterSigner & { signed: () => number } {
  let signed = 0;
  return {
    signed: () => signed,
    publicKey: keypair.publicKey,
    signTransaction<T extends Transaction | VersionedTransaction>(tx: T): Promise<T> {
      signed++;
      if ('version' in tx) tx.sign([keypair]);
      else tx.partialSign(keypair);
      return Promise.resolve(tx);
    },
  };
}

/** A @solana/kit partial signer over `keypair` that counts its signatures. */
async function kitSignerOf(keypair: Keypair): Promise<TransactionPartialSigner & { signed: () => number }> {
  const kit = await createKeyPairSignerFromBytes(keypair.secretKey);
  let signed = 0;
  return {
    signed: () => signed,
    address: kit.address,
    signTransactions: (transactions, config) => {
      signed++;
      return kit.signTransactions(transactions, config);
    },
  };
}

const modes: Array<Exclude<PaymentMode, 'auto'>> = ['official', 'push'];

describe('Paying with any signer', () => {
  it.each(modes)(
    'When a wallet adapter pays in %s mode, then it signs once, the receipt names its wallet and the balances move by the price',
    async (mode) => {
      const keypair = await funded();
      const adapter = adapterOf(keypair);
      const before = await balances(keypair);
      const payer = createPayer({ signer: adapter, rpcUrls: rpcUrls(), mode });
      const response = await payer.fetch(keywords());
      expect(response.status).toBe(200);
      expect(adapter.signed()).toBe(1);
      const net = server.localnet.networks.solana;
      expect(receiptOf(response)).toMatchObject({
        scheme: mode,
        payer: keypair.publicKey.toBase58(),
        amountAtomic: '50000',
        payTo: mode === 'push' ? net.merchantTokenAccount : net.merchantOwner,
      });
      const after = await balances(keypair);
      expect(before.payer - after.payer).toBe(50_000n);
      expect(after.merchant - before.merchant).toBe(50_000n);
    },
  );

  it.each(modes)(
    'When a @solana/kit signer pays in %s mode, then it signs once and the balances move by the price',
    async (mode) => {
      const keypair = await funded();
      const kit = await kitSignerOf(keypair);
      const before = await balances(keypair);
      const payer = createPayer({ signer: kit, rpcUrls: rpcUrls(), mode });
      expect((await payer.fetch(keywords())).status).toBe(200);
      expect(kit.signed()).toBe(1);
      expect(await payer.address()).toBe(keypair.publicKey.toBase58());
      expect(before.payer - (await balances(keypair)).payer).toBe(50_000n);
    },
  );

  it.each(modes)(
    'When a cap refuses a payment in %s mode, then the wallet adapter is never asked to sign and no balance moves',
    async (mode) => {
      const keypair = await funded();
      const adapter = adapterOf(keypair);
      const before = await balances(keypair);
      const perPayment = createPayer({
        signer: adapter,
        rpcUrls: rpcUrls(),
        mode,
        limits: { maxPerPayment: '0.04' },
      });
      await expect(perPayment.fetch(keywords())).rejects.toMatchObject({ limit: 'per_payment' });
      expect(adapter.signed()).toBe(0);
      expect(await balances(keypair)).toEqual(before);

      // A rolling cap with room for one payment: the second is refused without a signature.
      const hourly = createPayer({
        signer: adapter,
        rpcUrls: rpcUrls(),
        mode,
        limits: { maxPerHour: '0.06' },
      });
      expect((await hourly.fetch(keywords())).status).toBe(200);
      expect(adapter.signed()).toBe(1);
      const error = await hourly.fetch(keywords()).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SpendLimitExceededError);
      expect(error).toMatchObject({ limit: 'per_hour', spentAtomic: 50_000n });
      expect(adapter.signed()).toBe(1);
      expect(before.payer - (await balances(keypair)).payer).toBe(50_000n);
    },
  );

  it('When a wallet adapter is not connected at the first payment, then the call fails with nothing signed, and pays once it is connected', async () => {
    const keypair = await funded();
    const adapter = adapterOf(keypair);
    const wallet: WalletAdapterSigner = { publicKey: null, signTransaction: adapter.signTransaction };
    const payer = createPayer({ signer: wallet, rpcUrls: rpcUrls() });
    await expect(payer.fetch(keywords())).rejects.toThrow(/not connected/);
    wallet.publicKey = keypair.publicKey;
    expect((await payer.fetch(keywords())).status).toBe(200);
    expect(adapter.signed()).toBe(1);
  });

  it('When the internal client pays with a wallet adapter (fetchWithPayment), then both schemes pay and its per-payment cap refuses before the adapter is asked', async () => {
    const keypair = await funded();
    const adapter = adapterOf(keypair);
    const before = await balances(keypair);
    for (const mode of modes) {
      const { response, payment } = await internal.fetchWithPayment(keywords(), {
        signer: adapter,
        rpcUrls: rpcUrls(),
        mode,
      });
      expect(response.status).toBe(200);
      expect(payment).toMatchObject({ mode, payer: keypair.publicKey.toBase58(), amountAtomic: 50_000n });
    }
    expect(adapter.signed()).toBe(2);
    for (const mode of modes) {
      await expect(
        internal.fetchWithPayment(keywords(), {
          signer: adapter,
          rpcUrls: rpcUrls(),
          mode,
          maxAmountAtomic: 40_000n,
        }),
      ).rejects.toBeInstanceOf(internal.SpendCapExceededError);
    }
    expect(adapter.signed()).toBe(2);
    expect(before.payer - (await balances(keypair)).payer).toBe(100_000n);
  });

  it('When the internal client throws, then it is the package error a caller catches (one set of classes, from client-core)', async () => {
    expect(X402ClientError).toBe(core.X402ClientError);
    expect(PaymentRefusedError).toBe(internal.PaymentRefusedError);
    expect(InsufficientFundsError).toBe(internal.InsufficientFundsError);
    const poor = Keypair.generate();
    await server.localnet.fund(poor.publicKey.toBase58(), { network: 'solana', usdcAtomic: 10_000n });
    const error = await createPayer({ signer: adapterOf(poor), rpcUrls: rpcUrls(), mode: 'push' })
      .fetch(keywords())
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InsufficientFundsError);
    expect(error).toMatchObject({ code: 'insufficient_funds', kind: 'token_balance', required: 50_000n });
  });
});
