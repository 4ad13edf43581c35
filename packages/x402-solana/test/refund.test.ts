import { Connection, Keypair, PublicKey } from '@solana/web3.js';
import { callRpc, spawnLocalnet, type Localnet } from '@repo/solana-localnet';
import { buildSignature } from '@repo/x402-core/testing';
import { RefundSendError, RefundSender, type RefundState } from '../src/index';
import { getAssociatedTokenAddressSync } from '../src/deps';

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

async function usdcOf(owner: string): Promise<bigint> {
  const ata = getAssociatedTokenAddressSync(
    new PublicKey(localnet.networks.solana.mint),
    new PublicKey(owner),
  );
  const info = await connection.getAccountInfo(ata);
  if (!info) return 0n;
  return BigInt((await connection.getTokenAccountBalance(ata)).value.amount);
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
  it('When a refund is built, sent and sent again, then the payer gets the amount once, into a token account created for it, with a memo naming the payment', async () => {
    const payer = Keypair.generate().publicKey.toBase58();
    const paymentSignature = buildSignature();
    const walletBefore = await sender.balance();
    const refund = await sender.build({ paymentSignature, payer, amountAtomic: 15_000_000n });
    expect(await sender.status(refund)).toEqual({ state: 'pending' });
    await sender.send(refund);
    await sender.send(refund);
    expect(await settled(refund.signature, refund.lastValidBlockHeight)).toEqual({
      state: 'confirmed',
      slot: expect.any(Number),
    });
    expect(await usdcOf(payer)).toBe(15_000_000n);
    expect(await sender.balance()).toBe(walletBefore - 15_000_000n);
    const tx = await connection.getParsedTransaction(refund.signature, {
      commitment: 'confirmed',
      maxSupportedTransactionVersion: 0,
    });
    const memo = tx?.transaction.message.instructions.find(
      (ix) => 'program' in ix && ix.program === 'spl-memo',
    );
    expect(memo && 'parsed' in memo ? memo.parsed : undefined).toBe(`x402 refund ${paymentSignature}`);
  });

  it('When the payer already has a token account, then the refund adds to it', async () => {
    const payer = Keypair.generate();
    await localnet.fund(payer.publicKey.toBase58(), { network: 'solana', usdcAtomic: 1_000n });
    const refund = await sender.build({
      paymentSignature: buildSignature(),
      payer: payer.publicKey.toBase58(),
      amountAtomic: 100_000n,
    });
    await sender.send(refund);
    expect((await settled(refund.signature, refund.lastValidBlockHeight)).state).toBe('confirmed');
    expect(await usdcOf(payer.publicKey.toBase58())).toBe(101_000n);
  });

  it('When a built refund is never sent and its blockhash expires, then its status is expired and sending it is refused', async () => {
    const refund = await sender.build({
      paymentSignature: buildSignature(),
      payer: Keypair.generate().publicKey.toBase58(),
      amountAtomic: 1n,
    });
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
    const payer = Keypair.generate().publicKey.toBase58();
    const refund = await senderFor(poor).build({
      paymentSignature: buildSignature(),
      payer,
      amountAtomic: 11n,
    });
    const error = await senderFor(poor)
      .send(refund)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(RefundSendError);
    expect((error as RefundSendError).kind).toBe('refused');
    expect(await sender.status(refund)).toEqual({ state: 'pending' });
    expect(await usdcOf(payer)).toBe(0n);
  });

  it('When the RPC cannot be reached, then sending fails as unknown (the refund may have been forwarded)', async () => {
    const offline = new RefundSender({
      network: 'solana',
      rpcUrl: 'http://127.0.0.1:9',
      asset: localnet.networks.solana.mint,
      refundSecretKey: localnet.refundWallet.keypair.secretKey,
      rpcTimeoutMs: 1000,
    });
    const refund = await sender.build({
      paymentSignature: buildSignature(),
      payer: Keypair.generate().publicKey.toBase58(),
      amountAtomic: 1n,
    });
    await expect(offline.send(refund)).rejects.toEqual(expect.objectContaining({ kind: 'unknown' }));
  });
});
