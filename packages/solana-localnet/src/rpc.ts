import { PublicKey, VersionedMessage } from '@solana/web3.js';
import { bs58 } from './deps';
import {
  DEFAULT_FUND_LAMPORTS,
  DEFAULT_FUND_USDC_ATOMIC,
  LAMPORTS_PER_SIGNATURE,
  feeForMessage,
  type LedgerAccount,
  type NetworkLedger,
  type TxRecord,
} from './ledger';
import { parsedAccountData } from './parsed';
import { RpcError, RpcErrorCode } from './rpc-error';
import { decodeMint, decodeTokenAccount, uiTokenAmount } from './token-accounts';
import { transactionResultJson, type RawJson, type TransactionEncoding } from './tx-json';

/** Version reported by getVersion and in every response context. */
export const SOLANA_CORE_VERSION = '2.2.0';
const FEATURE_SET = 3294202862;
const MAX_SIGNATURE_STATUSES = 256;
const MAX_MULTIPLE_ACCOUNTS = 100;
// u64::MAX (what a cluster reports as rentEpoch for rent-exempt accounts) as a JSON client reads it.
const RENT_EPOCH_EXEMPT = 2 ** 64;

/** What one network path needs to answer requests. */
export interface RpcContext {
  ledger: NetworkLedger;
  /** The demo agent wallet, reported by `localnet_info`. */
  agent: PublicKey;
  /** Path of the agent's Solana CLI keypair file, reported by `localnet_info`. */
  agentKeypairPath: string;
  /** The URL this network is served at. */
  rpcUrl: string;
}

type Params = readonly unknown[];
type Handler = (ctx: RpcContext, params: Params) => unknown;

function invalid(message: string): RpcError {
  return new RpcError(RpcErrorCode.invalidParams, message);
}

function pubkeyParam(value: unknown): PublicKey {
  if (typeof value !== 'string') throw invalid('Invalid params: expected a base58 public key string');
  let bytes: Uint8Array;
  try {
    bytes = bs58.decode(value);
  } catch {
    throw invalid('Invalid param: Invalid');
  }
  if (bytes.length !== 32) throw invalid('Invalid param: WrongSize');
  return new PublicKey(bytes);
}

function configParam(value: unknown): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    throw invalid('Invalid params: expected a configuration object');
  return value as Record<string, unknown>;
}

function signatureParam(value: unknown): string {
  if (typeof value !== 'string') throw invalid('Invalid params: expected a base58 signature string');
  let bytes: Uint8Array;
  try {
    bytes = bs58.decode(value);
  } catch {
    throw invalid('Invalid param: Invalid');
  }
  if (bytes.length !== 64) throw invalid('Invalid param: WrongSize');
  return value;
}

function decodeWire(value: unknown, encoding: unknown): Uint8Array {
  if (typeof value !== 'string') throw invalid('Invalid params: expected an encoded transaction string');
  if (encoding === undefined || encoding === 'base58') {
    try {
      return bs58.decode(value);
    } catch (error) {
      throw invalid(`invalid base58 encoding: ${(error as Error).message}`);
    }
  }
  if (encoding === 'base64') {
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(value)) throw invalid('invalid base64 encoding');
    return Buffer.from(value, 'base64');
  }
  throw invalid(
    `Invalid params: unsupported encoding: ${String(encoding)}. Supported encodings: base58, base64`,
  );
}

function context(ctx: RpcContext): { slot: number; apiVersion: string } {
  return { slot: ctx.ledger.currentSlot(), apiVersion: SOLANA_CORE_VERSION };
}

function accountResponse(ctx: RpcContext, account: LedgerAccount | null, encoding: unknown): unknown {
  if (account === null) return null;
  const owner = account.owner.toBase58();
  let data: unknown;
  switch (encoding ?? 'binary') {
    case 'base64':
      data = [Buffer.from(account.data).toString('base64'), 'base64'];
      break;
    case 'base58':
      data = [bs58.encode(account.data), 'base58'];
      break;
    case 'binary':
      data = bs58.encode(account.data);
      break;
    case 'jsonParsed':
      data = parsedAccountData(owner, account.data, (mint) => ctx.ledger.mintDecimals(mint)) ?? [
        Buffer.from(account.data).toString('base64'),
        'base64',
      ];
      break;
    default:
      throw invalid(`Invalid params: unsupported encoding: ${String(encoding)}`);
  }
  return {
    data,
    executable: account.executable,
    lamports: account.lamports,
    owner,
    rentEpoch: RENT_EPOCH_EXEMPT,
    space: account.data.length,
  };
}

const TRANSACTION_ENCODINGS: ReadonlySet<unknown> = new Set<TransactionEncoding>([
  'json',
  'jsonParsed',
  'base64',
  'base58',
]);

function transactionResponse(record: TxRecord, encoding: unknown, maxVersion: unknown): RawJson {
  if (maxVersion !== undefined && maxVersion !== null && maxVersion !== 0) {
    throw invalid('Invalid params: maxSupportedTransactionVersion must be 0');
  }
  const versioned = maxVersion === 0;
  if (record.version === 0 && !versioned) {
    throw new RpcError(
      RpcErrorCode.unsupportedTransactionVersion,
      'Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": 0',
    );
  }
  const resolved = encoding ?? 'json';
  if (!TRANSACTION_ENCODINGS.has(resolved))
    throw invalid(`Invalid params: unsupported encoding: ${String(encoding)}`);
  return transactionResultJson(record, resolved as TransactionEncoding, versioned);
}

/**
 * The record of `value` when it is a signature this ledger knows. Known signatures are valid by
 * construction, so the base58 decoding of {@link signatureParam} is only paid for unknown ones.
 */
function knownRecord(ctx: RpcContext, value: unknown): TxRecord | null {
  const record = typeof value === 'string' ? ctx.ledger.getTransactionRecord(value) : null;
  if (record !== null) return record;
  signatureParam(value);
  return null;
}

function parseUsdcAtomic(value: unknown): bigint {
  if (value === undefined || value === null) return DEFAULT_FUND_USDC_ATOMIC;
  if (typeof value === 'string' && /^\d{1,20}$/.test(value)) {
    const amount = BigInt(value);
    if (amount <= 0xffffffffffffffffn) return amount;
  }
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  throw invalid('Invalid params: usdc must be a string of atomic units (u64)');
}

function lamportsParam(value: unknown, fallback: number | null): number {
  if ((value === undefined || value === null) && fallback !== null) return fallback;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  throw invalid('Invalid params: lamports must be a non-negative integer');
}

const handlers: Record<string, Handler> = {
  getHealth: () => 'ok',
  getVersion: () => ({ 'solana-core': SOLANA_CORE_VERSION, 'feature-set': FEATURE_SET }),
  getSlot: (ctx) => ctx.ledger.currentSlot(),
  getBlockHeight: (ctx) => ctx.ledger.blockHeight(),
  getGenesisHash: (ctx) => ctx.ledger.genesisHash,
  getTransactionCount: (ctx) => ctx.ledger.transactionCount,
  getFirstAvailableBlock: () => 0,
  getRecentPrioritizationFees: () => [],
  getEpochInfo: (ctx) => {
    const slot = ctx.ledger.currentSlot();
    return {
      absoluteSlot: slot,
      blockHeight: ctx.ledger.blockHeight(),
      epoch: 0,
      slotIndex: slot,
      slotsInEpoch: 432000,
      transactionCount: ctx.ledger.transactionCount,
    };
  },
  getLatestBlockhash: (ctx, params) => {
    configParam(params[0]);
    return { context: context(ctx), value: ctx.ledger.latestBlockhash() };
  },
  isBlockhashValid: (ctx, params) => {
    if (typeof params[0] !== 'string') throw invalid('Invalid params: expected a blockhash string');
    return { context: context(ctx), value: ctx.ledger.isBlockhashValid(params[0]) };
  },
  getFeeForMessage: (ctx, params) => {
    let message: VersionedMessage;
    try {
      message = VersionedMessage.deserialize(decodeWire(params[0], 'base64'));
    } catch (error) {
      if (error instanceof RpcError) throw error;
      throw invalid(`Invalid params: invalid message: ${(error as Error).message}`);
    }
    const value = ctx.ledger.isBlockhashValid(message.recentBlockhash) ? feeForMessage(message) : null;
    return { context: context(ctx), value };
  },
  getFees: (ctx) => {
    const { blockhash, lastValidBlockHeight } = ctx.ledger.latestBlockhash();
    return {
      context: context(ctx),
      value: {
        blockhash,
        feeCalculator: { lamportsPerSignature: LAMPORTS_PER_SIGNATURE },
        lastValidSlot: lastValidBlockHeight,
        lastValidBlockHeight,
      },
    };
  },
  getMinimumBalanceForRentExemption: (ctx, params) => {
    const length = params[0];
    if (typeof length !== 'number' || !Number.isSafeInteger(length) || length < 0) {
      throw invalid('Invalid params: expected a data length in bytes');
    }
    return ctx.ledger.minimumBalanceForRentExemption(length);
  },
  getBalance: (ctx, params) => {
    const account = ctx.ledger.getAccount(pubkeyParam(params[0]));
    return { context: context(ctx), value: account?.lamports ?? 0 };
  },
  getAccountInfo: (ctx, params) => {
    const key = pubkeyParam(params[0]);
    const config = configParam(params[1]);
    return {
      context: context(ctx),
      value: accountResponse(ctx, ctx.ledger.getAccount(key), config.encoding),
    };
  },
  getMultipleAccounts: (ctx, params) => {
    const keys = params[0];
    if (!Array.isArray(keys) || keys.length > MAX_MULTIPLE_ACCOUNTS) {
      throw invalid(`Invalid params: expected an array of at most ${MAX_MULTIPLE_ACCOUNTS} public keys`);
    }
    const config = configParam(params[1]);
    const value = keys.map((k) =>
      accountResponse(ctx, ctx.ledger.getAccount(pubkeyParam(k)), config.encoding),
    );
    return { context: context(ctx), value };
  },
  getTokenAccountBalance: (ctx, params) => {
    const account = ctx.ledger.getAccount(pubkeyParam(params[0]));
    if (account === null) throw invalid('Invalid param: could not find account');
    const state = decodeTokenAccount(account.owner.toBase58(), account.data);
    const decimals = state === null ? null : ctx.ledger.mintDecimals(state.mint);
    if (state === null || decimals === null) throw invalid('Invalid param: not a Token account');
    return { context: context(ctx), value: uiTokenAmount(state.amount, decimals) };
  },
  getTokenSupply: (ctx, params) => {
    const account = ctx.ledger.getAccount(pubkeyParam(params[0]));
    if (account === null) throw invalid('Invalid param: could not find account');
    const mint = decodeMint(account.owner.toBase58(), account.data);
    if (mint === null) throw invalid('Invalid param: not a Token mint');
    return { context: context(ctx), value: uiTokenAmount(mint.supply, mint.decimals) };
  },
  sendTransaction: (ctx, params) => {
    const config = configParam(params[1]);
    const wire = decodeWire(params[0], config.encoding);
    return ctx.ledger.sendTransaction(wire, config.skipPreflight === true);
  },
  simulateTransaction: (ctx, params) => {
    const config = configParam(params[1]);
    const result = ctx.ledger.simulateTransaction(decodeWire(params[0], config.encoding));
    return {
      context: context(ctx),
      value: {
        ...result,
        accounts: null,
        returnData: null,
        innerInstructions: null,
        replacementBlockhash: null,
      },
    };
  },
  getSignatureStatuses: (ctx, params) => {
    const signatures = params[0];
    if (!Array.isArray(signatures) || signatures.length > MAX_SIGNATURE_STATUSES) {
      throw invalid(`Invalid params: expected an array of at most ${MAX_SIGNATURE_STATUSES} signatures`);
    }
    configParam(params[1]);
    const value = signatures.map((s) => {
      const record = knownRecord(ctx, s);
      if (record === null) return null;
      // Every landed transaction is final at once: there are no forks here.
      return {
        slot: record.slot,
        confirmations: null,
        err: record.meta.err,
        status: record.meta.status,
        confirmationStatus: 'finalized',
      };
    });
    return { context: context(ctx), value };
  },
  getTransaction: (ctx, params) => {
    const record = knownRecord(ctx, params[0]);
    const config = typeof params[1] === 'string' ? { encoding: params[1] } : configParam(params[1]);
    if (record === null) return null;
    return transactionResponse(record, config.encoding, config.maxSupportedTransactionVersion);
  },
  requestAirdrop: (ctx, params) => {
    const to = pubkeyParam(params[0]);
    const lamports = lamportsParam(params[1], null);
    if (lamports === 0) throw invalid('Invalid params: lamports must be positive');
    return ctx.ledger.airdrop(to, lamports);
  },
  localnet_fund: (ctx, params) => {
    const owner = pubkeyParam(params[0]);
    const options = configParam(params[1]);
    return ctx.ledger.fund(
      owner,
      parseUsdcAtomic(options.usdc),
      lamportsParam(options.lamports, DEFAULT_FUND_LAMPORTS),
    );
  },
  localnet_info: (ctx) => ({
    network: ctx.ledger.network,
    rpcUrl: ctx.rpcUrl,
    mint: ctx.ledger.mint.toBase58(),
    merchantOwner: ctx.ledger.merchantOwner.toBase58(),
    merchantTokenAccount: ctx.ledger.merchantTokenAccount.toBase58(),
    agent: ctx.agent.toBase58(),
    agentKeypairPath: ctx.agentKeypairPath,
    genesisHash: ctx.ledger.genesisHash,
  }),
  localnet_expireBlockhashes: (ctx) => {
    ctx.ledger.expireBlockhashes();
    return null;
  },
};

/** Names of every supported method, standard and `localnet_` extensions. */
export const RPC_METHODS: readonly string[] = Object.keys(handlers);

/**
 * Answers one JSON-RPC method call against one network.
 * @returns the `result` value, or a {@link RawJson} holding it already serialised
 * @throws RpcError -32601 for an unknown method, -32602 for bad params, or the method's own errors
 */
export function callMethod(ctx: RpcContext, method: string, params: unknown): unknown {
  const handler = Object.prototype.hasOwnProperty.call(handlers, method) ? handlers[method] : undefined;
  if (handler === undefined) throw new RpcError(RpcErrorCode.methodNotFound, 'Method not found');
  if (params !== undefined && params !== null && !Array.isArray(params)) {
    throw invalid('Invalid params: params must be an array');
  }
  return handler(ctx, (params as Params | undefined | null) ?? []);
}
