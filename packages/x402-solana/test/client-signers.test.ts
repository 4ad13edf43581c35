import { Connection, Keypair, PublicKey, type Transaction, type VersionedTransaction } from '@solana/web3.js';
import {
  createKeyPairSignerFromBytes,
  type TransactionModifyingSigner,
  type TransactionPartialSigner,
} from '@solana/kit';
import { spawnLocalnet, type Localnet } from '@repo/solana-localnet';
import type { PaymentRequirements } from '@repo/schemas';
import { associatedTokenAccountOf, ExactSvmSettler } from '../src/index';
import {
  createOfficialPayment,
  payForRequirements,
  resolvePaymentSigner,
  X402ClientError,
  type WalletAdapterSigner,
} from '../src/client';

// The paying client with each kind of signer (README "The client", "Signers") against the local
// ledger: push mode sends the transfer, the official scheme's payment is settled by the official
// facilitator (ExactSvmSettler); balances are read on the ledger.
jest.setTimeout(60_000);

let localnet: Localnet;
let connection: Connection;
let settler: ExactSvmSettler;

beforeAll(async () => {
  localnet = await spawnLocalnet({ port: 0 });
  const net = localnet.networks.solana;
  connection = new Connection(net.rpcUrl, 'confirmed');
  settler = new ExactSvmSettler({
    network: 'solana',
    rpcUrl: net.rpcUrl,
    asset: net.mint,
    payTo: net.merchantOwner,
    feePayerSecretKey: localnet.feePayer.keypair.secretKey,
  });
});

afterAll(async () => {
  await settler?.close();
  await localnet?.close();
});

/** A new wallet with 1 USDC and SOL on `solana`. */
async function funded(): Promise<Keypair> {
  const keypair = Keypair.generate();
  await localnet.fund(keypair.publicKey.toBase58(), { network: 'solana', usdcAtomic: 1_000_000n });
  return keypair;
}

async function usdcOf(account: string): Promise<bigint> {
  return BigInt((await connection.getTokenAccountBalance(new PublicKey(account))).value.amount);
}

async function balances(owner: Keypair): Promise<{ payer: bigint; merchant: bigint }> {
  const net = localnet.networks.solana;
  return {
    payer: await usdcOf(associatedTokenAccountOf(owner.publicKey.toBase58(), net.mint)),
    merchant: await usdcOf(net.merchantTokenAccount),
  };
}

/** A wallet adapter over `keypair` that counts its signing requests and what it was given. */
function adapterOf(keypair: Keypair): WalletAdapterSigner & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    publicKey: keypair.publicKey,
    signTransaction<T extends Transaction | VersionedTransaction>(tx: T): Promise<T> {
      const versioned = 'version' in tx;
      calls.push(versioned ? 'versioned' : 'legacy');
      if (versioned) tx.sign([keypair]);
      else tx.partialSign(keypair);
      return Promise.resolve(tx);
    },
  };
}

function pushRequirements(amountAtomic: bigint): PaymentRequirements {
  const net = localnet.networks.solana;
  return {
    scheme: 'exact',
    network: 'solana',
    maxAmountRequired: amountAtomic.toString(),
    asset: net.mint,
    payTo: net.merchantTokenAccount,
    resource: 'http://127.0.0.1/paid',
    description: '',
    mimeType: 'application/json',
    maxTimeoutSeconds: 60,
  };
}

describe('Paying with a signer that is not a keypair', () => {
  it('When a wallet adapter pays in push mode, then it is asked once with a legacy transaction, the transfer lands signed by its wallet and the balances move by the price', async () => {
    const keypair = await funded();
    const adapter = adapterOf(keypair);
    const before = await balances(keypair);
    const signature = await payForRequirements({
      requirements: pushRequirements(70_000n),
      signer: adapter,
      rpcUrl: localnet.networks.solana.rpcUrl,
    });
    expect(adapter.calls).toEqual(['legacy']);
    const landed = await connection.getTransaction(signature, {
      commitment: 'confirmed',
      maxSupportedTransactionVersion: 0,
    });
    expect(landed?.meta?.err).toBeNull();
    expect(landed?.transaction.message.staticAccountKeys[0]?.toBase58()).toBe(keypair.publicKey.toBase58());
    const after = await balances(keypair);
    expect(before.payer - after.payer).toBe(70_000n);
    expect(after.merchant - before.merchant).toBe(70_000n);
  });

  it('When a @solana/kit partial signer pays in push mode, then the transfer lands and the balances move by the price', async () => {
    const keypair = await funded();
    const kit = await createKeyPairSignerFromBytes(keypair.secretKey);
    let asked = 0;
    const counting: TransactionPartialSigner = {
      address: kit.address,
      signTransactions: (transactions, config) => {
        asked++;
        return kit.signTransactions(transactions, config);
      },
    };
    const before = await balances(keypair);
    await payForRequirements({
      requirements: pushRequirements(30_000n),
      signer: counting,
      rpcUrl: localnet.networks.solana.rpcUrl,
    });
    expect(asked).toBe(1);
    expect(before.payer - (await balances(keypair)).payer).toBe(30_000n);
  });

  it('When a wallet adapter answers without signing, then signature_missing is thrown before anything is sent and no balance moves', async () => {
    const keypair = await funded();
    const before = await balances(keypair);
    let asked = 0;
    const unsigned: WalletAdapterSigner = {
      publicKey: keypair.publicKey,
      signTransaction: <T extends Transaction | VersionedTransaction>(tx: T): Promise<T> => {
        asked++;
        return Promise.resolve(tx);
      },
    };
    const error = await payForRequirements({
      requirements: pushRequirements(10_000n),
      signer: unsigned,
      rpcUrl: localnet.networks.solana.rpcUrl,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(X402ClientError);
    expect(error).toMatchObject({ code: 'signature_missing' });
    expect(asked).toBe(1);
    expect(await balances(keypair)).toEqual(before);
  });

  it('When a wallet adapter answers a signature that does not verify, then signature_missing is thrown and no balance moves', async () => {
    const keypair = await funded();
    const before = await balances(keypair);
    const adapter: WalletAdapterSigner = {
      publicKey: keypair.publicKey,
      signTransaction: <T extends Transaction | VersionedTransaction>(tx: T): Promise<T> => {
        if (!('version' in tx)) tx.addSignature(keypair.publicKey, Buffer.alloc(64, 7));
        return Promise.resolve(tx);
      },
    };
    await expect(
      payForRequirements({
        requirements: pushRequirements(10_000n),
        signer: adapter,
        rpcUrl: localnet.networks.solana.rpcUrl,
      }),
    ).rejects.toMatchObject({ code: 'signature_missing' });
    expect(await balances(keypair)).toEqual(before);
  });

  it('When a wallet adapter pays with the official scheme, then it is asked once with a versioned transaction, the official facilitator settles it and the balances move by the price', async () => {
    const keypair = await funded();
    const adapter = adapterOf(keypair);
    const before = await balances(keypair);
    const requirement = settler.requirements(40_000n, 60);
    const payment = await createOfficialPayment({
      requirement,
      signer: adapter,
      rpcUrl: localnet.networks.solana.rpcUrl,
    });
    expect(adapter.calls).toEqual(['versioned']);
    expect(payment.payer).toBe(keypair.publicKey.toBase58());
    const transaction = (payment.payload.payload as { transaction: string }).transaction;
    expect((await settler.signatureOf(transaction)).payer).toBe(keypair.publicKey.toBase58());
    const outcome = await settler.settle(transaction, requirement);
    expect(outcome).toMatchObject({ ok: true, payer: keypair.publicKey.toBase58() });
    const after = await balances(keypair);
    expect(before.payer - after.payer).toBe(40_000n);
    expect(after.merchant - before.merchant).toBe(40_000n);
  });

  it('When a @solana/kit signer (the official ClientSvmSigner) pays with the official scheme, then it is used as it is and the settlement moves the price', async () => {
    const keypair = await funded();
    const kit = await createKeyPairSignerFromBytes(keypair.secretKey);
    expect(await resolvePaymentSigner(kit).kitSigner()).toBe(kit);
    const before = await balances(keypair);
    const requirement = settler.requirements(20_000n, 60);
    const payment = await createOfficialPayment({
      requirement,
      signer: kit,
      rpcUrl: localnet.networks.solana.rpcUrl,
    });
    const outcome = await settler.settle(
      (payment.payload.payload as { transaction: string }).transaction,
      requirement,
    );
    expect(outcome).toMatchObject({ ok: true });
    expect(before.payer - (await balances(keypair)).payer).toBe(20_000n);
  });

  it('When a @solana/kit modifying signer (a Wallet Standard signer) pays, then push mode and the official scheme both move the price', async () => {
    const keypair = await funded();
    const kit = await createKeyPairSignerFromBytes(keypair.secretKey);
    let asked = 0;
    const modifying: TransactionModifyingSigner = {
      address: kit.address,
      modifyAndSignTransactions: async (transactions) => {
        asked++;
        const signatures = await kit.signTransactions(
          transactions as Parameters<TransactionPartialSigner['signTransactions']>[0],
        );
        // kit's size and lifetime brands are type-level only; the transactions are those given.
        return transactions.map((transaction, i) => ({
          ...transaction,
          signatures: { ...transaction.signatures, ...signatures[i] },
        })) as unknown as Awaited<ReturnType<TransactionModifyingSigner['modifyAndSignTransactions']>>;
      },
    };
    const before = await balances(keypair);
    await payForRequirements({
      requirements: pushRequirements(15_000n),
      signer: modifying,
      rpcUrl: localnet.networks.solana.rpcUrl,
    });
    const requirement = settler.requirements(25_000n, 60);
    const payment = await createOfficialPayment({
      requirement,
      signer: modifying,
      rpcUrl: localnet.networks.solana.rpcUrl,
    });
    const outcome = await settler.settle(
      (payment.payload.payload as { transaction: string }).transaction,
      requirement,
    );
    expect(outcome).toMatchObject({ ok: true, payer: keypair.publicKey.toBase58() });
    expect(asked).toBe(2);
    const after = await balances(keypair);
    expect(before.payer - after.payer).toBe(40_000n);
    expect(after.merchant - before.merchant).toBe(40_000n);
  });

  it('When the signer has no usable shape, then a TypeError says what is accepted; a disconnected adapter is refused', () => {
    expect(() => resolvePaymentSigner({ address: 'x' } as never)).toThrow(TypeError);
    expect(() =>
      resolvePaymentSigner({ publicKey: null, signTransaction: (tx) => Promise.resolve(tx) }),
    ).toThrow(/not connected/);
  });
});
