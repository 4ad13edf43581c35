import { randomBytes, randomInt } from 'node:crypto';
import {
  ComputeBudgetProgram,
  Connection,
  Keypair,
  PublicKey,
  Transaction,
  TransactionInstruction,
} from '@solana/web3.js';
import {
  bs58,
  createTransferCheckedInstruction,
  fundWallet,
  getAssociatedTokenAddressSync,
  waitForSignature,
} from '@repo/solana-localnet';
import { encodePaymentHeader } from '@repo/x402-core';
import type { PaymentEvent } from '@repo/x402-express';
import { loadConfig } from '../src/config';
import { buildReport, startHarness, startReplica, type Harness, type Replica } from './support/harness';

// The push verifier's balance check (packages/x402-solana, "Verification order": the merchant token
// account's post - pre balance must equal the price), through the HTTP API as an agent pays. The
// refused transactions below carry a transferChecked of exactly the price, of the right mint, into the
// merchant's token account, with this request's reference: only the balance delta tells that the
// merchant was not paid.
//
// Moving tokens out of the merchant's account takes its owner or a delegate it approved. The local
// ledger's merchant key stays inside the ledger, so this suite runs a replica of market-intel whose
// merchant is a wallet the test holds, and that wallet approves a delegate (a sweeping bot, say).
// Whoever holds that delegate can then present such a transaction.

const GAPS = '/api/v1/scout/gaps?sector=fintech';
const GAPS_ENDPOINT = 'GET /api/v1/scout/gaps';
const TOKEN_PROGRAM = new PublicKey('TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA');
/** SPL Token's `Approve` instruction (index 4): `[4, amount u64 LE]`, accounts source, delegate, owner. */
const APPROVE = 4;

let h: Harness;
let replica: Replica;
let connection: Connection;
/** The replica's merchant: a wallet this suite holds, with its USDC token account (the v1 `payTo`). */
const merchant = Keypair.generate();
let merchantTokenAccount: PublicKey;
/** A wallet the merchant approved as delegate of its USDC token account. */
const delegate = Keypair.generate();
let delegateTokenAccount: PublicKey;
let mint: PublicKey;
const events: PaymentEvent[] = [];

beforeAll(async () => {
  h = await startHarness('market_intel_payment_guards_test');
  await h.reports.importReport(buildReport(), 'import');
  const rpcUrl = h.rpcUrls.solana;
  connection = new Connection(rpcUrl, 'confirmed');
  mint = new PublicKey(h.ledger.networks.solana.mint);
  const merchantFunds = await fundWallet({
    rpcUrl,
    owner: merchant.publicKey.toBase58(),
    usdcAtomic: 1_000_000n,
  });
  merchantTokenAccount = new PublicKey(merchantFunds.tokenAccount);
  const delegateFunds = await fundWallet({
    rpcUrl,
    owner: delegate.publicKey.toBase58(),
    usdcAtomic: 1_000_000n,
  });
  delegateTokenAccount = new PublicKey(delegateFunds.tokenAccount);
  expect(merchantTokenAccount.equals(getAssociatedTokenAddressSync(mint, merchant.publicKey))).toBe(true);

  const amount = Buffer.alloc(8);
  amount.writeBigUInt64LE(1_000_000n);
  await send(
    [
      new TransactionInstruction({
        programId: TOKEN_PROGRAM,
        keys: [
          { pubkey: merchantTokenAccount, isSigner: false, isWritable: true },
          { pubkey: delegate.publicKey, isSigner: false, isWritable: false },
          { pubkey: merchant.publicKey, isSigner: true, isWritable: false },
        ],
        data: Buffer.concat([Buffer.from([APPROVE]), amount]),
      }),
    ],
    [merchant],
  );

  replica = await startReplica(
    loadConfig({
      ...h.env,
      MERCHANT_TOKEN_ACCOUNT: merchantTokenAccount.toBase58(),
      MERCHANT_WALLET: merchant.publicKey.toBase58(),
      // Request-bound references, required: the payments below carry this request's.
      X402_REFERENCE_SECRET: randomBytes(32).toString('base64'),
      X402_REQUIRE_REFERENCE: 'true',
      INSTANCE_ID: `test-guards-${process.pid}`,
    }),
    (event) => events.push(event),
  );
}, 120_000);

afterAll(async () => {
  await replica?.close();
  await h?.close();
});

/** Signs `instructions` with `signers` (the first pays the fee), sends them and waits until they land. */
async function send(instructions: TransactionInstruction[], signers: Keypair[]): Promise<string> {
  const [feePayer] = signers;
  if (!feePayer) throw new Error('a fee payer is needed');
  const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash();
  const tx = new Transaction({ feePayer: feePayer.publicKey, blockhash, lastValidBlockHeight }).add(
    // A distinct limit makes every transaction unique.
    ComputeBudgetProgram.setComputeUnitLimit({ units: 100_000 + randomInt(50_000) }),
    ...instructions,
  );
  tx.sign(...signers);
  if (!tx.signature) throw new Error('the transaction was not signed');
  const signature = bs58.encode(tx.signature);
  await connection.sendRawTransaction(tx.serialize());
  const status = await waitForSignature(connection, signature);
  expect(status.err).toBeNull();
  return signature;
}

/** What the replica's 402 asks for the gaps endpoint: the price, the `payTo` and this request's reference. */
async function challenge(): Promise<{ price: bigint; reference: PublicKey }> {
  const res = await fetch(replica.baseUrl + GAPS);
  expect(res.status).toBe(402);
  const body = (await res.json()) as {
    accepts: {
      network: string;
      maxAmountRequired: string;
      payTo: string;
      asset: string;
      extra?: { reference?: string };
    }[];
  };
  const offer = body.accepts.find((a) => a.network === 'solana');
  expect(offer).toMatchObject({ payTo: merchantTokenAccount.toBase58(), asset: mint.toBase58() });
  if (!offer?.extra?.reference) throw new Error('the 402 carries no reference');
  return { price: BigInt(offer.maxAmountRequired), reference: new PublicKey(offer.extra.reference) };
}

/** A transferChecked of `amount` USDC signed by the delegate, with `reference` as a read-only account when given. */
function transferChecked(
  source: PublicKey,
  destination: PublicKey,
  amount: bigint,
  reference?: PublicKey,
): TransactionInstruction {
  const ix = createTransferCheckedInstruction(source, mint, destination, delegate.publicKey, amount, 6);
  if (reference) ix.keys.push({ pubkey: reference, isSigner: false, isWritable: false });
  return ix;
}

async function balanceOf(account: PublicKey): Promise<bigint> {
  return BigInt((await connection.getTokenAccountBalance(account)).value.amount);
}

async function paymentRow(signature: string): Promise<unknown[]> {
  return h.db.$queryRawUnsafe(
    'SELECT status, endpoint, claim_token, payer, response_status FROM x402_payments WHERE signature = $1',
    signature,
  );
}

/** Presents `signature` for the gaps endpoint of the replica and checks it was refused and nothing served. */
async function expectRefusedUnconsumed(signature: string, price: bigint): Promise<void> {
  events.length = 0;
  const res = await fetch(replica.baseUrl + GAPS, {
    headers: { 'X-PAYMENT': encodePaymentHeader('solana', signature) },
  });
  const body = (await res.json()) as Record<string, unknown>;
  expect({ status: res.status, body }).toMatchObject({
    status: 400,
    body: {
      code: 'amount_mismatch',
      error: expect.stringMatching(/balance/),
      details: { expected: price.toString(), actual: '0' },
    },
  });
  // Nothing was served: no data, no payment receipt.
  expect(body).not.toHaveProperty('gaps');
  expect(res.headers.get('x-payment-response')).toBeNull();
  expect(res.headers.get('payment-response')).toBeNull();
  expect(events.map((e) => e.type)).toEqual(['rejected']);
  // Not consumed: the row only remembers the first sighting, nothing holds it, nothing is recorded.
  expect(await paymentRow(signature)).toEqual([
    { status: 'processing', endpoint: GAPS_ENDPOINT, claim_token: null, payer: null, response_status: null },
  ]);
}

describe('x402 push payments: the merchant balance must grow by the price', () => {
  it('When a transaction pays the price into the merchant account and takes it back out in the same transaction (through a delegate), then 400 amount_mismatch, nothing is served and nothing is consumed', async () => {
    const { price, reference } = await challenge();
    const merchantBefore = await balanceOf(merchantTokenAccount);
    const delegateBefore = await balanceOf(delegateTokenAccount);

    const signature = await send(
      [
        transferChecked(delegateTokenAccount, merchantTokenAccount, price, reference),
        transferChecked(merchantTokenAccount, delegateTokenAccount, price),
      ],
      [delegate],
    );
    // On chain, the merchant got nothing and the payer kept its tokens.
    expect(await balanceOf(merchantTokenAccount)).toBe(merchantBefore);
    expect(await balanceOf(delegateTokenAccount)).toBe(delegateBefore);

    await expectRefusedUnconsumed(signature, price);
  });

  it('When the transferChecked of the price into the merchant account comes from the merchant account itself (through a delegate), then 400 amount_mismatch, nothing is served and nothing is consumed', async () => {
    const { price, reference } = await challenge();
    const merchantBefore = await balanceOf(merchantTokenAccount);
    expect(merchantBefore).toBeGreaterThanOrEqual(price);

    const signature = await send(
      [transferChecked(merchantTokenAccount, merchantTokenAccount, price, reference)],
      [delegate],
    );
    expect(await balanceOf(merchantTokenAccount)).toBe(merchantBefore);

    await expectRefusedUnconsumed(signature, price);
  });

  it('When the same kind of payment really moves the price into the merchant account, then it is served (the refusals above are the balance check)', async () => {
    const { price, reference } = await challenge();
    const merchantBefore = await balanceOf(merchantTokenAccount);
    const signature = await send(
      [transferChecked(delegateTokenAccount, merchantTokenAccount, price, reference)],
      [delegate],
    );
    events.length = 0;
    const res = await fetch(replica.baseUrl + GAPS, {
      headers: { 'X-PAYMENT': encodePaymentHeader('solana', signature) },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toHaveProperty('gaps');
    expect(events.map((e) => e.type)).toEqual(['verified']);
    expect(await balanceOf(merchantTokenAccount)).toBe(merchantBefore + price);
    expect(await paymentRow(signature)).toEqual([
      {
        status: 'completed',
        endpoint: GAPS_ENDPOINT,
        claim_token: null,
        payer: delegate.publicKey.toBase58(),
        response_status: 200,
      },
    ]);
  });
});
