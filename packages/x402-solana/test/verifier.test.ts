import { Connection, Keypair, PublicKey, Transaction } from '@solana/web3.js';
import type { X402Network } from '@repo/schemas';
import {
  callRpc,
  createTestMint,
  mintTestTokens,
  payUsdc,
  signedPayment,
  spawnLocalnet,
  waitForSignature,
  type Localnet,
} from '@repo/solana-localnet';
import { PaymentVerificationError, type PaymentVerificationReason } from '@repo/x402-core';
import { buildSignature } from '@repo/x402-core/testing';
import { SolanaPaymentVerifier, type SolanaPaymentVerifierOptions } from '../src/index';
import { createTransferCheckedInstruction, getAssociatedTokenAddressSync } from '../src/deps';
import { json, stubRpc } from './support/stub-rpc';

const PRICE = 100_000n;
let localnet: Localnet;

beforeAll(async () => {
  localnet = await spawnLocalnet({ port: 0 });
});

afterAll(async () => {
  await localnet?.close();
});

function verifierFor(
  network: X402Network,
  options: SolanaPaymentVerifierOptions = {},
  overrides: { asset?: string; payTo?: string; rpcUrl?: string } = {},
) {
  const info = localnet.networks[network];
  return new SolanaPaymentVerifier(
    {
      network,
      rpcUrl: overrides.rpcUrl ?? info.rpcUrl,
      asset: overrides.asset ?? info.mint,
      payTo: overrides.payTo ?? info.merchantTokenAccount,
    },
    { fetchAttempts: 2, fetchDelayMs: 50, ...options },
  );
}

async function reasonOf(promise: Promise<unknown>): Promise<PaymentVerificationReason> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof PaymentVerificationError) return error.reason;
    throw error;
  }
  throw new Error('expected a PaymentVerificationError');
}

describe('SolanaPaymentVerifier against the local ledger', () => {
  it('When the agent paid exactly the price to payTo, then the payment is verified with payer, amount, slot and block time', async () => {
    const signature = await payUsdc(localnet, 'solana', PRICE);
    const payment = await verifierFor('solana').verify(signature, PRICE);
    expect(payment).toMatchObject({
      signature,
      network: 'solana',
      payer: localnet.agent.publicKey,
      amountAtomic: PRICE,
      asset: localnet.networks.solana.mint,
      payTo: localnet.networks.solana.merchantTokenAccount,
    });
    expect(payment.slot).toBeGreaterThan(0);
    expect(Math.abs(payment.blockTime.getTime() - Date.now())).toBeLessThan(60_000);
    expect(payment.rpcMs).toBeGreaterThan(0);
  });

  it('When the transfer is of another amount, then amount_mismatch', async () => {
    const signature = await payUsdc(localnet, 'solana', 50_000n);
    const error = await verifierFor('solana')
      .verify(signature, PRICE)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PaymentVerificationError);
    expect((error as PaymentVerificationError).reason).toBe('amount_mismatch');
    expect((error as PaymentVerificationError).details).toMatchObject({
      expected: '100000',
      actual: '50000',
    });
  });

  it('When payTo received another 6-decimal mint than the advertised one, then mint_mismatch', async () => {
    const { mint: otherMint } = await createTestMint({
      rpcUrl: localnet.networks.solana.rpcUrl,
      decimals: 6,
    });
    // The verifier advertises the other mint; the agent pays USDC into payTo.
    const signature = await payUsdc(localnet, 'solana', PRICE);
    expect(await reasonOf(verifierFor('solana', {}, { asset: otherMint }).verify(signature, PRICE))).toBe(
      'mint_mismatch',
    );
  });

  it('When another 6-decimal mint is sent to the merchant (its token account for that mint), then mint_mismatch', async () => {
    const { rpcUrl, merchantOwner } = localnet.networks.solana;
    const { mint, mintAuthority } = await createTestMint({ rpcUrl, decimals: 6 });
    await mintTestTokens({
      rpcUrl,
      mint,
      mintAuthority,
      owner: localnet.agent.publicKey,
      amountAtomic: 1_000_000n,
    });
    const merchantAccount = await mintTestTokens({
      rpcUrl,
      mint,
      mintAuthority,
      owner: merchantOwner,
      amountAtomic: 0n,
    });
    const signature = await payUsdc(localnet, 'solana', PRICE, {
      mint,
      destination: merchantAccount.tokenAccount,
    });
    const error = await verifierFor('solana')
      .verify(signature, PRICE)
      .catch((e: unknown) => e);
    expect(error).toMatchObject({
      reason: 'mint_mismatch',
      details: { expected: localnet.networks.solana.mint, actual: mint },
    });
    // With the owner configured, no lookup is needed and the verdict is the same.
    const configured = new SolanaPaymentVerifier({
      network: 'solana',
      rpcUrl,
      asset: localnet.networks.solana.mint,
      payTo: localnet.networks.solana.merchantTokenAccount,
      payToOwner: merchantOwner,
    });
    expect(await reasonOf(configured.verify(signature, PRICE))).toBe('mint_mismatch');
  });

  it('When the transfer goes to another token account, then wrong_recipient', async () => {
    const stranger = Keypair.generate();
    await localnet.fund(stranger.publicKey.toBase58(), { network: 'solana', usdcAtomic: 1n });
    const strangerAccount = getAssociatedTokenAddressSync(
      new PublicKey(localnet.networks.solana.mint),
      stranger.publicKey,
    );
    const signature = await payUsdc(localnet, 'solana', PRICE, { destination: strangerAccount.toBase58() });
    expect(await reasonOf(verifierFor('solana').verify(signature, PRICE))).toBe('wrong_recipient');
  });

  it('When the transaction landed with an error, then transaction_failed', async () => {
    const poor = Keypair.generate();
    await localnet.fund(poor.publicKey.toBase58(), { network: 'solana', usdcAtomic: 1_000n });
    const signature = await payUsdc(localnet, 'solana', PRICE, { payer: poor, skipPreflight: true });
    expect(await reasonOf(verifierFor('solana').verify(signature, PRICE))).toBe('transaction_failed');
  });

  it('When the signature is unknown, then not_found after the bounded retries', async () => {
    const started = Date.now();
    expect(await reasonOf(verifierFor('solana').verify(buildSignature(), PRICE))).toBe('not_found');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('When a signed payment has not landed yet, then not_found; once it lands, it verifies', async () => {
    const pending = await signedPayment(localnet, 'solana', PRICE);
    expect(await reasonOf(verifierFor('solana').verify(pending.signature, PRICE))).toBe('not_found');
    await pending.send();
    await expect(verifierFor('solana').verify(pending.signature, PRICE)).resolves.toMatchObject({
      signature: pending.signature,
    });
  });

  it('When the block time is older than the freshness window, then stale', async () => {
    const signature = await payUsdc(localnet, 'solana', PRICE);
    const inAnHour = () => new Date(Date.now() + 3_600_000);
    expect(await reasonOf(verifierFor('solana', { now: inAnHour }).verify(signature, PRICE))).toBe('stale');
    expect(
      await reasonOf(
        verifierFor('solana', { now: inAnHour, freshnessWindowSeconds: 60 }).verify(signature, PRICE),
      ),
    ).toBe('stale');
    await expect(
      verifierFor('solana', { now: inAnHour, freshnessWindowSeconds: 7200 }).verify(signature, PRICE),
    ).resolves.toBeDefined();
  });

  it('When a devnet payment is checked against the devnet requirements, then it verifies; a mainnet signature is not found on devnet', async () => {
    const devnetSignature = await payUsdc(localnet, 'solana-devnet', PRICE);
    await expect(verifierFor('solana-devnet').verify(devnetSignature, PRICE)).resolves.toMatchObject({
      network: 'solana-devnet',
      asset: localnet.networks['solana-devnet'].mint,
    });
    const mainnetSignature = await payUsdc(localnet, 'solana', PRICE);
    expect(await reasonOf(verifierFor('solana-devnet').verify(mainnetSignature, PRICE))).toBe('not_found');
  });

  it('When the RPC endpoint is unreachable, then rpc_unavailable', async () => {
    const verifier = verifierFor('solana', { rpcTimeoutMs: 2_000 }, { rpcUrl: 'http://127.0.0.1:1' });
    expect(await reasonOf(verifier.verify(buildSignature(), PRICE))).toBe('rpc_unavailable');
  });

  it('When a payment is verified 600 s after its block time, then it is stale by the clock but fresh from its first sighting', async () => {
    const signature = await payUsdc(localnet, 'solana', PRICE);
    const firstSeenAt = new Date();
    const tenMinutesLater = () => new Date(firstSeenAt.getTime() + 600_000);
    const verifier = verifierFor('solana', { now: tenMinutesLater });
    expect(await reasonOf(verifier.verify(signature, PRICE))).toBe('stale');
    await expect(verifier.verify(signature, PRICE, { firstSeenAt })).resolves.toMatchObject({ signature });
  });
});

describe('SolanaPaymentVerifier: Solana Pay references', () => {
  const reference = Keypair.generate().publicKey.toBase58();

  it('When the transfer carries this request reference, then it verifies', async () => {
    const signature = await payUsdc(localnet, 'solana', PRICE, { references: [reference] });
    await expect(
      verifierFor('solana').verify(signature, PRICE, { reference, requireReference: true }),
    ).resolves.toMatchObject({ signature });
  });

  it('When the transfer carries the reference of another request, then reference_mismatch', async () => {
    const signature = await payUsdc(localnet, 'solana', PRICE, { references: [reference] });
    const other = Keypair.generate().publicKey.toBase58();
    expect(await reasonOf(verifierFor('solana').verify(signature, PRICE, { reference: other }))).toBe(
      'reference_mismatch',
    );
  });

  it('When the transfer carries no reference, then it verifies unless references are required', async () => {
    const signature = await payUsdc(localnet, 'solana', PRICE);
    await expect(verifierFor('solana').verify(signature, PRICE, { reference })).resolves.toBeDefined();
    expect(
      await reasonOf(verifierFor('solana').verify(signature, PRICE, { reference, requireReference: true })),
    ).toBe('reference_missing');
  });
});

describe('SolanaPaymentVerifier: RPC cost', () => {
  it('When a signature was just not found, then asking again answers not_found without an RPC call', async () => {
    const calls: string[] = [];
    const verifier = verifierFor('solana', { onRpcCall: (call) => calls.push(call.outcome) });
    const signature = buildSignature();
    expect(await reasonOf(verifier.verify(signature, PRICE))).toBe('not_found');
    expect(calls).toEqual(['not_found', 'not_found']);
    expect(await reasonOf(verifier.verify(signature, PRICE))).toBe('not_found');
    expect(calls).toEqual(['not_found', 'not_found', 'cached_not_found']);
  });

  it('When RPC calls keep failing, then the circuit opens and verification fails fast without calling', async () => {
    const calls: string[] = [];
    const verifier = verifierFor(
      'solana',
      {
        fetchAttempts: 1,
        rpcTimeoutMs: 2_000,
        breakerFailureThreshold: 2,
        onRpcCall: (c) => calls.push(c.outcome),
      },
      { rpcUrl: 'http://127.0.0.1:1' },
    );
    expect(await reasonOf(verifier.verify(buildSignature(), PRICE))).toBe('rpc_unavailable');
    expect(await reasonOf(verifier.verify(buildSignature(), PRICE))).toBe('rpc_unavailable');
    expect(await reasonOf(verifier.verify(buildSignature(), PRICE))).toBe('rpc_unavailable');
    expect(calls).toEqual(['error', 'error', 'short_circuit']);
  });
});

describe('SolanaPaymentVerifier: effects the transfers alone do not show', () => {
  it('When an exact-price transfer comes with a second transfer into the merchant, then the balance delta refuses it with amount_mismatch', async () => {
    const info = localnet.networks.solana;
    const connection = new Connection(info.rpcUrl, 'confirmed');
    const payer = localnet.agent.keypair;
    const mint = new PublicKey(info.mint);
    const source = getAssociatedTokenAddressSync(mint, payer.publicKey);
    const merchant = new PublicKey(info.merchantTokenAccount);
    const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash();
    const tx = new Transaction({ feePayer: payer.publicKey, blockhash, lastValidBlockHeight }).add(
      createTransferCheckedInstruction(source, mint, merchant, payer.publicKey, PRICE, 6),
      createTransferCheckedInstruction(source, mint, merchant, payer.publicKey, 1n, 6),
    );
    tx.sign(payer);
    const signature = await connection.sendRawTransaction(tx.serialize());
    await waitForSignature(connection, signature);
    const error = await verifierFor('solana')
      .verify(signature, PRICE)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PaymentVerificationError);
    expect(error).toMatchObject({
      reason: 'amount_mismatch',
      details: { expected: String(PRICE), actual: String(PRICE + 1n) },
    });
  });

  it('When the block time is in the future beyond the window, then stale', async () => {
    const signature = await payUsdc(localnet, 'solana', PRICE);
    const anHourAgo = () => new Date(Date.now() - 3_600_000);
    expect(await reasonOf(verifierFor('solana', { now: anHourAgo }).verify(signature, PRICE))).toBe('stale');
  });

  it('When the node reports no block time, then stale (freshness cannot be checked)', async () => {
    const signature = await payUsdc(localnet, 'solana', PRICE);
    const landed = await callRpc<Record<string, unknown>>(localnet.networks.solana.rpcUrl, 'getTransaction', [
      signature,
      { encoding: 'json', commitment: 'confirmed', maxSupportedTransactionVersion: 0 },
    ]);
    const rpc = await stubRpc((request, res) =>
      json(
        res,
        200,
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          result: request.method === 'getTransaction' ? { ...landed, blockTime: null } : null,
        }),
      ),
    );
    try {
      const verifier = verifierFor('solana', {}, { rpcUrl: rpc.url });
      expect(await reasonOf(verifier.verify(signature, PRICE))).toBe('stale');
      await expect(verifierFor('solana').verify(signature, PRICE)).resolves.toMatchObject({ signature }); // the same transaction with its block time verifies
    } finally {
      await rpc.close();
    }
  });
});
