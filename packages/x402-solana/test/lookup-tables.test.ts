import { randomBytes } from 'node:crypto';
import {
  type AddressLookupTableAccount,
  ComputeBudgetProgram,
  Connection,
  Keypair,
  LAMPORTS_PER_SOL,
  PublicKey,
  TransactionInstruction,
  TransactionMessage,
  VersionedTransaction,
  type MessageV0,
} from '@solana/web3.js';
import {
  createLookupTable,
  createTransferCheckedInstruction,
  deactivateLookupTable,
  getAssociatedTokenAddressSync,
  lookupTableAccount,
  spawnLocalnet,
  waitForSignature,
} from '@repo/solana-localnet';
import type { Localnet } from '@repo/solana-localnet';
import { ExactSvmSettler } from '../src/exact-svm';
import { lookupTableAddresses, resolveLookupTables } from '../src/lookup-tables';
import { SolanaRpcClient } from '../src/rpc-client';
import { parseWireTransaction } from '../src/wire-transaction';
import { json, proxyTo, stubRpc } from './support/stub-rpc';

// Address lookup tables of official-scheme transactions, resolved against tables the real Address
// Lookup Table program wrote on the local ledger (docs/payments.md, "Paying with an official x402
// client": address lookup tables).
jest.setTimeout(60_000);

const MEMO = new PublicKey('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');
let localnet: Localnet;
let rpcUrl: string;
let connection: Connection;
const devnet = () => localnet.networks['solana-devnet'];

beforeAll(async () => {
  localnet = await spawnLocalnet({ port: 0 });
  rpcUrl = devnet().rpcUrl;
  connection = new Connection(rpcUrl, 'confirmed');
});

afterAll(async () => {
  await localnet?.close();
});

/** A table holding `addresses` on the ledger, as web3.js reads it back. */
async function tableOf(addresses: PublicKey[]): Promise<AddressLookupTableAccount> {
  return (await createLookupTable({ rpcUrl, addresses: addresses.map((a) => a.toBase58()) })).account;
}

/** A table that says it is at `key` and holds `addresses`: what a transaction is compiled with. */
const claimedTable = lookupTableAccount;

/** A v0 transaction of one memo naming `accounts` (writable or not), compiled with `tables`. */
function memoTransaction(
  accounts: { key: PublicKey; writable: boolean }[],
  tables: AddressLookupTableAccount[],
): Uint8Array {
  const payer = Keypair.generate();
  const message = new TransactionMessage({
    payerKey: payer.publicKey,
    recentBlockhash: Keypair.generate().publicKey.toBase58(),
    instructions: [
      new TransactionInstruction({
        programId: MEMO,
        keys: accounts.map(({ key, writable }) => ({ pubkey: key, isSigner: false, isWritable: writable })),
        data: Buffer.from('x'),
      }),
    ],
  }).compileToV0Message(tables);
  const tx = new VersionedTransaction(message);
  tx.sign([payer]);
  return tx.serialize();
}

const keys = (n: number) => Array.from({ length: n }, () => Keypair.generate().publicKey);

describe('Resolving address lookup tables on the ledger', () => {
  it('When a transaction uses two tables, then one getMultipleAccounts call loads what web3.js resolves: every writable index, then every read-only one', async () => {
    const [a, b, c, d, e] = keys(5) as [PublicKey, PublicKey, PublicKey, PublicKey, PublicKey];
    const first = await tableOf([a, b, c]);
    const second = await tableOf([d, e]);
    const bytes = memoTransaction(
      [
        { key: c, writable: true },
        { key: a, writable: false },
        { key: e, writable: true },
        { key: d, writable: false },
        { key: b, writable: true },
      ],
      [first, second],
    );
    const { message } = VersionedTransaction.deserialize(bytes) as { message: MessageV0 };
    expect(message.addressTableLookups).toHaveLength(2);
    const { writable, readonly } = message.resolveAddressTableLookups([first, second]);

    const proxy = await proxyTo(rpcUrl);
    const client = new SolanaRpcClient(proxy.url);
    try {
      const resolution = await resolveLookupTables(parseWireTransaction(bytes), client);
      expect(resolution.ok && resolution.loaded.map((key) => new PublicKey(key).toBase58())).toEqual(
        [...writable, ...readonly].map((key) => key.toBase58()),
      );
      expect(proxy.requests).toEqual([
        expect.objectContaining({
          method: 'getMultipleAccounts',
          params: [
            [first.key.toBase58(), second.key.toBase58()],
            { encoding: 'base64', commitment: 'confirmed' },
          ],
        }),
      ]);
    } finally {
      await client.close();
      await proxy.close();
    }
  });

  it.each<[string, () => Promise<AddressLookupTableAccount>, RegExp]>([
    [
      'a table that does not exist',
      async () => claimedTable(Keypair.generate().publicKey, keys(1)),
      /does not exist/,
    ],
    [
      'an account of another program (the mint)',
      async () => claimedTable(new PublicKey(devnet().mint), keys(1)),
      /owned by TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA/,
    ],
    [
      'an index past the end of the table',
      async () => {
        const real = await tableOf(keys(1));
        return claimedTable(real.key, [...real.state.addresses, ...keys(1)]);
      },
      /index 1 is past the end of address lookup table .* \(1 addresses\)/,
    ],
  ])('When the transaction names %s, then alt_resolution_failed says so', async (_what, claimed, message) => {
    const table = await claimed();
    const bytes = memoTransaction(
      table.state.addresses.map((key) => ({ key, writable: false })),
      [table],
    );
    const client = new SolanaRpcClient(rpcUrl);
    try {
      expect(await resolveLookupTables(parseWireTransaction(bytes), client)).toEqual({
        ok: false,
        reason: 'invalid_exact_svm_smart_wallet_alt_resolution_failed',
        message: expect.stringMatching(message),
      });
    } finally {
      await client.close();
    }
  });

  it('When the transaction uses five tables, then it is refused before any RPC call; when the RPC fails, the refusal says so', async () => {
    const stub = await stubRpc((_request, res) => json(res, 500, '{}'));
    const client = new SolanaRpcClient(stub.url);
    const tables = keys(5).map((key) => claimedTable(key, keys(1)));
    const accounts = tables.map((table) => ({
      key: table.state.addresses[0] ?? PublicKey.default,
      writable: false,
    }));
    try {
      expect(
        await resolveLookupTables(parseWireTransaction(memoTransaction(accounts, tables)), client),
      ).toEqual({
        ok: false,
        reason: 'invalid_exact_svm_smart_wallet_alt_resolution_failed',
        message: 'the transaction uses 5 address lookup tables; at most 4 are accepted',
      });
      expect(stub.requests).toEqual([]);
      const four = memoTransaction(accounts.slice(0, 4), tables.slice(0, 4));
      expect(await resolveLookupTables(parseWireTransaction(four), client)).toMatchObject({
        ok: false,
        message: expect.stringMatching(/^the address lookup tables could not be fetched: .*HTTP 500/),
      });
      expect(stub.requests.map((r) => r.method)).toEqual(['getMultipleAccounts']);
    } finally {
      await client.close();
      await stub.close();
    }
  });

  it("When account data is not an initialized table (the ALT program's 56-byte meta, then 32-byte addresses), then it is no table", () => {
    const meta = Buffer.alloc(56);
    meta.writeUInt32LE(1, 0);
    const address = randomBytes(32);
    expect(lookupTableAddresses(Buffer.concat([meta, address]))?.map((a) => Buffer.from(a))).toEqual([
      address,
    ]);
    expect(lookupTableAddresses(meta)).toEqual([]);
    expect(lookupTableAddresses(Buffer.concat([meta, address.subarray(1)]))).toBeUndefined();
    expect(lookupTableAddresses(meta.subarray(0, 55))).toBeUndefined();
    const uninitialized = Buffer.concat([Buffer.alloc(56), address]);
    expect(lookupTableAddresses(uninitialized)).toBeUndefined();
  });
});

describe('Settling an official-scheme transaction that uses a lookup table', () => {
  const feePayer = Keypair.generate();
  const payer = Keypair.generate();
  const PRICE = 100_000n;
  let settler: ExactSvmSettler;
  let proxy: Awaited<ReturnType<typeof proxyTo>>;

  beforeAll(async () => {
    await waitForSignature(connection, await connection.requestAirdrop(feePayer.publicKey, LAMPORTS_PER_SOL));
    await localnet.fund(payer.publicKey.toBase58(), { network: 'solana-devnet', usdcAtomic: 10n * PRICE });
    proxy = await proxyTo(rpcUrl);
    settler = new ExactSvmSettler({
      network: 'solana-devnet',
      rpcUrl: proxy.url,
      asset: devnet().mint,
      payTo: devnet().merchantOwner,
      feePayerSecretKey: feePayer.secretKey,
    });
  });
  afterAll(async () => {
    await settler?.close();
    await proxy?.close();
  });

  /** The transfer's source, mint and destination: what a table may hold for it. */
  function transferAccounts(): PublicKey[] {
    const mint = new PublicKey(devnet().mint);
    return [
      getAssociatedTokenAddressSync(mint, payer.publicKey),
      mint,
      new PublicKey(devnet().merchantTokenAccount),
    ];
  }

  /** The official client's layout (limit, price, transferChecked, memo), its accounts from `table`. */
  async function payment(table: AddressLookupTableAccount): Promise<string> {
    const mint = new PublicKey(devnet().mint);
    const instructions = [
      ComputeBudgetProgram.setComputeUnitLimit({ units: 20_000 }),
      ComputeBudgetProgram.setComputeUnitPrice({ microLamports: 1 }),
      createTransferCheckedInstruction(
        getAssociatedTokenAddressSync(mint, payer.publicKey),
        mint,
        new PublicKey(devnet().merchantTokenAccount),
        payer.publicKey,
        PRICE,
        6,
      ),
      new TransactionInstruction({
        programId: MEMO,
        keys: [],
        data: Buffer.from(randomBytes(16).toString('hex')),
      }),
    ];
    const message = new TransactionMessage({
      payerKey: feePayer.publicKey,
      recentBlockhash: (await connection.getLatestBlockhash()).blockhash,
      instructions,
    }).compileToV0Message([table]);
    const tx = new VersionedTransaction(message);
    tx.sign([payer]);
    return Buffer.from(tx.serialize()).toString('base64');
  }

  const tokenBalance = async (account: string) =>
    BigInt((await connection.getTokenAccountBalance(new PublicKey(account))).value.amount);

  it('When its transfer accounts come from a table, then it settles: one getMultipleAccounts call, then the send', async () => {
    const table = await tableOf(transferAccounts());
    const transaction = await payment(table);
    const before = await tokenBalance(devnet().merchantTokenAccount);
    await settler.signatureOf(transaction);
    proxy.requests.length = 0;
    const outcome = await settler.settle(transaction, settler.requirements(PRICE, 60));
    expect(outcome).toMatchObject({ ok: true, payer: payer.publicKey.toBase58() });
    expect(proxy.requests.map((r) => r.method).slice(0, 2)).toEqual([
      'getMultipleAccounts',
      'sendTransaction',
    ]);
    expect(await tokenBalance(devnet().merchantTokenAccount)).toBe(before + PRICE);
  });

  it('When its table was deactivated, then the node refuses the send: simulation_failed and nothing moves', async () => {
    const accounts = transferAccounts();
    const { table, authority } = await createLookupTable({
      rpcUrl,
      addresses: accounts.map((a) => a.toBase58()),
    });
    await deactivateLookupTable({ rpcUrl, table, authority });
    const transaction = await payment(claimedTable(new PublicKey(table), accounts));
    const before = await tokenBalance(devnet().merchantTokenAccount);
    await settler.signatureOf(transaction);
    const outcome = await settler.settle(transaction, settler.requirements(PRICE, 60));
    expect(outcome).toMatchObject({
      ok: false,
      reason: 'invalid_exact_svm_transaction_simulation_failed',
      message: expect.stringContaining("loads an address table account that doesn't exist"),
    });
    expect(await tokenBalance(devnet().merchantTokenAccount)).toBe(before);
  });

  it("When a node refuses the send as an invalid transaction (-32602, as a cluster's sanitisation refuses a deactivated table), then simulation_failed: nothing was sent", async () => {
    const accounts = transferAccounts();
    const key = Keypair.generate().publicKey;
    const data = Buffer.concat([Buffer.alloc(56), ...accounts.map((a) => a.toBuffer())]);
    data.writeUInt32LE(1, 0);
    data.writeBigUInt64LE(BigInt('18446744073709551615'), 4);
    const node = await stubRpc(({ method }, res) =>
      json(
        res,
        200,
        JSON.stringify(
          method === 'getMultipleAccounts'
            ? {
                jsonrpc: '2.0',
                id: 1,
                result: {
                  context: { slot: 1 },
                  value: [
                    {
                      owner: 'AddressLookupTab1e1111111111111111111111111',
                      data: [data.toString('base64'), 'base64'],
                    },
                  ],
                },
              }
            : {
                jsonrpc: '2.0',
                id: 1,
                error: {
                  code: -32602,
                  message:
                    "invalid transaction: Transaction loads an address table account that doesn't exist",
                },
              },
        ),
      ),
    );
    const remote = new ExactSvmSettler({
      network: 'solana-devnet',
      rpcUrl: node.url,
      asset: devnet().mint,
      payTo: devnet().merchantOwner,
      feePayerSecretKey: feePayer.secretKey,
    });
    try {
      const transaction = await payment(claimedTable(key, accounts));
      expect(await remote.settle(transaction, remote.requirements(PRICE, 60))).toMatchObject({
        ok: false,
        reason: 'invalid_exact_svm_transaction_simulation_failed',
      });
      expect(node.requests.map((r) => r.method)).toEqual(['getMultipleAccounts', 'sendTransaction']);
    } finally {
      await remote.close();
      await node.close();
    }
  });
});
