import fs from 'node:fs';
import {
  Connection,
  Keypair,
  LAMPORTS_PER_SOL,
  PublicKey,
  SendTransactionError,
  Transaction,
  type ParsedAccountData,
} from '@solana/web3.js';
import { createTransferCheckedInstruction, getAssociatedTokenAddressSync } from '../src/deps';
import {
  callRpc,
  createTestMint,
  fundWallet,
  getLocalnetInfo,
  mintTestTokens,
  sendUsdcTransfer,
  spawnLocalnet,
  waitForSignature,
  type Localnet,
} from '../src/index';

let ledger: Localnet;
let connection: Connection;
let devnet: Connection;

beforeAll(async () => {
  // In its own process, as every consumer runs it: in this one, litesvm's x87 state makes V8's float
  // modulo return NaN, which breaks jest's own test shuffling (spawnLocalnet's comment).
  ledger = await spawnLocalnet({ port: 0 });
  connection = new Connection(ledger.networks.solana.rpcUrl, 'confirmed');
  devnet = new Connection(ledger.networks['solana-devnet'].rpcUrl, 'confirmed');
});

afterAll(async () => {
  await ledger.close();
});

function payment(amountAtomic: bigint, overrides: Partial<Parameters<typeof sendUsdcTransfer>[0]> = {}) {
  return sendUsdcTransfer({
    rpcUrl: ledger.networks.solana.rpcUrl,
    payer: ledger.agent.keypair,
    mint: ledger.networks.solana.mint,
    destinationTokenAccount: ledger.networks.solana.merchantTokenAccount,
    amountAtomic,
    ...overrides,
  });
}

async function newPayer(usdcAtomic = 5_000_000n): Promise<Keypair> {
  const payer = Keypair.generate();
  await fundWallet({ rpcUrl: ledger.networks.solana.rpcUrl, owner: payer.publicKey.toBase58(), usdcAtomic });
  return payer;
}

function transferTx(payer: Keypair, blockhash: string, amountAtomic: bigint): Transaction {
  const mint = new PublicKey(ledger.networks.solana.mint);
  const tx = new Transaction({ feePayer: payer.publicKey, blockhash, lastValidBlockHeight: 0 }).add(
    createTransferCheckedInstruction(
      getAssociatedTokenAddressSync(mint, payer.publicKey),
      mint,
      new PublicKey(ledger.networks.solana.merchantTokenAccount),
      payer.publicKey,
      amountAtomic,
      6,
    ),
  );
  tx.sign(payer);
  return tx;
}

describe('solana-localnet', () => {
  it('When the agent pays the merchant, then getTransaction shows a successful tx with the token balance delta, a fresh blockTime and its own slot', async () => {
    const first = await payment(10_000n);
    const second = await payment(250_000n);
    const tx = await connection.getTransaction(second, {
      commitment: 'confirmed',
      maxSupportedTransactionVersion: 0,
    });
    expect(tx).not.toBeNull();
    expect(tx?.meta?.err).toBeNull();
    expect(tx?.version).toBe('legacy');
    const keys = tx?.transaction.message.staticAccountKeys.map((k) => k.toBase58()) ?? [];
    const merchantIndex = keys.indexOf(ledger.networks.solana.merchantTokenAccount);
    expect(merchantIndex).toBeGreaterThan(0);
    const pre = tx?.meta?.preTokenBalances?.find((b) => b.accountIndex === merchantIndex);
    const post = tx?.meta?.postTokenBalances?.find((b) => b.accountIndex === merchantIndex);
    expect(post?.mint).toBe(ledger.networks.solana.mint);
    expect(post?.owner).toBe(ledger.networks.solana.merchantOwner);
    expect(post?.programId).toBe('TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA');
    expect(BigInt(post?.uiTokenAmount.amount ?? '0') - BigInt(pre?.uiTokenAmount.amount ?? '0')).toBe(
      250_000n,
    );
    expect(post?.uiTokenAmount.decimals).toBe(6);
    expect(Math.abs((tx?.blockTime ?? 0) - Date.now() / 1000)).toBeLessThan(5);
    expect(tx?.meta?.fee).toBe(5000);
    expect(tx?.meta?.logMessages).toContain('Program TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA success');
    expect(tx?.meta?.computeUnitsConsumed).toBeGreaterThan(0);

    const earlier = await connection.getTransaction(first, {
      commitment: 'confirmed',
      maxSupportedTransactionVersion: 0,
    });
    expect(earlier?.slot).toBeLessThan(tx?.slot ?? 0);
    const statuses = await connection.getSignatureStatuses([first, second]);
    expect(statuses.value.map((s) => s?.confirmationStatus)).toEqual(['finalized', 'finalized']);
  });

  it('When a transaction is fetched as base64 or jsonParsed, then both encodings are answered', async () => {
    // An amount no other test pays: the same transfer on the same blockhash would be the same transaction.
    const signature = await payment(3n);
    const raw = await callRpc<{ transaction: [string, string] }>(
      ledger.networks.solana.rpcUrl,
      'getTransaction',
      [signature, { encoding: 'base64', maxSupportedTransactionVersion: 0 }],
    );
    expect(raw.transaction[1]).toBe('base64');
    const parsed = await connection.getParsedTransaction(signature, { maxSupportedTransactionVersion: 0 });
    const ix = parsed?.transaction.message.instructions[0];
    expect(ix && 'parsed' in ix ? ix.parsed.type : null).toBe('transferChecked');
  });

  it('When funding creates an associated token account, then the inner instructions come back in RPC shape', async () => {
    const owner = Keypair.generate().publicKey.toBase58();
    const result = await fundWallet({ rpcUrl: ledger.networks.solana.rpcUrl, owner });
    const tx = await connection.getTransaction(result.signature, { maxSupportedTransactionVersion: 0 });
    const inner = tx?.meta?.innerInstructions ?? [];
    expect(inner.length).toBeGreaterThan(0);
    expect(inner[0]?.instructions[0]).toEqual(
      expect.objectContaining({
        programIdIndex: expect.any(Number),
        accounts: expect.any(Array),
        data: expect.any(String),
      }),
    );
  });

  it('When a payment lands on /devnet, then it does not exist on /', async () => {
    const signature = await sendUsdcTransfer({
      rpcUrl: ledger.networks['solana-devnet'].rpcUrl,
      payer: ledger.agent.keypair,
      mint: ledger.networks['solana-devnet'].mint,
      destinationTokenAccount: ledger.networks['solana-devnet'].merchantTokenAccount,
      amountAtomic: 5n,
    });
    expect(await devnet.getTransaction(signature, { maxSupportedTransactionVersion: 0 })).not.toBeNull();
    expect(await connection.getTransaction(signature, { maxSupportedTransactionVersion: 0 })).toBeNull();
    expect(ledger.networks['solana-devnet'].mint).not.toBe(ledger.networks.solana.mint);
    expect(await devnet.getGenesisHash()).not.toBe(await connection.getGenesisHash());
  });

  it('When a transfer exceeds the balance, then preflight rejects it with -32002 and its logs, and nothing lands', async () => {
    const payer = await newPayer(1_000n);
    const { blockhash } = await connection.getLatestBlockhash();
    const tx = transferTx(payer, blockhash, 2_000n);
    const error = await connection.sendRawTransaction(tx.serialize()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SendTransactionError);
    expect((error as SendTransactionError).message).toContain('custom program error: 0x1');
    expect((error as SendTransactionError).logs?.join('\n')).toContain('insufficient funds');
    const raw = await callRpc<unknown>(ledger.networks.solana.rpcUrl, 'sendTransaction', [
      tx.serialize().toString('base64'),
      { encoding: 'base64' },
    ]).catch((e: unknown) => e);
    expect(raw).toEqual(expect.objectContaining({ code: -32002 }));
    expect(await connection.getBalance(payer.publicKey)).toBe(10 * LAMPORTS_PER_SOL);
  });

  it('When a failing transfer is sent with skipPreflight, then it lands with meta.err set and the fee charged', async () => {
    const payer = await newPayer(1_000n);
    const signature = await sendUsdcTransfer({
      rpcUrl: ledger.networks.solana.rpcUrl,
      payer,
      mint: ledger.networks.solana.mint,
      destinationTokenAccount: ledger.networks.solana.merchantTokenAccount,
      amountAtomic: 2_000n,
      skipPreflight: true,
    });
    const status = await waitForSignature(connection, signature);
    expect(status.err).toEqual({ InstructionError: [0, { Custom: 1 }] });
    const tx = await connection.getTransaction(signature, {
      commitment: 'confirmed',
      maxSupportedTransactionVersion: 0,
    });
    expect(tx?.meta?.err).toEqual({ InstructionError: [0, { Custom: 1 }] });
    expect(tx?.meta?.postBalances[0]).toBe(10 * LAMPORTS_PER_SOL - 5000);
    expect(
      await connection.getTokenAccountBalance(
        getAssociatedTokenAddressSync(new PublicKey(ledger.networks.solana.mint), payer.publicKey),
      ),
    ).toEqual(expect.objectContaining({ value: expect.objectContaining({ amount: '1000' }) }));
  });

  it('When the same signed transaction is sent twice, then the second is rejected as already processed and runs once', async () => {
    const payer = await newPayer(1_000_000n);
    const { blockhash } = await connection.getLatestBlockhash();
    const wire = transferTx(payer, blockhash, 100_000n).serialize();
    const signature = await connection.sendRawTransaction(wire);
    await waitForSignature(connection, signature);
    const error = await connection.sendRawTransaction(wire).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SendTransactionError);
    expect((error as Error).message).toContain('This transaction has already been processed');
    const ata = getAssociatedTokenAddressSync(new PublicKey(ledger.networks.solana.mint), payer.publicKey);
    expect((await connection.getTokenAccountBalance(ata)).value.amount).toBe('900000');
  });

  it('When a transaction uses an unknown or expired blockhash, then it is rejected with BlockhashNotFound', async () => {
    const payer = await newPayer();
    const unknown = transferTx(payer, Keypair.generate().publicKey.toBase58(), 1n);
    await expect(connection.sendRawTransaction(unknown.serialize())).rejects.toThrow('Blockhash not found');

    const { blockhash } = await connection.getLatestBlockhash();
    expect((await connection.isBlockhashValid(blockhash)).value).toBe(true);
    await callRpc(ledger.networks.solana.rpcUrl, 'localnet_expireBlockhashes');
    expect((await connection.isBlockhashValid(blockhash)).value).toBe(false);
    await expect(connection.sendRawTransaction(transferTx(payer, blockhash, 1n).serialize())).rejects.toThrow(
      'Blockhash not found',
    );
    const fresh = await connection.getLatestBlockhash();
    const signature = await connection.sendRawTransaction(transferTx(payer, fresh.blockhash, 1n).serialize());
    expect((await waitForSignature(connection, signature)).err).toBeNull();
  });

  it('When 32 payers send concurrently on a blockhash fetched before any lands, then all 32 land', async () => {
    const payers = await Promise.all(Array.from({ length: 32 }, () => newPayer(1_000_000n)));
    const merchant = new PublicKey(ledger.networks.solana.merchantTokenAccount);
    const before = BigInt((await connection.getTokenAccountBalance(merchant)).value.amount);
    const { blockhash } = await connection.getLatestBlockhash();
    const txs = payers.map((payer) => transferTx(payer, blockhash, 10_000n));
    const signatures = await Promise.all(txs.map((tx) => connection.sendRawTransaction(tx.serialize())));
    const statuses = await Promise.all(signatures.map((s) => waitForSignature(connection, s)));
    expect(statuses.every((s) => s.err === null)).toBe(true);
    const slots = new Set(statuses.map((s) => s.slot));
    expect(slots.size).toBe(32);
    const after = BigInt((await connection.getTokenAccountBalance(merchant)).value.amount);
    expect(after - before).toBe(320_000n);
  });

  it('When localnet_fund is called for a fresh address, then it gets SOL, an associated token account and test USDC', async () => {
    const owner = Keypair.generate().publicKey;
    const result = await callRpc<{
      owner: string;
      tokenAccount: string;
      mint: string;
      usdcAtomic: string;
      lamports: number;
    }>(ledger.networks.solana.rpcUrl, 'localnet_fund', [owner.toBase58(), { usdc: '2500000' }]);
    expect(result).toEqual(
      expect.objectContaining({
        owner: owner.toBase58(),
        mint: ledger.networks.solana.mint,
        tokenAccount: getAssociatedTokenAddressSync(
          new PublicKey(ledger.networks.solana.mint),
          owner,
        ).toBase58(),
        usdcAtomic: '2500000',
        lamports: 10 * LAMPORTS_PER_SOL,
      }),
    );
    expect(await connection.getBalance(owner)).toBe(10 * LAMPORTS_PER_SOL);
    const balance = await connection.getTokenAccountBalance(new PublicKey(result.tokenAccount));
    expect(balance.value).toEqual({ amount: '2500000', decimals: 6, uiAmount: 2.5, uiAmountString: '2.5' });
    const parsed = await connection.getParsedAccountInfo(new PublicKey(result.tokenAccount));
    expect((parsed.value?.data as ParsedAccountData).parsed.info.owner).toBe(owner.toBase58());
    expect(await devnet.getBalance(owner)).toBe(0);
  });

  it('When a test needs a wrong mint, then createTestMint and mintTestTokens make one with the same decimals', async () => {
    const payer = await newPayer();
    const { mint, mintAuthority } = await createTestMint({ rpcUrl: ledger.networks.solana.rpcUrl });
    const { tokenAccount } = await mintTestTokens({
      rpcUrl: ledger.networks.solana.rpcUrl,
      mint,
      mintAuthority,
      owner: payer.publicKey.toBase58(),
      amountAtomic: 7_000_000n,
    });
    const supply = await connection.getTokenSupply(new PublicKey(mint));
    expect(supply.value.decimals).toBe(6);
    expect((await connection.getTokenAccountBalance(new PublicKey(tokenAccount))).value.amount).toBe(
      '7000000',
    );
    // Paying the merchant's USDC account with the wrong mint fails in the token program.
    await expect(payment(1n, { payer, mint })).rejects.toThrow(SendTransactionError);
  });

  it('When the node is queried for chain facts, then web3.js parses every answer', async () => {
    expect(await connection.getSlot()).toBeGreaterThan(0);
    expect(await connection.getBlockHeight()).toBeGreaterThanOrEqual(0);
    expect((await connection.getVersion())['solana-core']).toBe('2.2.0');
    expect(await connection.getMinimumBalanceForRentExemption(165)).toBe(2039280);
    const mintInfo = await connection.getAccountInfo(new PublicKey(ledger.networks.solana.mint));
    expect(mintInfo?.owner.toBase58()).toBe('TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA');
    expect(mintInfo?.data.length).toBe(82);
    expect(await connection.getAccountInfo(Keypair.generate().publicKey)).toBeNull();
    const { blockhash } = await connection.getLatestBlockhash();
    const message = transferTx(ledger.agent.keypair, blockhash, 1n).compileMessage();
    expect(await connection.getFeeForMessage(message)).toEqual(expect.objectContaining({ value: 5000 }));
    const airdrop = await connection.requestAirdrop(Keypair.generate().publicKey, LAMPORTS_PER_SOL);
    expect((await waitForSignature(connection, airdrop)).err).toBeNull();
  });

  it('When the ledger starts, then the x402 fee payer holds 100 SOL on both networks, owns no token account and is reported with its keypair file', async () => {
    const feePayer = ledger.feePayer.keypair.publicKey;
    const file: unknown = JSON.parse(fs.readFileSync(ledger.feePayer.keypairPath, 'utf8'));
    expect(Keypair.fromSecretKey(Uint8Array.from(file as number[])).publicKey.toBase58()).toBe(
      ledger.feePayer.publicKey,
    );
    for (const network of ['solana', 'solana-devnet'] as const) {
      const rpcUrl = ledger.networks[network].rpcUrl;
      const on = new Connection(rpcUrl, 'confirmed');
      expect(await on.getBalance(feePayer)).toBe(100 * LAMPORTS_PER_SOL);
      const ata = getAssociatedTokenAddressSync(new PublicKey(ledger.networks[network].mint), feePayer);
      expect(await on.getAccountInfo(ata)).toBeNull();
      expect(await getLocalnetInfo(rpcUrl)).toEqual(
        expect.objectContaining({
          feePayer: ledger.feePayer.publicKey,
          feePayerKeypairPath: ledger.feePayer.keypairPath,
        }),
      );
    }
    expect(ledger.feePayer.publicKey).not.toBe(ledger.agent.publicKey);
  });

  it('When the ledger starts, then the refund wallet holds 10 SOL and 100 000 test USDC on both networks and is reported with its keypair file', async () => {
    const wallet = ledger.refundWallet.keypair.publicKey;
    const file: unknown = JSON.parse(fs.readFileSync(ledger.refundWallet.keypairPath, 'utf8'));
    expect(Keypair.fromSecretKey(Uint8Array.from(file as number[])).publicKey.equals(wallet)).toBe(true);
    for (const network of ['solana', 'solana-devnet'] as const) {
      const rpcUrl = ledger.networks[network].rpcUrl;
      const on = new Connection(rpcUrl, 'confirmed');
      expect(await on.getBalance(wallet)).toBe(10 * LAMPORTS_PER_SOL);
      const ata = getAssociatedTokenAddressSync(new PublicKey(ledger.networks[network].mint), wallet);
      expect((await on.getTokenAccountBalance(ata)).value.amount).toBe('100000000000');
      expect(await getLocalnetInfo(rpcUrl)).toEqual(
        expect.objectContaining({
          refundWallet: ledger.refundWallet.publicKey,
          refundKeypairPath: ledger.refundWallet.keypairPath,
        }),
      );
    }
    expect(
      new Set([ledger.refundWallet.publicKey, ledger.feePayer.publicKey, ledger.agent.publicKey]).size,
    ).toBe(3);
  });

  it('When the clock offset is set, then transactions landing afterwards carry a block time shifted by it, until it is reset', async () => {
    const url = ledger.networks.solana.rpcUrl;
    await callRpc(url, 'localnet_setClockOffset', [-700]);
    let shifted: string;
    try {
      shifted = await payment(1n);
    } finally {
      await callRpc(url, 'localnet_setClockOffset', [0]);
    }
    const now = Math.floor(Date.now() / 1000);
    const past = await connection.getTransaction(shifted, { maxSupportedTransactionVersion: 0 });
    expect(now - (past?.blockTime ?? 0)).toBeGreaterThanOrEqual(699);
    expect(now - (past?.blockTime ?? 0)).toBeLessThan(720);
    const current = await connection.getTransaction(await payment(2n), { maxSupportedTransactionVersion: 0 });
    expect(Math.abs(now - (current?.blockTime ?? 0))).toBeLessThan(20);
    await expect(callRpc(url, 'localnet_setClockOffset', ['soon'])).rejects.toEqual(
      expect.objectContaining({ code: -32602 }),
    );
  });

  it('When localnet_fund is asked to give the fee payer test USDC, then it refuses and the fee payer still has no token account', async () => {
    const feePayer = ledger.feePayer.keypair.publicKey;
    const before = await connection.getBalance(feePayer);
    await expect(
      callRpc(ledger.networks.solana.rpcUrl, 'localnet_fund', [
        ledger.feePayer.publicKey,
        { usdc: '1000000' },
      ]),
    ).rejects.toEqual(expect.objectContaining({ code: -32602 }));
    await expect(ledger.fund(ledger.feePayer.publicKey)).rejects.toThrow('never a token account');
    expect(await connection.getBalance(feePayer)).toBe(before);
    const ata = getAssociatedTokenAddressSync(new PublicKey(ledger.networks.solana.mint), feePayer);
    expect(await connection.getAccountInfo(ata)).toBeNull();
  });

  it('When requests are malformed, then JSON-RPC errors come back with the standard codes', async () => {
    const url = ledger.networks.solana.rpcUrl;
    await expect(callRpc(url, 'noSuchMethod')).rejects.toEqual(expect.objectContaining({ code: -32601 }));
    await expect(callRpc(url, 'getBalance', ['not-a-key'])).rejects.toEqual(
      expect.objectContaining({ code: -32602 }),
    );
    const batch = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'getHealth' },
        { jsonrpc: '2.0', id: 2, method: 'getSlot' },
      ]),
    }).then((r) => r.json() as Promise<{ id: number; result: unknown }[]>);
    expect(batch.map((r) => r.id)).toEqual([1, 2]);
    expect(batch[0]?.result).toBe('ok');
    const parseError = await fetch(url, { method: 'POST', body: '{' }).then(
      (r) => r.json() as Promise<{ error: { code: number } }>,
    );
    expect(parseError.error.code).toBe(-32700);
  });
});
