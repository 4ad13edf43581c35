import { PublicKey, VersionedMessage } from '@solana/web3.js';
import { bs58 } from './deps';
import {
  CAIP2_NETWORK,
  DEFAULT_FUND_LAMPORTS,
  DEFAULT_FUND_USDC_ATOMIC,
  LAMPORTS_PER_SIGNATURE,
  feeForMessage,
  type LedgerAccount,
  type NetworkLedger,
  type ProgramAccountsFilter,
} from './ledger';
import { parsedAccountData } from './parsed';
import { RpcError, RpcErrorCode } from './rpc-error';
import { decodeMint, decodeTokenAccount, uiTokenAmount } from './token-accounts';
import { RawJson, transactionResultJson, type TransactionEncoding } from './tx-json';
import type { TxRecord } from './tx-record';

/** Version reported by getVersion and in every response context. */
export const SOLANA_CORE_VERSION = '2.2.0';
const FEATURE_SET = 3294202862;
const MAX_SIGNATURE_STATUSES = 256;
const MAX_MULTIPLE_ACCOUNTS = 100;
const MAX_PROGRAM_ACCOUNT_FILTERS = 4;
// A validator's limits on an encoded transaction (PACKET_DATA_SIZE and its encodings).
const PACKET_DATA_SIZE = 1232;
const MAX_BASE58_SIZE = 1683;
const MAX_BASE64_SIZE = 1644;
const MAX_BASE58_ACCOUNT_BYTES = 128;
const TX_TYPE = 'solana_sdk::transaction::versioned::VersionedTransaction';
const COMMITMENTS: ReadonlySet<unknown> = new Set(['processed', 'confirmed', 'finalized']);
// rentEpoch of every account is u64::MAX (18446744073709551615), which JSON.stringify cannot write
// exactly: handlers that return accounts put this marker there and serialise with withExactU64.
const RENT_EPOCH_MARKER = '__u64_max__';
const RENT_EPOCH_JSON = `"rentEpoch":"${RENT_EPOCH_MARKER}"`;

/** What one network path needs to answer requests. */
export interface RpcContext {
  ledger: NetworkLedger;
  /** The demo agent wallet, reported by `localnet_info`. */
  agent: PublicKey;
  /** Path of the agent's Solana CLI keypair file, reported by `localnet_info`. */
  agentKeypairPath: string;
  /** The x402 fee payer (SOL only), reported by `localnet_info`. */
  feePayer: PublicKey;
  /** Path of the fee payer's Solana CLI keypair file, reported by `localnet_info`. */
  feePayerKeypairPath: string;
  /** The refund wallet (SOL and test USDC), reported by `localnet_info`. */
  refundWallet: PublicKey;
  /** Path of the refund wallet's Solana CLI keypair file, reported by `localnet_info`. */
  refundKeypairPath: string;
  /** The URL this network is served at. */
  rpcUrl: string;
}

type Params = readonly unknown[];
type Handler = (ctx: RpcContext, params: Params) => unknown;

function invalid(message: string): RpcError {
  return new RpcError(RpcErrorCode.invalidParams, message);
}

/**
 * The bytes of a base58 param that must decode to exactly `size` bytes, refused as a validator
 * refuses it: not a string (naming the `expected` kind), not base58 (`Invalid`), another length
 * (`WrongSize`).
 */
function base58Param(value: unknown, expected: string, size: number): Uint8Array {
  if (typeof value !== 'string') throw invalid(`Invalid params: expected a base58 ${expected} string`);
  let bytes: Uint8Array;
  try {
    bytes = bs58.decode(value);
  } catch {
    throw invalid('Invalid param: Invalid');
  }
  if (bytes.length !== size) throw invalid('Invalid param: WrongSize');
  return bytes;
}

function pubkeyParam(value: unknown): PublicKey {
  return new PublicKey(base58Param(value, 'public key', 32));
}

function configParam(value: unknown): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    throw invalid('Invalid params: expected a configuration object');
  return value as Record<string, unknown>;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return `string ${JSON.stringify(value)}`;
  if (Array.isArray(value)) return 'sequence';
  if (typeof value === 'object') return 'map';
  return `${typeof value} \`${String(value)}\``;
}

function boolParam(config: Record<string, unknown>, name: string): boolean {
  const value = config[name];
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean')
    throw invalid(`Invalid params: invalid type: ${describe(value)}, expected a boolean.`);
  return value;
}

function u64Param(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw invalid(`Invalid params: invalid type: ${describe(value)}, expected u64 (${name}).`);
  }
  return value;
}

function commitmentParam(value: unknown): void {
  if (value === undefined || value === null || COMMITMENTS.has(value)) return;
  throw invalid(
    `Invalid params: unknown variant \`${String(value)}\`, expected one of \`processed\`, \`confirmed\`, \`finalized\`.`,
  );
}

/**
 * The configuration object of a method that reads a bank: checks `commitment` (`commitmentField` for
 * sendTransaction's `preflightCommitment`) and `minContextSlot` as a validator does.
 * @throws RpcError -32602 for bad values, -32016 when `minContextSlot` is ahead of the ledger
 */
function bankConfig(
  ctx: RpcContext,
  value: unknown,
  options: { commitmentField?: string; confirmedOrFinalized?: boolean } = {},
): Record<string, unknown> {
  const config = configParam(value);
  const commitment = config[options.commitmentField ?? 'commitment'];
  commitmentParam(commitment);
  if (options.confirmedOrFinalized === true && commitment === 'processed') {
    throw invalid('Method does not support commitment below `confirmed`');
  }
  if (config.minContextSlot !== undefined && config.minContextSlot !== null) {
    const minContextSlot = u64Param(config.minContextSlot, 'minContextSlot');
    const slot = ctx.ledger.currentSlot();
    if (minContextSlot > slot) {
      throw new RpcError(RpcErrorCode.minContextSlotNotReached, 'Minimum context slot has not been reached', {
        contextSlot: slot,
      });
    }
  }
  return config;
}

/** Serialises a result holding accounts, writing their rentEpoch (u64::MAX) exactly. */
function withExactU64(value: unknown): RawJson {
  return new RawJson(JSON.stringify(value).replaceAll(RENT_EPOCH_JSON, '"rentEpoch":18446744073709551615'));
}

function signatureParam(value: unknown): string {
  base58Param(value, 'signature', 64);
  // base58Param throws for anything but a string.
  return value as string;
}

function decodeWire(value: unknown, encoding: unknown): Uint8Array {
  if (typeof value !== 'string') throw invalid('Invalid params: expected an encoded transaction string');
  let bytes: Uint8Array;
  if (encoding === undefined || encoding === null || encoding === 'base58') {
    if (value.length > MAX_BASE58_SIZE) {
      throw invalid(
        `base58 encoded ${TX_TYPE} too large: ${value.length} bytes (max: encoded/raw ${MAX_BASE58_SIZE}/${PACKET_DATA_SIZE})`,
      );
    }
    try {
      bytes = bs58.decode(value);
    } catch (error) {
      throw invalid(`invalid base58 encoding: ${(error as Error).message}`);
    }
  } else if (encoding === 'base64') {
    if (value.length > MAX_BASE64_SIZE) {
      throw invalid(
        `base64 encoded ${TX_TYPE} too large: ${value.length} bytes (max: encoded/raw ${MAX_BASE64_SIZE}/${PACKET_DATA_SIZE})`,
      );
    }
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(value)) throw invalid('invalid base64 encoding');
    bytes = Buffer.from(value, 'base64');
  } else {
    throw invalid(
      `Invalid params: unsupported encoding: ${String(encoding)}. Supported encodings: base58, base64`,
    );
  }
  if (bytes.length > PACKET_DATA_SIZE) {
    throw invalid(`decoded ${TX_TYPE} too large: ${bytes.length} bytes (max: ${PACKET_DATA_SIZE} bytes)`);
  }
  return bytes;
}

function context(ctx: RpcContext): { slot: number; apiVersion: string } {
  return { slot: ctx.ledger.currentSlot(), apiVersion: SOLANA_CORE_VERSION };
}

/** How an account method was asked to encode data: `encoding` and `dataSlice` of its config. */
interface AccountEncoding {
  encoding: unknown;
  slice: { offset: number; length: number } | null;
}

const ACCOUNT_ENCODINGS: ReadonlySet<unknown> = new Set(['base64', 'base58', 'binary', 'jsonParsed']);

/** Reads and checks `encoding` and `dataSlice` (`defaultEncoding` when absent). @throws RpcError -32602 / -32600 */
function accountEncodingParam(config: Record<string, unknown>, defaultEncoding: string): AccountEncoding {
  const encoding = config.encoding ?? defaultEncoding;
  if (!ACCOUNT_ENCODINGS.has(encoding)) {
    throw invalid(`Invalid params: unsupported encoding: ${String(encoding)}`);
  }
  let slice: AccountEncoding['slice'] = null;
  if (config.dataSlice !== undefined && config.dataSlice !== null) {
    const dataSlice = configParam(config.dataSlice);
    slice = {
      offset: u64Param(dataSlice.offset, 'offset'),
      length: u64Param(dataSlice.length, 'length'),
    };
    if (encoding === 'jsonParsed') {
      throw new RpcError(
        RpcErrorCode.invalidRequest,
        'Sliced account data can only be encoded using binary (base 58) or base64 encoding.',
      );
    }
  }
  return { encoding, slice };
}

function accountResponse(ctx: RpcContext, account: LedgerAccount | null, how: AccountEncoding): unknown {
  if (account === null) return null;
  const owner = account.owner.toBase58();
  const bytes =
    how.slice === null
      ? account.data
      : account.data.subarray(how.slice.offset, how.slice.offset + how.slice.length);
  let data: unknown;
  const base64 = (): [string, 'base64'] => [Buffer.from(bytes).toString('base64'), 'base64'];
  switch (how.encoding) {
    case 'base58':
    case 'binary':
      if (bytes.length > MAX_BASE58_ACCOUNT_BYTES) {
        throw new RpcError(
          RpcErrorCode.invalidRequest,
          'Encoded binary (base 58) data should be less than 128 bytes, please use Base64 encoding.',
        );
      }
      data = how.encoding === 'binary' ? bs58.encode(bytes) : [bs58.encode(bytes), 'base58'];
      break;
    case 'jsonParsed':
      data = parsedAccountData(owner, account.data, (mint) => ctx.ledger.mintDecimals(mint)) ?? base64();
      break;
    default:
      data = base64();
  }
  return {
    data,
    executable: account.executable,
    lamports: account.lamports,
    owner,
    rentEpoch: RENT_EPOCH_MARKER,
    space: account.data.length,
  };
}

function programAccountsFilters(value: unknown): ProgramAccountsFilter[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalid('Invalid params: filters must be an array');
  if (value.length > MAX_PROGRAM_ACCOUNT_FILTERS) {
    throw invalid(`Too many filters provided; max ${MAX_PROGRAM_ACCOUNT_FILTERS}`);
  }
  return value.map((raw): ProgramAccountsFilter => {
    const filter = configParam(raw);
    if (filter.dataSize !== undefined) return { dataSize: u64Param(filter.dataSize, 'dataSize') };
    const memcmp = configParam(filter.memcmp);
    const offset = u64Param(memcmp.offset, 'offset');
    if (typeof memcmp.bytes !== 'string') throw invalid('Invalid params: memcmp.bytes must be a string');
    let bytes: Uint8Array;
    if (memcmp.encoding === 'base64') {
      bytes = Buffer.from(memcmp.bytes, 'base64');
    } else if (memcmp.encoding === undefined || memcmp.encoding === null || memcmp.encoding === 'base58') {
      try {
        bytes = bs58.decode(memcmp.bytes);
      } catch {
        throw invalid('Invalid param: Invalid');
      }
    } else {
      throw invalid(`Invalid params: unsupported memcmp encoding: ${String(memcmp.encoding)}`);
    }
    return { memcmp: { offset, bytes } };
  });
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
  getSlot: (ctx, params) => {
    bankConfig(ctx, params[0]);
    return ctx.ledger.currentSlot();
  },
  getBlockHeight: (ctx, params) => {
    bankConfig(ctx, params[0]);
    return ctx.ledger.blockHeight();
  },
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
    // Every landed transaction is final here, so all commitments see the same latest blockhash.
    bankConfig(ctx, params[0]);
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
    const key = pubkeyParam(params[0]);
    bankConfig(ctx, params[1]);
    return { context: context(ctx), value: ctx.ledger.getAccount(key)?.lamports ?? 0 };
  },
  getAccountInfo: (ctx, params) => {
    const key = pubkeyParam(params[0]);
    const how = accountEncodingParam(bankConfig(ctx, params[1]), 'binary');
    return withExactU64({
      context: context(ctx),
      value: accountResponse(ctx, ctx.ledger.getAccount(key), how),
    });
  },
  getMultipleAccounts: (ctx, params) => {
    const keys = params[0];
    if (!Array.isArray(keys) || keys.length > MAX_MULTIPLE_ACCOUNTS) {
      throw invalid(`Invalid params: expected an array of at most ${MAX_MULTIPLE_ACCOUNTS} public keys`);
    }
    const how = accountEncodingParam(bankConfig(ctx, params[1]), 'base64');
    const value = keys.map((k) => accountResponse(ctx, ctx.ledger.getAccount(pubkeyParam(k)), how));
    return withExactU64({ context: context(ctx), value });
  },
  getProgramAccounts: (ctx, params) => {
    const program = pubkeyParam(params[0]);
    const config = bankConfig(ctx, params[1]);
    const how = accountEncodingParam(config, 'binary');
    const filters = programAccountsFilters(config.filters);
    const value = ctx.ledger
      .programAccounts(program, filters)
      .map(({ pubkey, account }) => ({ account: accountResponse(ctx, account, how), pubkey }));
    return withExactU64(boolParam(config, 'withContext') ? { context: context(ctx), value } : value);
  },
  getTokenAccountBalance: (ctx, params) => {
    bankConfig(ctx, params[1]);
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
    bankConfig(ctx, config, { commitmentField: 'preflightCommitment' });
    if (config.maxRetries !== undefined && config.maxRetries !== null)
      u64Param(config.maxRetries, 'maxRetries');
    return ctx.ledger.sendTransaction(wire, boolParam(config, 'skipPreflight'));
  },
  simulateTransaction: (ctx, params) => {
    const config = configParam(params[1]);
    const wire = decodeWire(params[0], config.encoding);
    bankConfig(ctx, config);
    let addresses: PublicKey[] | null = null;
    let accountsEncoding: unknown = 'base64';
    if (config.accounts !== undefined && config.accounts !== null) {
      const accounts = configParam(config.accounts);
      if (!Array.isArray(accounts.addresses)) throw invalid('Invalid params: missing field `addresses`.');
      addresses = accounts.addresses.map(pubkeyParam);
      accountsEncoding = accounts.encoding ?? 'base64';
    }
    const result = ctx.ledger.simulateTransaction(wire, {
      sigVerify: boolParam(config, 'sigVerify'),
      replaceRecentBlockhash: boolParam(config, 'replaceRecentBlockhash'),
      innerInstructions: boolParam(config, 'innerInstructions'),
      accounts: addresses,
    });
    // Like a validator, the accounts' encoding is checked once the simulation has run.
    if (accountsEncoding === 'binary' || accountsEncoding === 'base58') {
      throw invalid('base58 encoding not supported');
    }
    const how = accountEncodingParam({ encoding: accountsEncoding }, 'base64');
    return withExactU64({
      context: context(ctx),
      value: {
        err: result.err,
        logs: result.logs,
        accounts: result.accounts?.map((account) => accountResponse(ctx, account, how)) ?? null,
        unitsConsumed: result.unitsConsumed,
        loadedAccountsDataSize: result.loadedAccountsDataSize,
        returnData: result.returnData,
        innerInstructions: result.innerInstructions,
        replacementBlockhash: result.replacementBlockhash,
      },
    });
  },
  getSignatureStatuses: (ctx, params) => {
    const signatures = params[0];
    if (!Array.isArray(signatures) || signatures.length > MAX_SIGNATURE_STATUSES) {
      throw invalid(`Invalid params: expected an array of at most ${MAX_SIGNATURE_STATUSES} signatures`);
    }
    boolParam(configParam(params[1]), 'searchTransactionHistory');
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
    const config =
      typeof params[1] === 'string'
        ? { encoding: params[1] }
        : bankConfig(ctx, params[1], { confirmedOrFinalized: true });
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
    feePayer: ctx.feePayer.toBase58(),
    feePayerKeypairPath: ctx.feePayerKeypairPath,
    refundWallet: ctx.refundWallet.toBase58(),
    refundKeypairPath: ctx.refundKeypairPath,
    genesisHash: ctx.ledger.genesisHash,
    caip2Network: CAIP2_NETWORK[ctx.ledger.network],
  }),
  localnet_expireBlockhashes: (ctx) => {
    ctx.ledger.expireBlockhashes();
    return null;
  },
  localnet_setClockOffset: (ctx, params) => {
    const seconds = params[0];
    if (typeof seconds !== 'number' || !Number.isInteger(seconds) || Math.abs(seconds) > 315_360_000)
      throw invalid('Invalid params: expected an integer number of seconds within ten years');
    ctx.ledger.setClockOffset(seconds);
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
