// The shapes of a landed transaction, apart from the ledger that stores them so the modules rendering
// them (parsed, tx-json) need not import the ledger, which imports them.
import type { RpcTransactionError } from './rpc-error';
import type { UiTokenAmount } from './token-accounts';

/** A token balance entry of `meta.preTokenBalances` / `meta.postTokenBalances`. */
export interface RpcTokenBalance {
  accountIndex: number;
  mint: string;
  owner: string;
  programId: string;
  uiTokenAmount: UiTokenAmount;
}

/** One compiled instruction as RPC's `json` encoding shows it; `data` is base58. */
export interface RpcCompiledInstruction {
  programIdIndex: number;
  accounts: number[];
  data: string;
  stackHeight: number | null;
}

/** `meta` of getTransaction, in the shape Solana RPC returns. Balances in lamports. */
export interface RpcTransactionMeta {
  err: RpcTransactionError | null;
  status: { Ok: null } | { Err: RpcTransactionError };
  fee: number;
  preBalances: number[];
  postBalances: number[];
  innerInstructions: { index: number; instructions: RpcCompiledInstruction[] }[];
  logMessages: string[];
  preTokenBalances: RpcTokenBalance[];
  postTokenBalances: RpcTokenBalance[];
  rewards: [];
  loadedAddresses: { writable: string[]; readonly: string[] };
  computeUnitsConsumed: number;
  returnData?: { programId: string; data: [string, 'base64'] };
}

/** A transaction that landed (succeeded or failed with `meta.err`) on one network. */
export interface TxRecord {
  signature: string;
  slot: number;
  /** Unix time in seconds. */
  blockTime: number;
  /** The signed wire transaction, base64. */
  raw: string;
  version: 'legacy' | 0;
  meta: RpcTransactionMeta;
}
