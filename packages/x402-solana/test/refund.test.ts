import { randomInt } from 'node:crypto';
import {
  Connection,
  Keypair,
  PublicKey,
  SystemProgram,
  Transaction,
  TransactionInstruction,
} from '@solana/web3.js';
import {
  callRpc,
  LAMPORTS_PER_SIGNATURE,
  sendUsdcTransfer,
  spawnLocalnet,
  waitForSignature,
  type Localnet,
} from '@repo/solana-localnet';
import { buildSignature } from '@repo/x402-core/testing';
import {
  RefundSendError,
  RefundSender,
  type RefundOrder,
  type RefundState,
  type SignedRefund,
} from '../src/index';
import { getAssociatedTokenAddressSync, TOKEN_PROGRAM_ID } from '../src/deps';

let localnet: Localnet;
let connection: Connection;
let sender: RefundSender;

beforeAll(async () => {
  localnet = await spawnLocalnet({ port: 0 });
  connection = new Connection(localnet.networks.solana.rpcUrl, 'confirmed');
  sender = senderFor(localnet.refundWallet.keypair);
});

afterAll(async () => {
  await localnet?.close();
});

function senderFor(wallet: Keypair): RefundSender {
  return new RefundSender({
    network: 'solana',
    rpcUrl: localnet.networks.solana.rpcUrl,
    asset: localnet.networks.solana.mint,
    refundSecretKey: wallet.secretKey,
  });
}

const mint = (): PublicKey => new PublicKey(localnet.networks.solana.mint);
const ataOf = (owner: PublicKey): PublicKey => getAssociatedTokenAddressSync(mint(), owner);

/** USDC (atomic units) in a token account; 0 when it does not exist. */
async function usdcIn(account: PublicKey): Promise<bigint> {
  const info = await connection.getAccountInfo(account);
  if (!info) return 0n;
  return BigInt((await connection.getTokenAccountBalance(account)).value.amount);
}

async function lamportsOf(account: string): Promise<number> {
  return connection.getBalance(new PublicKey(account), 'confirmed');
}

/** A wallet of its own with SOL and `usdcAtomic` in its associated token account. */
async function fundedPayer(usdcAtomic: bigint): Promise<Keypair> {
  const payer = Keypair.generate();
  await localnet.fund(payer.publicKey.toBase58(), { network: 'solana', usdcAtomic });
  return payer;
}

/** Pays `amountAtomic` into the merchant account from `source` (default the payer's ATA). */
async function pay(payer: Keypair, amountAtomic: bigint, source?: PublicKey): Promise<RefundOrder> {
  const paymentSignature = await sendUsdcTransfer({
    rpcUrl: localnet.networks.solana.rpcUrl,
    payer,
    mint: localnet.networks.solana.mint,
    destinationTokenAccount: localnet.networks.solana.merchantTokenAccount,
    amountAtomic,
    ...(source ? { sourceTokenAccount: source.toBase58() } : {}),
    computeUnitPriceMicroLamports: randomInt(1, 2 ** 20),
  });
  return {
    paymentSignature,
    payer: payer.publicKey.toBase58(),
    amountAtomic,
    payTo: localnet.networks.solana.merchantTokenAccount,
  };
}

async function sendInstructions(instructions: TransactionInstruction[], signers: Keypair[]): Promise<void> {
  // A fresh blockhash: a test here expires every blockhash the ledger knows.
  const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash('confirmed');
  const [feePayer] = signers;
  if (!feePayer) throw new Error('no signer');
  const tx = new Transaction({ feePayer: feePayer.publicKey, blockhash, lastValidBlockHeight }).add(
    ...instructions,
  );
  tx.sign(...signers);
  const signature = await connection.sendRawTransaction(tx.serialize());
  const status = await waitForSignature(connection, signature);
  expect(status.err).toBeNull();
}

/** SPL Token `CloseAccount`: the remaining rent goes to `destination`. */
function closeAccount(account: PublicKey, destination: PublicKey, owner: PublicKey): TransactionInstruction {
  return new TransactionInstruction({
    programId: TOKEN_PROGRAM_ID,
    keys: [
      { pubkey: account, isSigner: false, isWritable: true },
      { pubkey: destination, isSigner: false, isWritable: true },
      { pubkey: owner, isSigner: true, isWritable: false },
    ],
    data: Buffer.from([9]),
  });
}

/** SPL Token `SetAuthority` of type `AccountOwner` (2) to `newOwner`. */
function setOwner(account: PublicKey, owner: PublicKey, newOwner: PublicKey): TransactionInstruction {
  return new TransactionInstruction({
    programId: TOKEN_PROGRAM_ID,
    keys: [
      { pubkey: account, isSigner: false, isWritable: true },
      { pubkey: owner, isSigner: true, isWritable: false },
    ],
    data: Buffer.concat([Buffer.from([6, 2, 1]), newOwner.toBuffer()]),
  });
}

/** A token account of the mint for `owner` at a fresh keypair address (not the associated one). */
async function plainTokenAccount(owner: Keypair): Promise<PublicKey> {
  const account = Keypair.generate();
  const space = 165;
  await sendInstructions(
    [
      SystemProgram.createAccount({
        fromPubkey: owner.publicKey,
        newAccountPubkey: account.publicKey,
        lamports: await connection.getMinimumBalanceForRentExemption(space),
        space,
        programId: TOKEN_PROGRAM_ID,
      }),
      // InitializeAccount3: [18, owner].
      new TransactionInstruction({
        programId: TOKEN_PROGRAM_ID,
        keys: [
          { pubkey: account.publicKey, isSigner: false, isWritable: true },
          { pubkey: mint(), isSigner: false, isWritable: false },
        ],
        data: Buffer.concat([Buffer.from([18]), owner.publicKey.toBuffer()]),
      }),
    ],
    [owner, account],
  );
  return account.publicKey;
}

function signed(built: Awaited<ReturnType<RefundSender['build']>>): SignedRefund {
  if (built.kind !== 'signed')
    throw new Error(`expected a signed refund, got ${built.reason}: ${built.detail}`);
  return built.refund;
}

/** Asks for the status until it is not `pending` (the ledger lands a sent transaction at once). */
async function settled(signature: string, lastValidBlockHeight: number): Promise<RefundState> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const state = await sender.status({ signature, lastValidBlockHeight });
    if (state.state !== 'pending' || Date.now() > deadline) return state;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('RefundSender', () => {
  it('When a payment is refunded, sent and sent again, then the amount goes back once into the account it was paid from, the refund wallet pays only the fee, and a memo names the payment', async () => {
    const payer = await fundedPayer(20_000_000n);
    const order = await pay(payer, 15_000_000n);
    const source = ataOf(payer.publicKey);
    expect(await usdcIn(source)).toBe(5_000_000n);
    const walletUsdc = await sender.balance();
    const walletLamports = await lamportsOf(sender.wallet);

    const refund = signed(await sender.build(order));
    expect(refund.destination).toBe(source.toBase58());
    expect(await sender.status(refund)).toEqual({ state: 'pending' });
    await sender.send(refund);
    await sender.send(refund);
    expect(await settled(refund.signature, refund.lastValidBlockHeight)).toEqual({
      state: 'confirmed',
      slot: expect.any(Number),
    });
    expect(await usdcIn(source)).toBe(20_000_000n);
    expect(await sender.balance()).toBe(walletUsdc - 15_000_000n);
    expect(await lamportsOf(sender.wallet)).toBe(walletLamports - LAMPORTS_PER_SIGNATURE);
    const tx = await connection.getParsedTransaction(refund.signature, {
      commitment: 'confirmed',
      maxSupportedTransactionVersion: 0,
    });
    const programs = tx?.transaction.message.instructions.map((ix) => ('program' in ix ? ix.program : '?'));
    expect(programs).toEqual(['spl-token', 'spl-memo']);
    const memo = tx?.transaction.message.instructions.find(
      (ix) => 'program' in ix && ix.program === 'spl-memo',
    );
    expect(memo && 'parsed' in memo ? memo.parsed : undefined).toBe(`x402 refund ${order.paymentSignature}`);
  });

  it('When the payment came from a token account other than the associated one, then the refund goes back there and no associated account is created', async () => {
    // SOL only: this payer has no associated token account.
    const payer = Keypair.generate();
    await waitForSignature(connection, await connection.requestAirdrop(payer.publicKey, 1_000_000_000));
    const own = await plainTokenAccount(payer);
    // Fill it from a funded wallet, then pay from it.
    const funder = await fundedPayer(1_000_000n);
    await sendUsdcTransfer({
      rpcUrl: localnet.networks.solana.rpcUrl,
      payer: funder,
      mint: localnet.networks.solana.mint,
      destinationTokenAccount: own.toBase58(),
      amountAtomic: 1_000_000n,
    });
    const order = await pay(payer, 400_000n, own);

    const refund = signed(await sender.build(order));
    expect(refund.destination).toBe(own.toBase58());
    await sender.send(refund);
    expect((await settled(refund.signature, refund.lastValidBlockHeight)).state).toBe('confirmed');
    expect(await usdcIn(own)).toBe(1_000_000n);
    expect(await connection.getAccountInfo(ataOf(payer.publicKey))).toBeNull();
  });

  it('When the payer closed the account it paid from, then the refund is unclaimable (source_account_closed) and nothing is built, sent or created', async () => {
    const payer = await fundedPayer(25_000_000n);
    const order = await pay(payer, 25_000_000n);
    const source = ataOf(payer.publicKey);
    await sendInstructions([closeAccount(source, payer.publicKey, payer.publicKey)], [payer]);
    expect(await connection.getAccountInfo(source)).toBeNull();
    const walletLamports = await lamportsOf(sender.wallet);
    const walletUsdc = await sender.balance();

    expect(await sender.build(order)).toEqual({
      kind: 'unclaimable',
      reason: 'source_account_closed',
      destination: source.toBase58(),
      detail: expect.stringContaining(source.toBase58()),
    });
    expect(await connection.getAccountInfo(source)).toBeNull();
    expect(await lamportsOf(sender.wallet)).toBe(walletLamports);
    expect(await sender.balance()).toBe(walletUsdc);
  });

  it('When the account the payment came from now belongs to another wallet, then the refund is unclaimable (source_account_changed)', async () => {
    const payer = await fundedPayer(2_000_000n);
    const order = await pay(payer, 1_000_000n);
    const source = ataOf(payer.publicKey);
    await sendInstructions([setOwner(source, payer.publicKey, Keypair.generate().publicKey)], [payer]);

    expect(await sender.build(order)).toEqual(
      expect.objectContaining({
        kind: 'unclaimable',
        reason: 'source_account_changed',
        destination: source.toBase58(),
      }),
    );
  });

  it('When the payment transaction moves no such amount from the payer into the merchant account, then the refund is unclaimable (payment_transfer_not_found)', async () => {
    const payer = await fundedPayer(2_000_000n);
    const order = await pay(payer, 1_000_000n);
    for (const wrong of [
      { ...order, amountAtomic: 999_999n },
      { ...order, payTo: ataOf(payer.publicKey).toBase58() },
      { ...order, payer: Keypair.generate().publicKey.toBase58() },
    ]) {
      expect(await sender.build(wrong)).toEqual(
        expect.objectContaining({
          kind: 'unclaimable',
          reason: 'payment_transfer_not_found',
          destination: null,
        }),
      );
    }
  });

  it('When the RPC does not know the payment transaction, then building fails (to be tried again), not unclaimable', async () => {
    const payer = Keypair.generate().publicKey.toBase58();
    await expect(
      sender.build({
        paymentSignature: buildSignature(),
        payer,
        amountAtomic: 1n,
        payTo: localnet.networks.solana.merchantTokenAccount,
      }),
    ).rejects.toThrow(/not known to the RPC/);
  });

  it('When a built refund is never sent and its blockhash expires, then its status is expired and sending it is refused', async () => {
    const refund = signed(await sender.build(await pay(await fundedPayer(1_000n), 1n)));
    await callRpc(localnet.networks.solana.rpcUrl, 'localnet_expireBlockhashes');
    const height = await connection.getBlockHeight('confirmed');
    expect(await sender.status({ signature: refund.signature, lastValidBlockHeight: height - 1 })).toEqual({
      state: 'expired',
    });
    await expect(sender.send(refund)).rejects.toEqual(expect.objectContaining({ kind: 'refused' }));
  });

  it('When the refund wallet holds too little USDC, then sending is refused before it reaches the chain and nothing moves', async () => {
    const poor = Keypair.generate();
    await localnet.fund(poor.publicKey.toBase58(), { network: 'solana', usdcAtomic: 10n });
    const payer = await fundedPayer(11n);
    const order = await pay(payer, 11n);
    const refund = signed(await senderFor(poor).build(order));
    const error = await senderFor(poor)
      .send(refund)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(RefundSendError);
    expect((error as RefundSendError).kind).toBe('refused');
    expect(await sender.status(refund)).toEqual({ state: 'pending' });
    expect(await usdcIn(ataOf(payer.publicKey))).toBe(0n);
  });

  it('When the RPC cannot be reached, then sending fails as unknown (the refund may have been forwarded)', async () => {
    const offline = new RefundSender({
      network: 'solana',
      rpcUrl: 'http://127.0.0.1:9',
      asset: localnet.networks.solana.mint,
      refundSecretKey: localnet.refundWallet.keypair.secretKey,
      rpcTimeoutMs: 1000,
    });
    const refund = signed(await sender.build(await pay(await fundedPayer(1_000n), 1n)));
    await expect(offline.send(refund)).rejects.toEqual(expect.objectContaining({ kind: 'unknown' }));
  });
});
