import {
  Keypair,
  PublicKey,
  SystemProgram,
  Transaction,
  TransactionMessage,
  VersionedTransaction,
  AddressLookupTableAccount,
} from '@solana/web3.js';
import { getCompiledTransactionMessageDecoder, getTransactionDecoder } from '@solana/kit';
import { bs58 } from '../src/deps';
import { parseWireTransaction, WireFormatError } from '../src/wire-transaction';

const blockhash = bs58.encode(Buffer.alloc(32, 7));

function legacy(): Uint8Array {
  const payer = Keypair.generate();
  const other = Keypair.generate();
  const tx = new Transaction({ feePayer: payer.publicKey, recentBlockhash: blockhash }).add(
    SystemProgram.transfer({
      fromPubkey: other.publicKey,
      toPubkey: Keypair.generate().publicKey,
      lamports: 5,
    }),
  );
  tx.sign(payer, other);
  return tx.serialize();
}

function v0WithLookup(): Uint8Array {
  const payer = Keypair.generate();
  const table = new AddressLookupTableAccount({
    key: Keypair.generate().publicKey,
    state: {
      deactivationSlot: BigInt('18446744073709551615'),
      lastExtendedSlot: 0,
      lastExtendedSlotStartIndex: 0,
      addresses: [Keypair.generate().publicKey, Keypair.generate().publicKey],
    },
  });
  const message = new TransactionMessage({
    payerKey: payer.publicKey,
    recentBlockhash: blockhash,
    instructions: [
      SystemProgram.transfer({
        fromPubkey: payer.publicKey,
        toPubkey: table.state.addresses[0] ?? PublicKey.default,
        lamports: 5,
      }),
    ],
  }).compileToV0Message([table]);
  const tx = new VersionedTransaction(message);
  tx.sign([payer]);
  return tx.serialize();
}

describe('Reading a wire transaction without decoding its addresses', () => {
  it.each([
    ['a legacy transaction with two signers', legacy],
    ['a version 0 transaction with an address table lookup', v0WithLookup],
  ])(
    'When it is %s, then signatures, message, signers and instructions are what @solana/kit decodes',
    (_name, build) => {
      const bytes = build();
      const wire = parseWireTransaction(bytes);
      const decoded = getTransactionDecoder().decode(bytes);
      const message = getCompiledTransactionMessageDecoder().decode(decoded.messageBytes);
      expect(Buffer.from(wire.message)).toEqual(Buffer.from(decoded.messageBytes));
      expect(wire.staticAccounts.map((key) => bs58.encode(key))).toEqual(message.staticAccounts);
      expect(Object.keys(decoded.signatures)).toEqual(
        wire.staticAccounts.slice(0, wire.signatures.length).map((key) => bs58.encode(key)),
      );
      expect(wire.signatures.map((signature) => Buffer.from(signature))).toEqual(
        Object.values(decoded.signatures).map((signature) => Buffer.from(signature ?? new Uint8Array(64))),
      );
      expect(
        wire.instructions.map((ix) => ({
          programAddressIndex: ix.programIdIndex,
          accountIndices: [...ix.accountIndexes],
          data: Buffer.from(ix.data),
        })),
      ).toEqual(
        message.instructions.map((ix) => ({
          programAddressIndex: ix.programAddressIndex,
          accountIndices: [...(ix.accountIndices ?? [])],
          data: Buffer.from(ix.data ?? new Uint8Array()),
        })),
      );
      expect(
        wire.addressTableLookups.map((lookup) => ({
          lookupTableAddress: bs58.encode(lookup.tableAddress),
          writableIndexes: [...lookup.writableIndexes],
          readonlyIndexes: [...lookup.readonlyIndexes],
        })),
      ).toEqual(
        ('addressTableLookups' in message ? (message.addressTableLookups ?? []) : []).map((lookup) => ({
          lookupTableAddress: lookup.lookupTableAddress,
          writableIndexes: [...lookup.writableIndexes],
          readonlyIndexes: [...lookup.readonlyIndexes],
        })),
      );
    },
  );

  it('When two transactions have no address table lookups, then they share one empty list (nothing allocated for it)', () => {
    const first = parseWireTransaction(legacy());
    expect(first.addressTableLookups).toHaveLength(0);
    expect(parseWireTransaction(legacy()).addressTableLookups).toBe(first.addressTableLookups);
    expect(parseWireTransaction(v0WithLookup()).addressTableLookups).toHaveLength(1);
  });

  const malformed: [string, (bytes: Uint8Array) => Uint8Array][] = [
    ['truncated', (bytes) => bytes.subarray(0, bytes.length - 1)],
    ['followed by a trailing byte', (bytes) => Buffer.concat([bytes, Buffer.from([0])])],
    ['empty', () => new Uint8Array()],
    ['of version 1', (bytes) => Uint8Array.from(bytes, (byte, i) => (i === 1 + 64 ? 0x81 : byte))],
    [
      'carrying one signature fewer than its required signers',
      (bytes) => Buffer.concat([Buffer.from([0]), bytes.subarray(1 + 64)]),
    ],
    [
      'counting its signatures in a longer form than needed',
      (bytes) => Buffer.concat([Buffer.from([0x81, 0x00]), bytes.subarray(1)]),
    ],
  ];
  it.each(malformed)('When the bytes are %s, then WireFormatError', (_name, tamper) => {
    expect(() => parseWireTransaction(tamper(v0WithLookup()))).toThrow(WireFormatError);
  });
});
