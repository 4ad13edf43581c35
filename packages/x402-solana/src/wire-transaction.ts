/**
 * A Solana wire transaction read without decoding its addresses (docs/payments.md, "Paying with an
 * official x402 client": the claim key of an official-scheme payment is computed from it before any
 * network call). Every field is a view into the wire bytes.
 */
export interface WireTransaction {
  /** The 64-byte signatures, one per required signer, in the order of the first static accounts. */
  signatures: Uint8Array[];
  /** The message: the bytes every signature signs. */
  message: Uint8Array;
  /** The first `signatures.length` static accounts sign the message. */
  staticAccounts: Uint8Array[];
  /** The compiled instructions: indexes into the static accounts (then the loaded ones) and data. */
  instructions: { programIdIndex: number; accountIndexes: Uint8Array; data: Uint8Array }[];
  /**
   * The address table lookups of a version 0 message, in message order (none for a legacy one): the
   * accounts they load follow the static ones, every lookup's writable indexes first, then every
   * lookup's read-only indexes (see `resolveLookupTables`). An empty list is one shared frozen array.
   */
  addressTableLookups: readonly AddressTableLookup[];
}

/** One address table lookup of a version 0 message: views into the wire bytes. */
export interface AddressTableLookup {
  /** The lookup table's 32-byte address. */
  tableAddress: Uint8Array;
  /** Indexes into the table of the accounts loaded writable, one byte each. */
  writableIndexes: Uint8Array;
  /** Indexes into the table of the accounts loaded read-only, one byte each. */
  readonlyIndexes: Uint8Array;
}

/** The lookups of a message with none: shared, so that reading one allocates nothing for them. */
const NO_LOOKUPS: readonly AddressTableLookup[] = Object.freeze([]);

/** The wire bytes are not a legacy or version 0 transaction (truncated, trailing bytes, bad counts). */
export class WireFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WireFormatError';
  }
}

/** A cursor over the wire bytes that refuses to read past their end. */
class Reader {
  private offset = 0;
  constructor(private readonly bytes: Uint8Array) {}

  get position(): number {
    return this.offset;
  }

  get done(): boolean {
    return this.offset === this.bytes.length;
  }

  byte(): number {
    const value = this.bytes[this.offset];
    if (value === undefined) throw new WireFormatError('the transaction is truncated');
    this.offset += 1;
    return value;
  }

  take(length: number): Uint8Array {
    if (this.offset + length > this.bytes.length) throw new WireFormatError('the transaction is truncated');
    const view = this.bytes.subarray(this.offset, this.offset + length);
    this.offset += length;
    return view;
  }

  /** Solana's compact-u16 ("shortvec"): 1 to 3 bytes, 7 bits each, little-endian. */
  shortU16(): number {
    let value = 0;
    for (let i = 0; i < 3; i++) {
      const byte = this.byte();
      value |= (byte & 0x7f) << (7 * i);
      if ((byte & 0x80) === 0) {
        if (i > 0 && byte === 0) throw new WireFormatError('a length is not in its shortest form');
        if (value > 0xffff) throw new WireFormatError('a length does not fit in 16 bits');
        return value;
      }
    }
    throw new WireFormatError('a length does not fit in 16 bits');
  }
}

/**
 * Reads a legacy or version 0 wire transaction: the signatures, the message, its static accounts
 * and instructions, and the address table lookups of a version 0 message (their tables are not read).
 * @param bytes the wire transaction
 * @throws WireFormatError when the bytes are not exactly one such transaction, or the number of
 *   signatures is not the message's number of required signers
 */
export function parseWireTransaction(bytes: Uint8Array): WireTransaction {
  const reader = new Reader(bytes);
  const signatureCount = reader.shortU16();
  const signatures = Array.from({ length: signatureCount }, () => reader.take(64));
  const messageStart = reader.position;
  const prefix = reader.byte();
  const versioned = (prefix & 0x80) !== 0;
  if (versioned && (prefix & 0x7f) !== 0)
    throw new WireFormatError(`transaction version ${prefix & 0x7f} is not supported`);
  const requiredSignatures = versioned ? reader.byte() : prefix;
  reader.byte(); // read-only signed accounts
  reader.byte(); // read-only unsigned accounts
  const accountCount = reader.shortU16();
  const staticAccounts = Array.from({ length: accountCount }, () => reader.take(32));
  reader.take(32); // recent blockhash
  const instructionCount = reader.shortU16();
  const instructions = Array.from({ length: instructionCount }, () => {
    const programIdIndex = reader.byte();
    const accountIndexes = reader.take(reader.shortU16());
    const data = reader.take(reader.shortU16());
    return { programIdIndex, accountIndexes, data };
  });
  let lookups = NO_LOOKUPS;
  const lookupCount = versioned ? reader.shortU16() : 0;
  if (lookupCount > 0)
    lookups = Array.from({ length: lookupCount }, () => ({
      tableAddress: reader.take(32),
      writableIndexes: reader.take(reader.shortU16()),
      readonlyIndexes: reader.take(reader.shortU16()),
    }));
  if (!reader.done) throw new WireFormatError('the transaction has trailing bytes');
  if (signatureCount !== requiredSignatures || requiredSignatures > accountCount)
    throw new WireFormatError(
      `${signatureCount} signatures for ${requiredSignatures} required signers of ${accountCount} accounts`,
    );
  return {
    signatures,
    message: bytes.subarray(messageStart),
    staticAccounts,
    instructions,
    addressTableLookups: lookups,
  };
}
