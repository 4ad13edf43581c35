import {
  AddressLookupTableAccount,
  Keypair,
  PublicKey,
  TransactionInstruction,
  TransactionMessage,
} from '@solana/web3.js';
import {
  balanceDelta,
  findTransfersChecked,
  resolveAccountKeys,
  TOKEN_2022_PROGRAM_ADDRESS,
  TOKEN_PROGRAM_ADDRESS,
} from '../src/index';
import { bs58 } from '../src/deps';
import { createTransferCheckedInstruction } from '../src/deps';
import { rpcTransactionOf } from './support/rpc-json';

const key = () => Keypair.generate().publicKey;

function tokenBalance(accountIndex: number, mint: PublicKey, amount: string) {
  return { accountIndex, mint: mint.toBase58(), uiTokenAmount: { amount } };
}

describe('finding transferChecked instructions', () => {
  it('When the recipient and mint come from an address lookup table, then the keys resolve through meta.loadedAddresses', () => {
    const payer = key();
    const source = key();
    const payTo = key();
    const mint = key();
    const table = new AddressLookupTableAccount({
      key: key(),
      state: {
        deactivationSlot: BigInt('18446744073709551615'),
        lastExtendedSlot: 0,
        lastExtendedSlotStartIndex: 0,
        authority: undefined,
        addresses: [mint, payTo],
      },
    });
    const message = new TransactionMessage({
      payerKey: payer,
      recentBlockhash: bs58.encode(new Uint8Array(32).fill(1)),
      instructions: [createTransferCheckedInstruction(source, mint, payTo, payer, 100000n, 6)],
    }).compileToV0Message([table]);
    const lookups = message.getAccountKeys({ addressLookupTableAccounts: [table] }).accountKeysFromLookups;
    expect(lookups?.writable.map(String)).toEqual([payTo.toBase58()]);
    const keys = [
      ...message.staticAccountKeys,
      ...(lookups?.writable ?? []),
      ...(lookups?.readonly ?? []),
    ].map(String);
    const payToIndex = keys.indexOf(payTo.toBase58());
    const tx = rpcTransactionOf(
      message,
      {
        loadedAddresses: { writable: lookups?.writable ?? [], readonly: lookups?.readonly ?? [] },
        preTokenBalances: [tokenBalance(payToIndex, mint, '5')],
        postTokenBalances: [tokenBalance(payToIndex, mint, '100005')],
      },
      { slot: 7, blockTime: 1_700_000_000 },
    );
    // The mint is a readonly loaded address, payTo a writable one: both lie beyond the static keys.
    expect(keys.indexOf(mint.toBase58())).toBeGreaterThanOrEqual(message.staticAccountKeys.length);
    expect(payToIndex).toBeGreaterThanOrEqual(message.staticAccountKeys.length);

    const accountKeys = resolveAccountKeys(tx);
    expect(accountKeys).toEqual(keys);
    const transfers = findTransfersChecked(tx, accountKeys);
    expect(transfers).toEqual([
      {
        programId: TOKEN_PROGRAM_ADDRESS,
        source: source.toBase58(),
        mint: mint.toBase58(),
        destination: payTo.toBase58(),
        authority: payer.toBase58(),
        amountAtomic: 100000n,
        decimals: 6,
        location: 'top-level',
        extraAccounts: [],
      },
    ]);
    expect(balanceDelta(tx, accountKeys, payTo.toBase58(), mint.toBase58())).toBe(100000n);
  });

  it('When a Token-2022 transferChecked runs as an inner instruction, then it is found; other instructions are ignored', () => {
    const payer = key();
    const router = key();
    const source = key();
    const payTo = key();
    const mint = key();
    const token2022 = new PublicKey(TOKEN_2022_PROGRAM_ADDRESS);
    const outer = new TransactionInstruction({
      programId: router,
      keys: [
        { pubkey: source, isSigner: false, isWritable: true },
        { pubkey: payTo, isSigner: false, isWritable: true },
        { pubkey: mint, isSigner: false, isWritable: false },
        { pubkey: token2022, isSigner: false, isWritable: false },
      ],
      data: Buffer.from([1, 2, 3]),
    });
    const message = new TransactionMessage({
      payerKey: payer,
      recentBlockhash: bs58.encode(new Uint8Array(32).fill(1)),
      instructions: [outer],
    }).compileToV0Message();
    const keys = message.staticAccountKeys.map(String);
    const index = (k: PublicKey) => keys.indexOf(k.toBase58());
    const inner = createTransferCheckedInstruction(source, mint, payTo, payer, 2_500_000n, 6, [], token2022);
    const notATransfer = Buffer.from([3, 1, 0, 0, 0, 0, 0, 0, 0]);
    const tx = rpcTransactionOf(
      message,
      {
        innerInstructions: [
          {
            index: 0,
            instructions: [
              {
                programIdIndex: index(token2022),
                accounts: [index(source), index(payTo), index(payer)],
                data: bs58.encode(notATransfer),
              },
              {
                programIdIndex: index(token2022),
                accounts: [index(source), index(mint), index(payTo), index(payer)],
                data: bs58.encode(inner.data),
              },
            ],
          },
        ],
        postTokenBalances: [tokenBalance(index(payTo), mint, '2500000')],
      },
      { slot: 8, blockTime: null },
    );
    const transfers = findTransfersChecked(tx, resolveAccountKeys(tx));
    expect(transfers).toHaveLength(1);
    expect(transfers[0]).toMatchObject({
      programId: TOKEN_2022_PROGRAM_ADDRESS,
      amountAtomic: 2_500_000n,
      location: 'inner',
      authority: payer.toBase58(),
    });
    // An account created by the transaction has no pre balance: the delta is the whole post balance.
    expect(balanceDelta(tx, resolveAccountKeys(tx), payTo.toBase58(), mint.toBase58())).toBe(2_500_000n);
    expect(balanceDelta(tx, resolveAccountKeys(tx), payTo.toBase58(), key().toBase58())).toBe(0n);
  });
});
