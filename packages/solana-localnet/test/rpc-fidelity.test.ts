// simulateTransaction and the other methods the official x402 client and facilitator call, answered
// as a validator (Agave 2.2) answers them: raw JSON shapes through callRpc, parsing through kit.
import {
  Connection,
  Keypair,
  LAMPORTS_PER_SOL,
  PublicKey,
  Transaction,
  type TransactionInstruction,
} from '@solana/web3.js';
import {
  address,
  createSolanaRpc,
  signature as toSignature,
  type Base64EncodedWireTransaction,
} from '@solana/kit';
import {
  bs58,
  createAssociatedTokenAccountIdempotentInstruction,
  createTransferCheckedInstruction,
  getAssociatedTokenAddressSync,
} from '../src/deps';
import {
  CAIP2_NETWORK,
  RpcError,
  callRpc,
  fundWallet,
  spawnLocalnet,
  waitForSignature,
  type Localnet,
} from '../src/index';

interface SimulationValue {
  err: unknown;
  logs: string[] | null;
  accounts: ({ data: [string, string]; lamports: number } | null)[] | null;
  unitsConsumed: number;
  loadedAccountsDataSize: number;
  returnData: unknown;
  innerInstructions: { index: number; instructions: Record<string, unknown>[] }[] | null;
  replacementBlockhash: { blockhash: string; lastValidBlockHeight: number } | null;
}

let ledger: Localnet;
let url: string;
let connection: Connection;

beforeAll(async () => {
  // In its own process, as every consumer runs it: in this one, litesvm's x87 state makes V8's float
  // modulo return NaN, which breaks jest's own test shuffling (spawnLocalnet's comment).
  ledger = await spawnLocalnet({ port: 0 });
  url = ledger.networks.solana.rpcUrl;
  connection = new Connection(url, 'confirmed');
});

afterAll(async () => {
  await ledger.close();
});

async function newWallet(usdcAtomic = 1_000_000n): Promise<Keypair> {
  const wallet = Keypair.generate();
  await fundWallet({
    rpcUrl: url,
    owner: wallet.publicKey.toBase58(),
    usdcAtomic,
    lamports: LAMPORTS_PER_SOL,
  });
  return wallet;
}

function usdcAccount(owner: PublicKey): PublicKey {
  return getAssociatedTokenAddressSync(new PublicKey(ledger.networks.solana.mint), owner);
}

/**
 * An x402-style payment: the ledger's fee payer pays the fee, `authority` moves `amountAtomic` test USDC
 * to the merchant. Signed by `authority` only unless `feePayerSigns`; the fee payer's slot stays empty.
 */
async function payment(
  authority: Keypair,
  amountAtomic: bigint,
  options: { blockhash?: string; feePayerSigns?: boolean } = {},
): Promise<Transaction> {
  const blockhash = options.blockhash ?? (await connection.getLatestBlockhash()).blockhash;
  const mint = new PublicKey(ledger.networks.solana.mint);
  const tx = new Transaction({
    feePayer: ledger.feePayer.keypair.publicKey,
    blockhash,
    lastValidBlockHeight: 0,
  }).add(
    createTransferCheckedInstruction(
      usdcAccount(authority.publicKey),
      mint,
      new PublicKey(ledger.networks.solana.merchantTokenAccount),
      authority.publicKey,
      amountAtomic,
      6,
    ),
  );
  tx.partialSign(authority);
  if (options.feePayerSigns === true) tx.partialSign(ledger.feePayer.keypair);
  return tx;
}

function wire(tx: Transaction): string {
  return tx.serialize({ requireAllSignatures: false, verifySignatures: false }).toString('base64');
}

async function simulate(tx: Transaction | string, config: Record<string, unknown> = {}) {
  const encoded = typeof tx === 'string' ? tx : wire(tx);
  return callRpc<{ context: { slot: number; apiVersion: string }; value: SimulationValue }>(
    url,
    'simulateTransaction',
    [encoded, { encoding: 'base64', ...config }],
  );
}

async function rpcError(promise: Promise<unknown>): Promise<RpcError> {
  const error = await promise.then(
    () => new Error('expected a JSON-RPC error'),
    (e: unknown) => e,
  );
  if (!(error instanceof RpcError)) throw error;
  return error;
}

/** Polls `condition` until it holds. @throws Error when `timeoutMs` passes first */
async function waitUntil(condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function usdc(account: PublicKey): Promise<bigint> {
  return BigInt((await connection.getTokenAccountBalance(account)).value.amount);
}

describe('simulateTransaction', () => {
  it('When a payment the fee payer has not signed yet is simulated without sigVerify, then it executes and answers logs and compute units', async () => {
    const agent = await newWallet();
    const tx = await payment(agent, 10_000n);
    expect(tx.signatures[0]?.signature).toBeNull();

    const implicit = await simulate(tx);
    const explicit = await simulate(tx, { sigVerify: false });
    for (const { context, value } of [implicit, explicit]) {
      expect(context).toEqual({ slot: expect.any(Number), apiVersion: '2.2.0' });
      expect(value).toEqual({
        err: null,
        logs: expect.arrayContaining(['Program TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA success']),
        accounts: null,
        unitsConsumed: expect.any(Number),
        loadedAccountsDataSize: expect.any(Number),
        returnData: null,
        innerInstructions: null,
        replacementBlockhash: null,
      });
      expect(value.unitsConsumed).toBeGreaterThan(0);
      expect(value.loadedAccountsDataSize).toBeGreaterThan(0);
    }
  });

  it('When sigVerify is set and a signature is missing or invalid, then the answer is the validator -32003 error', async () => {
    const agent = await newWallet();
    const unsigned = await payment(agent, 10_000n);
    const missing = await rpcError(simulate(unsigned, { sigVerify: true }));
    expect({ code: missing.code, message: missing.message }).toEqual({
      code: -32003,
      message: 'Transaction signature verification failure',
    });

    const signed = await payment(agent, 10_000n, { feePayerSigns: true });
    const tampered = Buffer.from(signed.serialize());
    // Byte 70 lies in the second signature (the agent's): 1 length byte + 64 fee payer bytes + 5.
    tampered[70] = (tampered[70] ?? 0) ^ 0xff;
    const invalid = await rpcError(simulate(tampered.toString('base64'), { sigVerify: true }));
    expect(invalid.code).toBe(-32003);

    expect((await simulate(signed, { sigVerify: true })).value.err).toBeNull();
  });

  it('When replaceRecentBlockhash is set on an expired blockhash, then the simulation runs on the latest blockhash and returns it as replacementBlockhash', async () => {
    const agent = await newWallet();
    const { blockhash } = await connection.getLatestBlockhash();
    const tx = await payment(agent, 10_000n, { blockhash });
    await callRpc(url, 'localnet_expireBlockhashes');

    const stale = await simulate(tx);
    expect(stale.value).toEqual(
      expect.objectContaining({
        err: 'BlockhashNotFound',
        logs: [],
        unitsConsumed: 0,
        replacementBlockhash: null,
      }),
    );
    const replaced = await simulate(tx, { replaceRecentBlockhash: true });
    expect(replaced.value.err).toBeNull();
    const replacement = replaced.value.replacementBlockhash;
    expect(replacement).toEqual({ blockhash: expect.any(String), lastValidBlockHeight: expect.any(Number) });
    expect(replacement?.blockhash).not.toBe(blockhash);
    expect((await connection.isBlockhashValid(replacement?.blockhash ?? '')).value).toBe(true);
    expect(replacement?.lastValidBlockHeight).toBeGreaterThan(await connection.getBlockHeight());
  });

  it('When sigVerify and replaceRecentBlockhash are both set, then the answer is the validator -32602 error', async () => {
    const agent = await newWallet();
    const tx = await payment(agent, 10_000n, { feePayerSigns: true });
    const error = await rpcError(simulate(tx, { sigVerify: true, replaceRecentBlockhash: true }));
    expect({ code: error.code, message: error.message }).toEqual({
      code: -32602,
      message: 'sigVerify may not be used with replaceRecentBlockhash',
    });
  });

  it('When a payment is simulated, then balances, statuses, the transaction count and the clock are unchanged and the transaction can still be sent', async () => {
    const agent = await newWallet();
    const merchant = new PublicKey(ledger.networks.solana.merchantTokenAccount);
    const feePayer = ledger.feePayer.keypair.publicKey;
    const tx = await payment(agent, 25_000n, { feePayerSigns: true });
    const signature = tx.signatures[0]?.signature;
    const clock = new PublicKey('SysvarC1ock11111111111111111111111111111111');
    const before = {
      merchant: await usdc(merchant),
      agent: await usdc(usdcAccount(agent.publicKey)),
      feePayer: await connection.getBalance(feePayer),
      count: await connection.getTransactionCount(),
      clock: (await connection.getAccountInfo(clock))?.data.toString('base64'),
    };

    // Let wall-clock time pass the Clock sysvar's unix_timestamp (offset 32), so a simulation that
    // left its clock behind would show.
    const clockTime = Buffer.from(before.clock ?? '', 'base64').readBigInt64LE(32);
    await waitUntil(async () => BigInt(Math.floor(Date.now() / 1000)) > clockTime, 5_000);

    expect((await simulate(tx, { sigVerify: true })).value.err).toBeNull();
    expect((await simulate(tx)).value.err).toBeNull();

    expect({
      merchant: await usdc(merchant),
      agent: await usdc(usdcAccount(agent.publicKey)),
      feePayer: await connection.getBalance(feePayer),
      count: await connection.getTransactionCount(),
      clock: (await connection.getAccountInfo(clock))?.data.toString('base64'),
    }).toEqual(before);
    const sent = await connection.sendRawTransaction(tx.serialize());
    expect(sent).toBe(bs58.encode(signature ?? new Uint8Array(64)));
    expect((await waitForSignature(connection, sent)).err).toBeNull();
    expect(await usdc(merchant)).toBe(before.merchant + 25_000n);
  });

  it('When a landed transaction, or its message with other signatures, is simulated, then err is AlreadyProcessed', async () => {
    const agent = await newWallet();
    const { blockhash } = await connection.getLatestBlockhash();
    const signed = await payment(agent, 5_000n, { blockhash, feePayerSigns: true });
    await waitForSignature(connection, await connection.sendRawTransaction(signed.serialize()));

    expect((await simulate(signed)).value).toEqual(
      expect.objectContaining({ err: 'AlreadyProcessed', logs: [], unitsConsumed: 0 }),
    );
    // The payment as the agent sent it, before the fee payer co-signed: same message.
    const partial = await payment(agent, 5_000n, { blockhash });
    expect((await simulate(partial)).value.err).toBe('AlreadyProcessed');
  });

  it('When accounts are requested, then their post-simulation state comes back while the ledger keeps the old one', async () => {
    const agent = await newWallet();
    const merchant = new PublicKey(ledger.networks.solana.merchantTokenAccount);
    const before = await usdc(merchant);
    const tx = await payment(agent, 40_000n);
    const { value } = await simulate(tx, {
      accounts: {
        addresses: [merchant.toBase58(), Keypair.generate().publicKey.toBase58()],
        encoding: 'base64',
      },
    });
    const [after, absent] = value.accounts ?? [];
    expect(absent).toBeNull();
    const data = Buffer.from(after?.data[0] ?? '', 'base64');
    expect(data.readBigUInt64LE(64)).toBe(before + 40_000n);
    expect(await usdc(merchant)).toBe(before);

    const parsed = await simulate(tx, {
      accounts: { addresses: [merchant.toBase58()], encoding: 'jsonParsed' },
    });
    expect(parsed.value.accounts?.[0]?.data).toEqual(
      expect.objectContaining({
        program: 'spl-token',
        parsed: expect.objectContaining({
          info: expect.objectContaining({
            tokenAmount: expect.objectContaining({ amount: (before + 40_000n).toString() }),
          }),
        }),
      }),
    );
    const tooMany = await rpcError(
      simulate(tx, { accounts: { addresses: Array.from({ length: 9 }, () => merchant.toBase58()) } }),
    );
    expect(tooMany.code).toBe(-32602);
  });

  it('When innerInstructions is set, then the CPIs come back parsed as a validator parses them, and nothing is created', async () => {
    const payer = await newWallet(0n);
    const owner = Keypair.generate().publicKey;
    const ata = usdcAccount(owner);
    const { blockhash } = await connection.getLatestBlockhash();
    const instruction: TransactionInstruction = createAssociatedTokenAccountIdempotentInstruction(
      payer.publicKey,
      ata,
      owner,
      new PublicKey(ledger.networks.solana.mint),
    );
    const tx = new Transaction({ feePayer: payer.publicKey, blockhash, lastValidBlockHeight: 0 }).add(
      instruction,
    );
    tx.sign(payer);

    expect((await simulate(tx)).value.innerInstructions).toBeNull();
    const { value } = await simulate(tx, { innerInstructions: true });
    expect(value.err).toBeNull();
    expect(value.innerInstructions).toHaveLength(1);
    const group = value.innerInstructions?.[0];
    expect(group?.index).toBe(0);
    expect(
      group?.instructions.map((ix) => [ix.program, (ix.parsed as { type?: string } | undefined)?.type]),
    ).toEqual([
      ['spl-token', 'getAccountDataSize'],
      ['system', 'createAccount'],
      ['spl-token', 'initializeImmutableOwner'],
      ['spl-token', 'initializeAccount3'],
    ]);
    expect(group?.instructions.every((ix) => ix.stackHeight === 2)).toBe(true);
    expect(await connection.getAccountInfo(ata)).toBeNull();
  });

  it('When a simulated transfer fails in the token program, then err, logs and units come back in the value, not as an error', async () => {
    const agent = await newWallet(1_000n);
    const tx = await payment(agent, 2_000n);
    const { value } = await simulate(tx, { innerInstructions: true });
    expect(value.err).toEqual({ InstructionError: [0, { Custom: 1 }] });
    expect(value.logs?.join('\n')).toContain('insufficient funds');
    expect(value.unitsConsumed).toBeGreaterThan(0);
    expect(value.innerInstructions).toEqual([]);
  });
});

describe('the other methods the official x402 client and facilitator call', () => {
  it('When kit reads the ledger, then every answer the x402 client and facilitator rely on parses in the validator shape', async () => {
    const rpc = createSolanaRpc(url);
    const agent = await newWallet(3_000_000n);
    const mint = address(ledger.networks.solana.mint);

    const mintInfo = await rpc.getAccountInfo(mint, { encoding: 'base64', commitment: 'confirmed' }).send();
    expect(mintInfo.value?.owner).toBe('TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA');
    expect(mintInfo.value?.space).toBe(82n);
    // rentEpoch is u64::MAX written exactly, as a validator writes it (JSON.stringify of 2^64 would
    // give 18446744073709552000).
    const text = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'getAccountInfo',
        params: [mint, { encoding: 'base64' }],
      }),
    }).then((r) => r.text());
    expect(text).toContain('"rentEpoch":18446744073709551615,');
    const parsed = await rpc
      .getAccountInfo(address(usdcAccount(agent.publicKey).toBase58()), { encoding: 'jsonParsed' })
      .send();
    expect(parsed.value?.data).toEqual(
      expect.objectContaining({
        program: 'spl-token',
        parsed: expect.objectContaining({
          type: 'account',
          info: expect.objectContaining({ tokenAmount: expect.objectContaining({ amount: '3000000' }) }),
        }),
      }),
    );

    const latest = await rpc.getLatestBlockhash({ commitment: 'finalized' }).send();
    expect(typeof latest.context.slot).toBe('bigint');
    expect(typeof latest.value.lastValidBlockHeight).toBe('bigint');
    expect((await connection.isBlockhashValid(latest.value.blockhash)).value).toBe(true);
    expect(await rpc.getSlot({ commitment: 'finalized' }).send()).toBeGreaterThanOrEqual(0n);
    expect(await rpc.getBlockHeight().send()).toBeGreaterThanOrEqual(0n);
    expect((await rpc.getBalance(address(agent.publicKey.toBase58())).send()).value).toBe(
      BigInt(LAMPORTS_PER_SOL),
    );
    expect(
      (
        await rpc
          .getTokenAccountBalance(address(usdcAccount(agent.publicKey).toBase58()), {
            commitment: 'confirmed',
          })
          .send()
      ).value.amount,
    ).toBe('3000000');
    expect(await rpc.getMinimumBalanceForRentExemption(165n).send()).toBe(2039280n);

    const tx = await payment(agent, 1n, { feePayerSigns: true });
    const simulated = await rpc
      .simulateTransaction(wire(tx) as Base64EncodedWireTransaction, {
        encoding: 'base64',
        sigVerify: false,
        replaceRecentBlockhash: false,
        commitment: 'confirmed',
        innerInstructions: true,
      })
      .send();
    expect(simulated.value.err).toBeNull();
    expect(typeof simulated.value.unitsConsumed).toBe('bigint');
    const sent = await rpc
      .sendTransaction(wire(tx) as Base64EncodedWireTransaction, {
        encoding: 'base64',
        skipPreflight: true,
        preflightCommitment: 'confirmed',
      })
      .send();
    const statuses = await rpc.getSignatureStatuses([toSignature(sent)]).send();
    expect(statuses.value[0]).toEqual(
      expect.objectContaining({ confirmationStatus: 'finalized', err: null, confirmations: null }),
    );
    const landed = await rpc
      .getTransaction(toSignature(sent), {
        commitment: 'confirmed',
        encoding: 'jsonParsed',
        maxSupportedTransactionVersion: 0,
      })
      .send();
    expect(landed?.meta?.err).toBeNull();
    expect(landed?.meta).not.toHaveProperty('loadedAddresses');
  });

  it('When the genesis hash of each network is read, then it starts with the CAIP-2 reference the x402 packages use', async () => {
    for (const network of ['solana', 'solana-devnet'] as const) {
      const rpcUrl = ledger.networks[network].rpcUrl;
      const genesis = await callRpc<string>(rpcUrl, 'getGenesisHash');
      expect(`solana:${genesis.slice(0, 32)}`).toBe(CAIP2_NETWORK[network]);
      expect(ledger.networks[network].caip2Network).toBe(CAIP2_NETWORK[network]);
      expect(await callRpc(rpcUrl, 'localnet_info')).toEqual(
        expect.objectContaining({ caip2Network: CAIP2_NETWORK[network] }),
      );
    }
    expect(CAIP2_NETWORK).toEqual({
      solana: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
      'solana-devnet': 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
    });
  });

  it('When a request names a commitment, a minContextSlot or a flag a validator rejects, then the validator error comes back', async () => {
    const key = Keypair.generate().publicKey.toBase58();
    expect((await rpcError(callRpc(url, 'getBalance', [key, { commitment: 'max' }]))).code).toBe(-32602);
    const ahead = await rpcError(callRpc(url, 'getSlot', [{ minContextSlot: 10 ** 12 }]));
    expect({ code: ahead.code, message: ahead.message, data: ahead.data }).toEqual({
      code: -32016,
      message: 'Minimum context slot has not been reached',
      data: { contextSlot: expect.any(Number) },
    });
    const agent = await newWallet();
    const signature = await connection.sendRawTransaction(
      (await payment(agent, 1n, { feePayerSigns: true })).serialize(),
    );
    const processed = await rpcError(
      callRpc(url, 'getTransaction', [
        signature,
        { commitment: 'processed', maxSupportedTransactionVersion: 0 },
      ]),
    );
    expect(processed.message).toBe('Method does not support commitment below `confirmed`');
    const tx = await payment(agent, 1n);
    expect((await rpcError(simulate(tx, { sigVerify: 'yes' }))).code).toBe(-32602);
    const oversized = Buffer.concat([tx.serialize({ requireAllSignatures: false }), Buffer.alloc(1232)]);
    expect((await rpcError(simulate(oversized.toString('base64')))).code).toBe(-32602);
  });

  it('When getProgramAccounts filters token accounts by mint and owner, then the agent has one and the fee payer none', async () => {
    const agent = await newWallet();
    const accountsOf = (owner: PublicKey) =>
      callRpc<{ pubkey: string; account: { owner: string; space: number } }[]>(url, 'getProgramAccounts', [
        'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA',
        {
          encoding: 'base64',
          filters: [
            { dataSize: 165 },
            { memcmp: { offset: 0, bytes: ledger.networks.solana.mint } },
            { memcmp: { offset: 32, bytes: owner.toBase58() } },
          ],
        },
      ]);
    expect((await accountsOf(agent.publicKey)).map((a) => a.pubkey)).toEqual([
      usdcAccount(agent.publicKey).toBase58(),
    ]);
    expect(await accountsOf(ledger.feePayer.keypair.publicKey)).toEqual([]);
  });
});
