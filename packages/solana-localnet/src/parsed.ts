import { PublicKey, VersionedTransaction } from '@solana/web3.js';
import { bs58 } from './deps';
import {
  TOKEN_2022_PROGRAM,
  TOKEN_PROGRAM,
  decodeMint,
  decodeTokenAccount,
  uiTokenAmount,
} from './token-accounts';
import type { RpcCompiledInstruction, TxRecord } from './tx-record';

const SYSTEM_PROGRAM = '11111111111111111111111111111111';
const ATA_PROGRAM = 'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL';
const ADDRESS_LOOKUP_TABLE_PROGRAM = 'AddressLookupTab1e1111111111111111111111111';
// SPL Memo v2 (what x402 clients use) and v1: a validator parses both as program "spl-memo".
const MEMO_PROGRAMS: ReadonlySet<string> = new Set([
  'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr',
  'Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo',
]);
const LOOKUP_TABLE_META_SIZE = 56;

type Parsed = { type: string; info: Record<string, unknown> };

function u64(data: Uint8Array, offset: number): bigint | null {
  if (data.length < offset + 8) return null;
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength).readBigUInt64LE(offset);
}

function key(data: Uint8Array, offset: number): string | null {
  return data.length < offset + 32 ? null : new PublicKey(data.subarray(offset, offset + 32)).toBase58();
}

/**
 * A token instruction that moves an amount (the u64 at byte 1): `info` is its accounts then `amount`
 * (a string of atomic units), or for the checked forms (decimals at byte 9) `tokenAmount`, in the
 * order a validator writes them. Null when the data is too short.
 */
function amountInstruction(
  type: string,
  accounts: Record<string, string | undefined>,
  data: Uint8Array,
  checked: boolean,
): Parsed | null {
  const amount = u64(data, 1);
  if (amount === null) return null;
  if (!checked) return { type, info: { ...accounts, amount: amount.toString() } };
  const decimals = data[9];
  if (decimals === undefined) return null;
  return { type, info: { ...accounts, tokenAmount: uiTokenAmount(amount, decimals) } };
}

function parseToken(data: Uint8Array, accounts: string[]): Parsed | null {
  const [a0, a1, a2, a3] = accounts;
  switch (data[0]) {
    case 3:
      return amountInstruction('transfer', { source: a0, destination: a1, authority: a2 }, data, false);
    case 12:
      return amountInstruction(
        'transferChecked',
        { source: a0, mint: a1, destination: a2, authority: a3 },
        data,
        true,
      );
    case 7:
      return amountInstruction('mintTo', { mint: a0, account: a1, mintAuthority: a2 }, data, false);
    case 14:
      return amountInstruction('mintToChecked', { mint: a0, account: a1, mintAuthority: a2 }, data, true);
    case 18:
      return { type: 'initializeAccount3', info: { account: a0, mint: a1, owner: key(data, 1) } };
    case 20:
      return { type: 'initializeMint2', info: { mint: a0, decimals: data[1], mintAuthority: key(data, 2) } };
    case 21:
      return { type: 'getAccountDataSize', info: { mint: a0 } };
    case 22:
      return { type: 'initializeImmutableOwner', info: { account: a0 } };
    default:
      return null;
  }
}

function parseSystem(data: Uint8Array, accounts: string[]): Parsed | null {
  if (data.length < 4) return null;
  const tag = Buffer.from(data.buffer, data.byteOffset, data.byteLength).readUInt32LE(0);
  const [a0, a1] = accounts;
  switch (tag) {
    case 0: {
      const lamports = u64(data, 4);
      const space = u64(data, 12);
      if (lamports === null || space === null) return null;
      return {
        type: 'createAccount',
        info: {
          source: a0,
          newAccount: a1,
          lamports: Number(lamports),
          space: Number(space),
          owner: key(data, 20),
        },
      };
    }
    case 1:
      return { type: 'assign', info: { account: a0, owner: key(data, 4) } };
    case 2: {
      const lamports = u64(data, 4);
      if (lamports === null) return null;
      return { type: 'transfer', info: { source: a0, destination: a1, lamports: Number(lamports) } };
    }
    case 8: {
      const space = u64(data, 4);
      if (space === null) return null;
      return { type: 'allocate', info: { account: a0, space: Number(space) } };
    }
    default:
      return null;
  }
}

function parseAta(data: Uint8Array, accounts: string[]): Parsed | null {
  const [source, account, wallet, mint, systemProgram, tokenProgram] = accounts;
  const info = { source, account, wallet, mint, systemProgram, tokenProgram };
  if (data.length === 0 || data[0] === 0) return { type: 'create', info };
  if (data[0] === 1) return { type: 'createIdempotent', info };
  return null;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function parseInstruction(
  keys: string[],
  programIdIndex: number,
  accountIndexes: number[],
  data: Uint8Array,
  stackHeight: number | null,
): unknown {
  const programId = keys[programIdIndex] ?? '';
  const accounts = accountIndexes.map((i) => keys[i] ?? '');
  let program: string | null = null;
  let parsed: Parsed | string | null = null;
  if (MEMO_PROGRAMS.has(programId)) {
    // A memo parses as its text; bytes that are not UTF-8 leave it partially decoded, as on a validator.
    try {
      program = 'spl-memo';
      parsed = utf8.decode(data);
    } catch {
      parsed = null;
    }
  } else if (programId === TOKEN_PROGRAM || programId === TOKEN_2022_PROGRAM) {
    program = programId === TOKEN_PROGRAM ? 'spl-token' : 'spl-token-2022';
    parsed = parseToken(data, accounts);
  } else if (programId === SYSTEM_PROGRAM) {
    program = 'system';
    parsed = parseSystem(data, accounts);
  } else if (programId === ATA_PROGRAM) {
    program = 'spl-associated-token-account';
    parsed = parseAta(data, accounts);
  }
  if (program !== null && parsed !== null) return { program, programId, parsed, stackHeight };
  return { programId, accounts, data: bs58.encode(data), stackHeight };
}

/** `addressTableLookups` of a v0 message in the RPC shape (legacy messages have none). */
export function addressTableLookupsJson(message: VersionedTransaction['message']): {
  addressTableLookups?: unknown[];
} {
  if (message.version !== 0) return {};
  return {
    addressTableLookups: message.addressTableLookups.map((l) => ({
      accountKey: l.accountKey.toBase58(),
      writableIndexes: l.writableIndexes,
      readonlyIndexes: l.readonlyIndexes,
    })),
  };
}

/**
 * The `jsonParsed` form of a transaction record: account keys with signer/writable/source flags,
 * System, SPL Token (common instructions) and Associated Token Account instructions parsed as a
 * validator does, others left as `{ programId, accounts, data }`; inner instructions likewise.
 */
export function parsedTransaction(record: TxRecord): { transaction: unknown; meta: unknown } {
  const tx = VersionedTransaction.deserialize(Buffer.from(record.raw, 'base64'));
  const message = tx.message;
  const { writable, readonly } = record.meta.loadedAddresses;
  const staticKeys = message.staticAccountKeys.map((k) => k.toBase58());
  const keys = [...staticKeys, ...writable, ...readonly];
  const accountKeys = keys.map((pubkey, i) => ({
    pubkey,
    signer: i < message.header.numRequiredSignatures,
    writable: message.isAccountWritable(i),
    source: i < staticKeys.length ? 'transaction' : 'lookupTable',
  }));
  const instructions = message.compiledInstructions.map((ix) =>
    parseInstruction(keys, ix.programIdIndex, ix.accountKeyIndexes, ix.data, null),
  );
  // jsonParsed leaves loadedAddresses out of meta: accountKeys carry them (source "lookupTable").
  const { loadedAddresses: _loaded, ...meta } = record.meta;
  return {
    transaction: {
      signatures: tx.signatures.map((s) => bs58.encode(s)),
      message: {
        accountKeys,
        recentBlockhash: message.recentBlockhash,
        instructions,
        ...addressTableLookupsJson(message),
      },
    },
    meta: { ...meta, innerInstructions: parsedInnerInstructions(keys, record.meta.innerInstructions) },
  };
}

/**
 * Inner instructions in the form a validator gives them in `jsonParsed` answers and in
 * `simulateTransaction` with `innerInstructions: true`: parsed where the program has a parser (System,
 * SPL Token, Associated Token Account, Memo), otherwise `{ programId, accounts, data, stackHeight }`
 * with account addresses and base58 data. `keys` are the message's account keys, lookups resolved.
 */
export function parsedInnerInstructions(
  keys: string[],
  groups: readonly { index: number; instructions: readonly RpcCompiledInstruction[] }[],
): { index: number; instructions: unknown[] }[] {
  return groups.map((group) => ({
    index: group.index,
    instructions: group.instructions.map((ix) =>
      parseInstruction(keys, ix.programIdIndex, ix.accounts, bs58.decode(ix.data), ix.stackHeight),
    ),
  }));
}

/** The `jsonParsed` data of an address lookup table account, or null when `data` is not one. */
function parsedLookupTable(data: Uint8Array): unknown {
  if (data.length < LOOKUP_TABLE_META_SIZE || (data.length - LOOKUP_TABLE_META_SIZE) % 32 !== 0) return null;
  const view = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const discriminator = view.readUInt32LE(0);
  if (discriminator === 0)
    return { program: 'address-lookup-table', parsed: { type: 'uninitialized' }, space: data.length };
  if (discriminator !== 1) return null;
  const addresses: string[] = [];
  for (let offset = LOOKUP_TABLE_META_SIZE; offset < data.length; offset += 32) {
    addresses.push(bs58.encode(data.subarray(offset, offset + 32)));
  }
  return {
    program: 'address-lookup-table',
    parsed: {
      type: 'lookupTable',
      info: {
        // u64::MAX when the table was never deactivated; strings, as a validator writes slots here.
        deactivationSlot: view.readBigUInt64LE(4).toString(),
        lastExtendedSlot: view.readBigUInt64LE(12).toString(),
        lastExtendedSlotStartIndex: data[20] ?? 0,
        ...(data[21] === 1 ? { authority: key(data, 22) } : {}),
        addresses,
      },
    },
    space: data.length,
  };
}

/**
 * The `jsonParsed` `data` of an SPL token account or mint, as a validator returns it; null for other
 * accounts (the caller falls back to base64). `mintDecimals` resolves a token account's mint decimals.
 */
export function parsedAccountData(
  owner: string,
  data: Uint8Array,
  mintDecimals: (mint: string) => number | null,
): unknown {
  if (owner === ADDRESS_LOOKUP_TABLE_PROGRAM) return parsedLookupTable(data);
  const program =
    owner === TOKEN_PROGRAM ? 'spl-token' : owner === TOKEN_2022_PROGRAM ? 'spl-token-2022' : null;
  if (program === null) return null;
  const account = decodeTokenAccount(owner, data);
  if (account !== null) {
    const decimals = mintDecimals(account.mint);
    if (decimals === null) return null;
    return {
      program,
      parsed: {
        type: 'account',
        info: {
          isNative: account.isNative,
          mint: account.mint,
          owner: account.owner,
          state: account.state === 2 ? 'frozen' : 'initialized',
          tokenAmount: uiTokenAmount(account.amount, decimals),
          ...(account.delegate !== null
            ? {
                delegate: account.delegate,
                delegatedAmount: uiTokenAmount(account.delegatedAmount, decimals),
              }
            : {}),
          ...(account.closeAuthority !== null ? { closeAuthority: account.closeAuthority } : {}),
        },
      },
      space: data.length,
    };
  }
  const mint = decodeMint(owner, data);
  if (mint !== null) {
    return {
      program,
      parsed: {
        type: 'mint',
        info: {
          decimals: mint.decimals,
          freezeAuthority: mint.freezeAuthority,
          isInitialized: true,
          mintAuthority: mint.mintAuthority,
          supply: mint.supply.toString(),
        },
      },
      space: data.length,
    };
  }
  return null;
}
