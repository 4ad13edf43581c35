import { randomBytes } from 'node:crypto';
import {
  type AddressLookupTableAccount,
  ComputeBudgetProgram,
  Keypair,
  MessageV0,
  PublicKey,
  SystemProgram,
  TransactionInstruction,
  TransactionMessage,
  VersionedTransaction,
} from '@solana/web3.js';
import {
  bs58,
  createTransferCheckedInstruction,
  getAssociatedTokenAddressSync,
  TOKEN_2022_PROGRAM_ID,
  TOKEN_PROGRAM_ID,
} from '../src/deps';
import { lookupTableAccount } from '@repo/solana-localnet';
import { checkExactSvmTransaction, type ExactSvmExpectation } from '../src/exact-svm-checks';
import { ExactSvmSettler } from '../src/exact-svm';
import { parseWireTransaction } from '../src/wire-transaction';

// Hostile official-scheme transactions against the scheme's verification rules, checked without any
// network call (docs/payments.md, "Paying with an official x402 client").

const MEMO = new PublicKey('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');
const LIGHTHOUSE = new PublicKey('L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95');
const blockhash = bs58.encode(Buffer.alloc(32, 9));
const feePayer = Keypair.generate();
const payer = Keypair.generate();
const merchant = Keypair.generate().publicKey;
const mint = Keypair.generate().publicKey;
const PRICE = 100_000n;

const expected: ExactSvmExpectation = {
  feePayer: feePayer.publicKey.toBuffer(),
  mint: mint.toBuffer(),
  destinations: {
    token: getAssociatedTokenAddressSync(mint, merchant, true, TOKEN_PROGRAM_ID).toBuffer(),
    token2022: getAssociatedTokenAddressSync(mint, merchant, true, TOKEN_2022_PROGRAM_ID).toBuffer(),
  },
  amount: PRICE,
  maxComputeUnits: 200_000,
  maxPriorityFeeMicroLamports: 50_000n,
  maxRequiredSignatures: 2,
};

interface Shape {
  units?: number;
  microLamports?: number;
  mint?: PublicKey;
  amount?: bigint;
  destinationOwner?: PublicKey;
  tokenProgram?: PublicKey;
  source?: PublicKey;
  authority?: Keypair;
  /** Replaces the three required instructions. */
  head?: TransactionInstruction[];
  optional?: TransactionInstruction[];
  feePayerKey?: PublicKey;
  extraSigner?: Keypair;
  lookupTable?: boolean;
  /** Lookup tables the message is compiled with (their addresses come from them). */
  tables?: AddressLookupTableAccount[];
}

function memo(text: string, keys: PublicKey[] = []): TransactionInstruction {
  return new TransactionInstruction({
    programId: MEMO,
    keys: keys.map((pubkey) => ({ pubkey, isSigner: false, isWritable: false })),
    data: Buffer.from(text, 'utf8'),
  });
}

function transferOf(shape: Shape): TransactionInstruction {
  const program = shape.tokenProgram ?? TOKEN_PROGRAM_ID;
  const authority = shape.authority ?? payer;
  const asset = shape.mint ?? mint;
  return createTransferCheckedInstruction(
    shape.source ?? getAssociatedTokenAddressSync(asset, authority.publicKey, true, program),
    asset,
    getAssociatedTokenAddressSync(asset, shape.destinationOwner ?? merchant, true, program),
    authority.publicKey,
    shape.amount ?? PRICE,
    6,
    [],
    program,
  );
}

/** The wire bytes of an official-scheme transaction, faithful unless `shape` says otherwise. */
function transaction(shape: Shape = {}): Uint8Array {
  const instructions = [
    ...(shape.head ?? [
      ComputeBudgetProgram.setComputeUnitLimit({ units: shape.units ?? 20_000 }),
      ComputeBudgetProgram.setComputeUnitPrice({ microLamports: shape.microLamports ?? 1 }),
      transferOf(shape),
    ]),
    ...(shape.optional ?? [memo(randomBytes(16).toString('hex'))]),
  ];
  if (shape.extraSigner)
    instructions.push({
      ...memo('signer'),
      keys: [{ pubkey: shape.extraSigner.publicKey, isSigner: true, isWritable: false }],
    } as TransactionInstruction);
  const table = shape.lookupTable ? [lookupTableAccount(Keypair.generate().publicKey, [merchant])] : [];
  if (shape.lookupTable) instructions.push(memo('looked up', [merchant]));
  const message = new TransactionMessage({
    payerKey: shape.feePayerKey ?? feePayer.publicKey,
    recentBlockhash: blockhash,
    instructions,
  }).compileToV0Message([...table, ...(shape.tables ?? [])]);
  const tx = new VersionedTransaction(message);
  const signers = [shape.authority ?? payer, ...(shape.extraSigner ? [shape.extraSigner] : [])].filter(
    (k) => !k.publicKey.equals(shape.feePayerKey ?? feePayer.publicKey),
  );
  tx.sign(signers);
  return tx.serialize();
}

const check = (shape: Shape = {}, memoExpected?: string) =>
  checkExactSvmTransaction(parseWireTransaction(transaction(shape)), {
    ...expected,
    ...(memoExpected === undefined ? {} : { memo: memoExpected }),
  });

describe("The official scheme's checks of a transaction", () => {
  it("When the transaction is the official client's shape, then it passes and names the transfer authority as payer", () => {
    expect(check()).toEqual({ ok: true, payer: payer.publicKey.toBase58() });
    expect(check({ optional: [] })).toEqual({ ok: true, payer: payer.publicKey.toBase58() });
    expect(
      check({
        optional: [
          memo('x'),
          new TransactionInstruction({ programId: LIGHTHOUSE, keys: [], data: Buffer.from([1]) }),
        ],
      }),
    ).toMatchObject({ ok: true });
    expect(check({ tokenProgram: TOKEN_2022_PROGRAM_ID })).toMatchObject({ ok: true });
    // Seven, as the official facilitator accepts: a wallet's Lighthouse assertions beside the memo.
    const lighthouse = new TransactionInstruction({
      programId: LIGHTHOUSE,
      keys: [],
      data: Buffer.from([2]),
    });
    expect(check({ optional: [memo('x'), lighthouse, lighthouse, lighthouse] })).toMatchObject({ ok: true });
  });

  const other = Keypair.generate().publicKey;
  it.each<[string, Shape, string]>([
    ['another mint', { mint: other }, 'mint_mismatch'],
    ['one atomic unit less', { amount: PRICE - 1n }, 'amount_mismatch'],
    ['one atomic unit more', { amount: PRICE + 1n }, 'amount_mismatch'],
    ["another owner's token account as destination", { destinationOwner: other }, 'recipient_mismatch'],
    ['the fee payer as transfer authority', { authority: feePayer }, 'fee_payer_transferring_funds'],
    ['the fee payer as transfer source', { source: feePayer.publicKey }, 'fee_payer_transferring_funds'],
    [
      "the fee payer in another instruction's accounts",
      { optional: [memo('x', [feePayer.publicKey])] },
      'fee_payer_transferring_funds',
    ],
    ['a compute price above the cap', { microLamports: 50_001 }, 'compute_price_instruction_too_high'],
    ['a compute unit limit above the cap', { units: 200_001 }, 'compute_limit_instruction_too_high'],
    [
      'no compute unit limit first',
      {
        head: [
          ComputeBudgetProgram.setComputeUnitPrice({ microLamports: 1 }),
          ComputeBudgetProgram.setComputeUnitLimit({ units: 20_000 }),
          transferOf({}),
        ],
      },
      'compute_limit_instruction',
    ],
    [
      'a plain transfer instead of transferChecked',
      {
        head: [
          ComputeBudgetProgram.setComputeUnitLimit({ units: 20_000 }),
          ComputeBudgetProgram.setComputeUnitPrice({ microLamports: 1 }),
          SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: merchant, lamports: 1 }),
        ],
      },
      'no_transfer_instruction',
    ],
    [
      'an extra system transfer',
      { optional: [SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: other, lamports: 1 })] },
      'unknown_fourth_instruction',
    ],
    [
      'a system transfer after the memo',
      {
        optional: [
          memo('x'),
          SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: other, lamports: 1 }),
        ],
      },
      'unknown_fifth_instruction',
    ],
    [
      'eight instructions',
      { optional: [memo('a'), memo('b'), memo('c'), memo('d'), memo('e')] },
      'instructions_length',
    ],
    [
      'two instructions',
      {
        head: [ComputeBudgetProgram.setComputeUnitLimit({ units: 20_000 }), transferOf({})],
        optional: [],
      },
      'instructions_length',
    ],
    ['a third signer', { extraSigner: Keypair.generate() }, 'excessive_signers'],
    ['an address lookup table', { lookupTable: true }, 'alt_resolution_not_available'],
  ])('When the transaction has %s, then it is refused', (_what, shape, reason) => {
    const result = check(shape);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.reason).toMatch(new RegExp(`^invalid_exact_svm_.*${reason}$`));
  });

  it('When the offer carries a memo, then exactly one Memo instruction with exactly its bytes passes', () => {
    expect(check({ optional: [memo('ref-1')] }, 'ref-1')).toMatchObject({ ok: true });
    expect(check({ optional: [] }, 'ref-1')).toMatchObject({
      reason: 'invalid_exact_svm_payload_memo_count',
    });
    expect(check({ optional: [memo('ref-1'), memo('ref-1')] }, 'ref-1')).toMatchObject({
      reason: 'invalid_exact_svm_payload_memo_count',
    });
    expect(check({ optional: [memo('ref-2')] }, 'ref-1')).toMatchObject({
      reason: 'invalid_exact_svm_payload_memo_mismatch',
    });
  });

  it('When another wallet is the fee payer, then the fee payer check refuses it', () => {
    expect(check({ feePayerKey: payer.publicKey })).toMatchObject({
      ok: false,
      reason: 'invalid_exact_svm_fee_payer_mismatch',
    });
  });
});

/** A lookup table holding `addresses`, at `key` (default: a new address). */
const lookupTable = (addresses: PublicKey[], key = Keypair.generate().publicKey) =>
  lookupTableAccount(key, addresses);

/**
 * Checks `bytes` with the accounts its lookups load from `onChain` (the tables as the ledger holds
 * them), resolved by web3.js's `resolveAddressTableLookups` (writable, then read-only).
 */
function checkLookedUp(bytes: Uint8Array, onChain: AddressLookupTableAccount[]) {
  const { message } = VersionedTransaction.deserialize(bytes) as { message: MessageV0 };
  const { writable, readonly } = message.resolveAddressTableLookups(onChain);
  return checkExactSvmTransaction(
    parseWireTransaction(bytes),
    expected,
    [...writable, ...readonly].map((key) => key.toBuffer()),
  );
}

/** `bytes` with one more read-only lookup of `table`'s index 0, which no instruction uses. */
function withExtraLookup(bytes: Uint8Array, table: PublicKey, programOfLast = false): Uint8Array {
  const { message } = VersionedTransaction.deserialize(bytes) as { message: MessageV0 };
  const loadedBefore = message.numAccountKeysFromLookups;
  const instructions = message.compiledInstructions.map((ix, i, all) =>
    programOfLast && i === all.length - 1
      ? { ...ix, programIdIndex: message.staticAccountKeys.length + loadedBefore }
      : ix,
  );
  return new VersionedTransaction(
    new MessageV0({
      header: message.header,
      staticAccountKeys: message.staticAccountKeys,
      recentBlockhash: message.recentBlockhash,
      compiledInstructions: instructions,
      addressTableLookups: [
        ...message.addressTableLookups,
        { accountKey: table, writableIndexes: [], readonlyIndexes: [0] },
      ],
    }),
  ).serialize();
}

describe("The official scheme's checks of a transaction with address lookup tables", () => {
  const source = getAssociatedTokenAddressSync(mint, payer.publicKey, true, TOKEN_PROGRAM_ID);
  const destination = getAssociatedTokenAddressSync(mint, merchant, true, TOKEN_PROGRAM_ID);

  it("When the transfer's source, mint and destination are loaded from a table, then it passes and names the payer", () => {
    const table = lookupTable([source, mint, destination]);
    const bytes = transaction({ tables: [table] });
    const wire = parseWireTransaction(bytes);
    expect(wire.addressTableLookups).toHaveLength(1);
    expect(wire.staticAccounts.some((key) => destination.toBuffer().equals(key))).toBe(false);
    expect(checkLookedUp(bytes, [table])).toEqual({ ok: true, payer: payer.publicKey.toBase58() });
    const token2022 = lookupTable([
      getAssociatedTokenAddressSync(mint, payer.publicKey, true, TOKEN_2022_PROGRAM_ID),
      getAssociatedTokenAddressSync(mint, merchant, true, TOKEN_2022_PROGRAM_ID),
    ]);
    expect(
      checkLookedUp(transaction({ tables: [token2022], tokenProgram: TOKEN_2022_PROGRAM_ID }), [token2022]),
    ).toMatchObject({ ok: true });
  });

  it('When the accounts come from two tables, writable and read-only, then they are read in the runtime order', () => {
    const writable = lookupTable([destination, source]);
    const readonly = lookupTable([mint]);
    const bytes = transaction({ tables: [readonly, writable] });
    expect(parseWireTransaction(bytes).addressTableLookups).toHaveLength(2);
    expect(checkLookedUp(bytes, [readonly, writable])).toMatchObject({ ok: true });
  });

  const other = Keypair.generate().publicKey;
  it.each<[string, (table: PublicKey) => AddressLookupTableAccount, string]>([
    [
      "another owner's token account at the destination's index",
      (key) => lookupTable([source, mint, getAssociatedTokenAddressSync(mint, other, true)], key),
      'recipient_mismatch',
    ],
    [
      'another mint at the mint index',
      (key) => lookupTable([source, other, destination], key),
      'mint_mismatch',
    ],
    [
      'the fee payer at the source index',
      (key) => lookupTable([feePayer.publicKey, mint, destination], key),
      'fee_payer_transferring_funds',
    ],
  ])('When the table on chain holds %s, then it is refused', (_what, onChain, reason) => {
    const table = lookupTable([source, mint, destination]);
    const result = checkLookedUp(transaction({ tables: [table] }), [onChain(table.key)]);
    expect(!result.ok && result.reason).toMatch(new RegExp(`^invalid_exact_svm_.*${reason}$`));
  });

  it("When the fee payer is loaded from a table into a memo's accounts, then fee_payer_transferring_funds", () => {
    const placeholder = Keypair.generate().publicKey;
    const table = lookupTable([placeholder]);
    const bytes = transaction({ tables: [table], optional: [memo('x', [placeholder])] });
    expect(checkLookedUp(bytes, [table])).toMatchObject({ ok: true });
    expect(checkLookedUp(bytes, [lookupTable([feePayer.publicKey], table.key)])).toMatchObject({
      ok: false,
      reason: 'invalid_exact_svm_payload_transaction_fee_payer_transferring_funds',
    });
  });

  it('When the fee payer is loaded but no instruction names it, then it is refused too', () => {
    const table = lookupTable([source, mint, destination]);
    const extra = lookupTable([feePayer.publicKey]);
    const bytes = withExtraLookup(transaction({ tables: [table] }), extra.key);
    expect(checkLookedUp(bytes, [table, lookupTable([other], extra.key)])).toMatchObject({ ok: true });
    expect(checkLookedUp(bytes, [table, extra])).toMatchObject({
      ok: false,
      reason: 'invalid_exact_svm_payload_transaction_fee_payer_transferring_funds',
    });
  });

  it("When an instruction's program is loaded from a table, then it is refused as malformed (programs must be static)", () => {
    const table = lookupTable([source, mint, destination]);
    const programs = lookupTable([MEMO]);
    const bytes = withExtraLookup(transaction({ tables: [table] }), programs.key, true);
    expect(checkLookedUp(bytes, [table, programs])).toMatchObject({
      ok: false,
      reason: 'invalid_exact_svm_payload_transaction_could_not_be_decoded',
    });
  });

  it('When fewer accounts are loaded than the instructions index, then it is refused as malformed', () => {
    const table = lookupTable([source, mint, destination]);
    const bytes = transaction({ tables: [table] });
    expect(
      checkExactSvmTransaction(parseWireTransaction(bytes), expected, [
        source.toBuffer(),
        destination.toBuffer(),
      ]),
    ).toMatchObject({ ok: false, reason: 'invalid_exact_svm_payload_transaction_could_not_be_decoded' });
  });
});

describe('Settling a hostile transaction', () => {
  // An RPC URL nobody listens on: a settlement that reached the network would fail differently.
  const settler = new ExactSvmSettler({
    network: 'solana-devnet',
    rpcUrl: 'http://127.0.0.1:9',
    asset: mint.toBase58(),
    payTo: merchant.toBase58(),
    feePayerSecretKey: feePayer.secretKey,
  });
  afterAll(() => settler.close());
  const requirements = settler.requirements(PRICE, 60);
  const base64 = (shape: Shape) => Buffer.from(transaction(shape)).toString('base64');

  it.each<[string, Shape, string]>([
    ['a wrong amount', { amount: 1n }, 'amount_mismatch'],
    ['the fee payer as authority', { authority: feePayer }, 'fee_payer_transferring_funds'],
    ['another mint', { mint: Keypair.generate().publicKey }, 'mint_mismatch'],
  ])('When it has %s, then settle refuses it before any network call', async (_what, shape, reason) => {
    const transaction = base64(shape);
    await settler.signatureOf(transaction).catch(() => undefined);
    const outcome = await settler.settle(transaction, requirements);
    expect(outcome).toMatchObject({ ok: false });
    expect(!outcome.ok && outcome.reason).toMatch(new RegExp(`^invalid_exact_svm_.*${reason}$`));
  });

  it('When it uses more than four lookup tables, or tables the RPC cannot fetch, then settle refuses it with the facilitator reason', async () => {
    const extra = Array.from({ length: 3 }, () => Keypair.generate().publicKey);
    const tables = [
      lookupTable([getAssociatedTokenAddressSync(mint, payer.publicKey, true)]),
      lookupTable([mint]),
      lookupTable([getAssociatedTokenAddressSync(mint, merchant, true)]),
      ...extra.map((key) => lookupTable([key])),
    ];
    const five = base64({ tables: tables.slice(0, 5), optional: [memo('x', extra.slice(0, 2))] });
    expect(parseWireTransaction(Buffer.from(five, 'base64')).addressTableLookups).toHaveLength(5);
    await settler.signatureOf(five);
    expect(await settler.settle(five, requirements)).toMatchObject({
      ok: false,
      reason: 'invalid_exact_svm_smart_wallet_alt_resolution_failed',
      message: expect.stringContaining('at most 4'),
    });
    // Four are fetched, from an RPC URL nobody listens on.
    const four = base64({ tables: tables.slice(0, 4), optional: [memo('x', extra.slice(0, 1))] });
    await settler.signatureOf(four);
    expect(await settler.settle(four, requirements)).toMatchObject({
      ok: false,
      reason: 'invalid_exact_svm_smart_wallet_alt_resolution_failed',
      message: expect.stringContaining('could not be fetched'),
    });
  });

  it('When it has three signers, then signatureOf refuses it before checking any signature', async () => {
    await expect(settler.signatureOf(base64({ extraSigner: Keypair.generate() }))).rejects.toMatchObject({
      reason: 'invalid_exact_svm_payload_excessive_signers',
    });
  });

  it('When the offer is for another network or fee payer, then settle refuses it', async () => {
    const transaction = base64({});
    expect(await settler.settle(transaction, { ...requirements, network: 'solana:other' })).toMatchObject({
      reason: 'invalid_exact_svm_network_mismatch',
    });
    expect(
      await settler.settle(transaction, { ...requirements, extra: { feePayer: payer.publicKey.toBase58() } }),
    ).toMatchObject({ reason: 'invalid_exact_svm_fee_payer_not_managed_by_facilitator' });
  });

  it('When the payer signature does not verify, then signatureOf refuses it', async () => {
    const bytes = Buffer.from(transaction({}));
    const at = 1 + 64 + 5; // in the payer's signature (the second slot)
    bytes.writeUInt8(bytes.readUInt8(at) ^ 0xff, at);
    await expect(settler.signatureOf(Buffer.from(bytes).toString('base64'))).rejects.toMatchObject({
      reason: 'invalid_exact_svm_payload_signature_invalid',
    });
  });
});
