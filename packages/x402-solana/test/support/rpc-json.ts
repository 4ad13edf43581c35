import type { MessageV0, PublicKey } from '@solana/web3.js';
import type { RpcTransaction } from '../../src/index';
import { bs58 } from '../../src/deps';

/**
 * A `getTransaction` answer (`encoding: "json"`) for a compiled web3.js v0 message, as an RPC node
 * writes it: static account keys and top-level instructions with base58 data from the message; the
 * `meta` (loaded addresses, inner instructions, token balances) as given, with addresses as base58.
 */
export function rpcTransactionOf(
  message: MessageV0,
  meta: {
    loadedAddresses?: { writable: readonly PublicKey[]; readonly: readonly PublicKey[] };
    innerInstructions?: NonNullable<NonNullable<RpcTransaction['meta']>['innerInstructions']>;
    preTokenBalances?: NonNullable<NonNullable<RpcTransaction['meta']>['preTokenBalances']>;
    postTokenBalances?: NonNullable<NonNullable<RpcTransaction['meta']>['postTokenBalances']>;
  },
  at: { slot: number; blockTime: number | null },
): RpcTransaction {
  return {
    slot: at.slot,
    blockTime: at.blockTime,
    version: 0,
    transaction: {
      message: {
        accountKeys: message.staticAccountKeys.map((key) => key.toBase58()),
        instructions: message.compiledInstructions.map((ix) => ({
          programIdIndex: ix.programIdIndex,
          accounts: [...ix.accountKeyIndexes],
          data: bs58.encode(ix.data),
        })),
      },
    },
    meta: {
      err: null,
      loadedAddresses: {
        writable: (meta.loadedAddresses?.writable ?? []).map((key) => key.toBase58()),
        readonly: (meta.loadedAddresses?.readonly ?? []).map((key) => key.toBase58()),
      },
      innerInstructions: meta.innerInstructions ?? [],
      preTokenBalances: meta.preTokenBalances ?? [],
      postTokenBalances: meta.postTokenBalances ?? [],
    },
  };
}
