import { createHash, randomBytes, verify as verifyEd25519 } from 'node:crypto';
import v8 from 'node:v8';
import {
  FailedTransactionMetadata,
  LiteSVM,
  type Account,
  type AccountInfoBytes,
  type TransactionMetadata,
} from 'litesvm';
import {
  AddressLookupTableAccount,
  Keypair,
  LAMPORTS_PER_SOL,
  PublicKey,
  SystemProgram,
  Transaction,
  VersionedTransaction,
  type TransactionInstruction,
  type VersionedMessage,
} from '@solana/web3.js';
import {
  MINT_SIZE,
  bs58,
  createAssociatedTokenAccountIdempotentInstruction,
  createMintToInstruction,
  getAssociatedTokenAddressSync,
} from './deps';
import { Journal } from './journal';
import { createMintInstructions } from './mint-instructions';
import { parsedInnerInstructions } from './parsed';
import { RpcError, RpcErrorCode, convertTransactionError, type RpcTransactionError } from './rpc-error';
import { decodeMint, decodeTokenAccount, uiTokenAmount } from './token-accounts';
import { primeTransactionJson } from './tx-json';
import type { RpcTokenBalance, RpcTransactionMeta, TxRecord } from './tx-record';

// litesvm 0.8.0's linux-x64 binding leaves the x87 FPU register stack dirty after running SBF programs
// (MMX state without EMMS). V8's allocation-site pretenuring then sizes a C++ hash table with x87
// maths on that state and aborts with std::bad_alloc in GC (LiteSVM/litesvm#171). Pretenuring is
// only a heap-layout optimisation, so it is turned off for the process before any SVM runs.
v8.setFlagsFromString('--no-allocation-site-pretenuring');

/** The x402 network names this ledger serves. */
export type LocalnetNetwork = 'solana' | 'solana-devnet';

/** Every network, in the order they are set up and printed. */
export const LOCALNET_NETWORKS: readonly LocalnetNetwork[] = ['solana', 'solana-devnet'];

/** USDC-like mint decimals. */
export const USDC_DECIMALS = 6;
/** Default test USDC given by funding: 1000 USDC in atomic units. */
export const DEFAULT_FUND_USDC_ATOMIC = 1_000_000_000n;
/** Default SOL given by funding: 10 SOL in lamports. */
export const DEFAULT_FUND_LAMPORTS = 10 * LAMPORTS_PER_SOL;
/** Base fee per signature in lamports (LiteSVM's and mainnet's). */
export const LAMPORTS_PER_SIGNATURE = 5000;
/** A new block height (and latest blockhash) every this many milliseconds. */
export const BLOCK_INTERVAL_MS = 400;
/** A blockhash is accepted for this many block heights after it is issued (about 60 s), like a cluster. */
export const BLOCKHASH_VALIDITY_BLOCKS = 150;
/**
 * SOL (lamports) the x402 fee payer holds after start: 100 SOL, about 10 000 settlements at the
 * official client's fee (two signatures and a 1 micro-lamport compute unit price: 10 001 lamports).
 */
export const FEE_PAYER_LAMPORTS = 100 * LAMPORTS_PER_SOL;
/** At start the fee payer is topped up to {@link FEE_PAYER_LAMPORTS} when it holds less than this (10 SOL). */
export const FEE_PAYER_REFILL_BELOW_LAMPORTS = 10 * LAMPORTS_PER_SOL;
/**
 * Test USDC (atomic units) the refund wallet holds after start on each network: 100 000 USDC, 4 000
 * refunds of the dearest compute job (25 USDC). Topped up at start when below a tenth of it.
 */
export const REFUND_WALLET_USDC_ATOMIC = 100_000_000_000n;
/** SOL (lamports) the refund wallet gets for its fees (a refund never creates a token account): 10 SOL. */
export const REFUND_WALLET_LAMPORTS = 10 * LAMPORTS_PER_SOL;

// Kept below 2^53 so LiteSVM's Number-based account wrapper stays exact.
const FAUCET_LAMPORTS = 1_000_000_000_000_000;
const FAUCET_REFILL_BELOW = 100_000_000_000_000;
const COMPUTE_BUDGET_PROGRAM = 'ComputeBudget111111111111111111111111111111';
const DEFAULT_CU_PER_INSTRUCTION = 200_000;
const DEFAULT_CU_PER_BUILTIN = 3_000;
const MAX_CU = 1_400_000;
const BUILTIN_PROGRAMS = new Set([
  '11111111111111111111111111111111',
  COMPUTE_BUDGET_PROGRAM,
  'AddressLookupTab1e1111111111111111111111111',
  'Vote111111111111111111111111111111111111111',
  'Stake11111111111111111111111111111111111111',
  'Config1111111111111111111111111111111111111',
  'BPFLoaderUpgradeab1e11111111111111111111111',
  'BPFLoader2111111111111111111111111111111111',
  'BPFLoader1111111111111111111111111111111111',
  'LoaderV411111111111111111111111111111111111',
]);

// The real clusters' genesis hashes, so client code that identifies the cluster by genesis hash
// treats each path as the network it stands in for.
const GENESIS_HASH: Record<LocalnetNetwork, string> = {
  solana: '5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d',
  'solana-devnet': 'EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG',
};

/**
 * The x402 v2 (CAIP-2) network id of each network: `solana:` and the first 32 characters of the
 * genesis hash. The official x402 packages accept only these ids (and testnet's) for Solana.
 */
export const CAIP2_NETWORK: Readonly<Record<LocalnetNetwork, string>> = {
  solana: `solana:${GENESIS_HASH.solana.slice(0, 32)}`,
  'solana-devnet': `solana:${GENESIS_HASH['solana-devnet'].slice(0, 32)}`,
};

/** Keypairs a network ledger signs with. */
export interface NetworkKeys {
  /** Pays fees and rent for ledger-initiated transactions and sends airdrops. */
  faucet: Keypair;
  mint: Keypair;
  mintAuthority: Keypair;
  merchant: Keypair;
}

/** What `fund` did. `usdcAtomic` is atomic units; `lamports` is what was airdropped. */
export interface FundResult {
  owner: string;
  tokenAccount: string;
  mint: string;
  usdcAtomic: string;
  lamports: number;
  signature: string;
}

/** The account state in RPC terms; `null` is an account that does not exist (or has 0 lamports). */
export type LedgerAccount = AccountInfoBytes;

/** The `simulateTransaction` config flags the ledger honours, as the RPC names them. */
export interface SimulateOptions {
  /** Verify every signature first (a cluster's default is false). Conflicts with `replaceRecentBlockhash`. */
  sigVerify?: boolean;
  /** Simulate on the latest blockhash instead of the transaction's own (reported as `replacementBlockhash`). */
  replaceRecentBlockhash?: boolean;
  /** Record inner instructions (CPIs), returned parsed where a parser exists. */
  innerInstructions?: boolean;
  /** Accounts whose post-simulation state to return (`accounts.addresses`). */
  accounts?: readonly PublicKey[] | null;
}

/** `value` of a `simulateTransaction` answer, before account encoding. Units: compute units, bytes. */
export interface SimulationResult {
  err: RpcTransactionError | null;
  logs: string[];
  /** One entry per requested address (null: absent, or the simulation failed); null when none were requested. */
  accounts: (LedgerAccount | null)[] | null;
  unitsConsumed: number;
  /** Bytes of account data the transaction loaded (its accounts and the loaders of its programs). */
  loadedAccountsDataSize: number;
  returnData: { programId: string; data: [string, 'base64'] } | null;
  /** Parsed inner instructions when requested and the transaction executed; otherwise null. */
  innerInstructions: { index: number; instructions: unknown[] }[] | null;
  /** The blockhash simulated on and its last valid block height, when `replaceRecentBlockhash` was set. */
  replacementBlockhash: { blockhash: string; lastValidBlockHeight: number } | null;
}

/** A `getProgramAccounts` filter, as the RPC names it. `memcmp.bytes` is already decoded. */
export type ProgramAccountsFilter = { dataSize: number } | { memcmp: { offset: number; bytes: Uint8Array } };

type JournalAccount = [string, number, string, 0 | 1, string] | [string, null];
type JournalEntry = { t: 'tx'; r: TxRecord; a: JournalAccount[] } | { t: 'acct'; a: JournalAccount[] };

interface ResolvedKeys {
  keys: PublicKey[];
  loaded: { writable: string[]; readonly: string[] };
}

function encodeAccount(key: PublicKey, account: LedgerAccount | null): JournalAccount {
  if (account === null) return [key.toBase58(), null];
  return [
    key.toBase58(),
    account.lamports,
    account.owner.toBase58(),
    account.executable ? 1 : 0,
    Buffer.from(account.data).toString('base64'),
  ];
}

function readU32(data: Uint8Array, offset: number): number {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength).readUInt32LE(offset);
}

function readU64(data: Uint8Array, offset: number): bigint {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength).readBigUInt64LE(offset);
}

// DER SubjectPublicKeyInfo header of a raw 32-byte Ed25519 public key.
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const SANITIZE_FAILURE = 'invalid transaction: Transaction failed to sanitize accounts offsets correctly';
const MISSING_LOOKUP_TABLE =
  "invalid transaction: Transaction loads an address table account that doesn't exist";
const NATIVE_LOADER = 'NativeLoader1111111111111111111111111111111';

function invalidParams(message: string): RpcError {
  return new RpcError(RpcErrorCode.invalidParams, message);
}

/** Deserialises wire bytes as a validator's RPC does. @throws RpcError -32602 when they are no transaction */
function decodeTransaction(wire: Uint8Array): VersionedTransaction {
  try {
    return VersionedTransaction.deserialize(wire);
  } catch (error) {
    throw invalidParams(
      `failed to deserialize solana_sdk::transaction::versioned::VersionedTransaction: ${(error as Error).message}`,
    );
  }
}

/** The message bytes of a wire transaction exactly as signed (what follows the signatures). */
function wireMessage(wire: Uint8Array, signatureCount: number): Uint8Array {
  const lengthPrefix = signatureCount < 0x80 ? 1 : signatureCount < 0x4000 ? 2 : 3;
  return wire.subarray(lengthPrefix + 64 * signatureCount);
}

/**
 * The key of a message in the status cache. A validator refuses a message it has processed whatever
 * its signatures (a co-signed copy of a landed payment is AlreadyProcessed, not a new transaction).
 */
function messageKey(message: Uint8Array): string {
  return createHash('sha256').update(message).digest('base64');
}

/**
 * Whether every signature of the wire transaction is a valid Ed25519 signature of its message by the
 * matching signer key (an empty, all-zero signature is not). The message bytes are taken from the wire
 * as signed, not re-serialised.
 */
function signaturesVerify(wire: Uint8Array, tx: VersionedTransaction): boolean {
  const message = wireMessage(wire, tx.signatures.length);
  const keys = tx.message.staticAccountKeys;
  return tx.signatures.every((signature, i) => {
    const key = keys[i];
    if (key === undefined) return false;
    const spki = Buffer.concat([ED25519_SPKI_PREFIX, key.toBuffer()]);
    return verifyEd25519(null, message, { key: spki, format: 'der', type: 'spki' }, signature);
  });
}

function fromSvmAccount(account: Account): LedgerAccount | null {
  const lamports = Number(account.lamports());
  if (lamports === 0) return null;
  return {
    lamports,
    data: account.data(),
    owner: new PublicKey(account.owner()),
    executable: account.executable(),
    rentEpoch: Number(account.rentEpoch()),
  };
}

/**
 * The fee in lamports a cluster charges for `message`: 5000 per required signature plus the priority
 * fee (compute unit price in micro-lamports times the compute unit limit, rounded up).
 */
export function feeForMessage(message: VersionedMessage): number {
  const keys = message.staticAccountKeys;
  let price = 0n;
  let limit: number | null = null;
  let builtins = 0;
  let others = 0;
  for (const ix of message.compiledInstructions) {
    const program = keys[ix.programIdIndex]?.toBase58() ?? '';
    if (program === COMPUTE_BUDGET_PROGRAM) {
      if (ix.data[0] === 2 && ix.data.length >= 5) limit = readU32(ix.data, 1);
      if (ix.data[0] === 3 && ix.data.length >= 9) price = readU64(ix.data, 1);
    }
    if (BUILTIN_PROGRAMS.has(program)) builtins += 1;
    else others += 1;
  }
  const base = message.header.numRequiredSignatures * LAMPORTS_PER_SIGNATURE;
  if (price === 0n) return base;
  const units =
    limit ?? Math.min(MAX_CU, others * DEFAULT_CU_PER_INSTRUCTION + builtins * DEFAULT_CU_PER_BUILTIN);
  return base + Number((price * BigInt(units) + 999_999n) / 1_000_000n);
}

/**
 * One network's chain state: a LiteSVM instance (real SPL Token program, signature verification on)
 * plus what a validator's RPC layer adds and LiteSVM does not keep: issued blockhashes, slots, block
 * times, transaction records with token balances, and the journal that makes it all durable.
 *
 * Blockhashes: a new one every {@link BLOCK_INTERVAL_MS}, each accepted for
 * {@link BLOCKHASH_VALIDITY_BLOCKS} block heights, so concurrent clients holding the same blockhash all
 * land. LiteSVM's own blockhash check is off because it only knows one blockhash at a time.
 */
export class NetworkLedger {
  private readonly svm: LiteSVM;
  private readonly records = new Map<string, TxRecord>();
  // Status cache by message: keys of the messages of landed transactions (see messageKey).
  private readonly processedMessages = new Set<string>();
  private readonly blockhashes = new Map<string, number>();
  private readonly decimals = new Map<string, number>();
  private readonly startedAt = Date.now();
  private heightBase = 0;
  private slot = 0;
  private latest: { blockhash: string; height: number } | null = null;
  private journal: Journal | null = null;
  private feePayer: PublicKey | null = null;
  // Seconds added to the wall clock for the Clock sysvar and blockTime (localnet_setClockOffset).
  private clockOffsetSeconds = 0;
  // Every address a transaction or the ledger ever wrote: what getProgramAccounts scans (LiteSVM
  // cannot enumerate its accounts).
  private readonly known = new Set<string>();
  /** The network's test USDC mint. */
  readonly mint: PublicKey;
  /** The merchant's associated token account for {@link mint} (the x402 `payTo`). */
  readonly merchantTokenAccount: PublicKey;

  /**
   * @param network the network this instance stands in for
   * @param keys the ledger's signing keys
   * @param journalFile JSONL journal to replay now and append to; omit to keep state in memory only
   */
  constructor(
    readonly network: LocalnetNetwork,
    private readonly keys: NetworkKeys,
    journalFile?: string,
  ) {
    this.svm = new LiteSVM().withBlockhashCheck(false).withSigverify(true).withTransactionHistory(0n);
    this.mint = keys.mint.publicKey;
    this.merchantTokenAccount = getAssociatedTokenAddressSync(this.mint, keys.merchant.publicKey, true);
    if (journalFile !== undefined) {
      Journal.replay(journalFile, (entry) => this.applyJournalEntry(entry as JournalEntry));
      this.heightBase = this.slot;
      this.journal = Journal.open(journalFile);
    }
  }

  /** The merchant owner wallet address. */
  get merchantOwner(): PublicKey {
    return this.keys.merchant.publicKey;
  }

  /** This network's genesis hash (the real cluster's). */
  get genesisHash(): string {
    return GENESIS_HASH[this.network];
  }

  /** Number of landed transactions. */
  get transactionCount(): number {
    return this.records.size;
  }

  /**
   * Creates what is missing of: the faucet balance, the mint (6 decimals, authority kept by the
   * ledger), the merchant's token account, the agent's SOL and token account with `agentUsdcAtomic`
   * test USDC, and the x402 fee payer's SOL ({@link FEE_PAYER_LAMPORTS}, topped up when below
   * {@link FEE_PAYER_REFILL_BELOW_LAMPORTS}; never a token account), and the refund wallet's SOL and
   * test USDC ({@link REFUND_WALLET_USDC_ATOMIC}, topped up when below a tenth of it). Idempotent:
   * after a replayed journal it creates nothing and only tops the fee payer and refund wallet up.
   * @throws RpcError when a setup transaction fails
   */
  setup(options: {
    agent: PublicKey;
    agentUsdcAtomic: bigint;
    feePayer: PublicKey;
    refundWallet: PublicKey;
  }): void {
    const { agent, agentUsdcAtomic, feePayer, refundWallet } = options;
    this.feePayer = feePayer;
    this.ensureFaucet();
    const faucet = this.keys.faucet.publicKey;
    if (this.getAccount(this.mint) === null) {
      const rent = Number(this.svm.minimumBalanceForRentExemption(BigInt(MINT_SIZE)));
      this.runInternal(
        createMintInstructions({
          payer: faucet,
          mint: this.mint,
          decimals: USDC_DECIMALS,
          mintAuthority: this.keys.mintAuthority.publicKey,
          rentLamports: rent,
        }),
        [this.keys.faucet, this.keys.mint],
      );
    }
    if (this.getAccount(this.merchantTokenAccount) === null) {
      this.runInternal(
        [
          createAssociatedTokenAccountIdempotentInstruction(
            faucet,
            this.merchantTokenAccount,
            this.keys.merchant.publicKey,
            this.mint,
          ),
        ],
        [this.keys.faucet],
      );
    }
    if (this.getAccount(getAssociatedTokenAddressSync(this.mint, agent, true)) === null) {
      this.fund(agent, agentUsdcAtomic, DEFAULT_FUND_LAMPORTS);
    }
    const feePayerLamports = this.getAccount(feePayer)?.lamports ?? 0;
    if (feePayerLamports < FEE_PAYER_REFILL_BELOW_LAMPORTS) {
      this.airdrop(feePayer, FEE_PAYER_LAMPORTS - feePayerLamports);
    }
    const refundAccount = this.getAccount(getAssociatedTokenAddressSync(this.mint, refundWallet, true));
    const refundUsdc =
      refundAccount === null
        ? 0n
        : (decodeTokenAccount(refundAccount.owner.toBase58(), refundAccount.data)?.amount ?? 0n);
    if (refundUsdc < REFUND_WALLET_USDC_ATOMIC / 10n) {
      const lamports = this.getAccount(refundWallet)?.lamports ?? 0;
      this.fund(
        refundWallet,
        REFUND_WALLET_USDC_ATOMIC - refundUsdc,
        lamports < REFUND_WALLET_LAMPORTS / 10 ? REFUND_WALLET_LAMPORTS - lamports : 0,
      );
    }
  }

  /** Current block height: advances every {@link BLOCK_INTERVAL_MS}. */
  blockHeight(): number {
    return this.heightBase + Math.floor((Date.now() - this.startedAt) / BLOCK_INTERVAL_MS);
  }

  /** Current slot: the last transaction's slot or the block height, whichever is higher. */
  currentSlot(): number {
    return Math.max(this.slot, this.blockHeight());
  }

  /** The latest blockhash and the last block height at which it is accepted. */
  latestBlockhash(): { blockhash: string; lastValidBlockHeight: number } {
    const height = this.blockHeight();
    if (this.latest === null || this.latest.height !== height) {
      const blockhash = bs58.encode(randomBytes(32));
      this.blockhashes.set(blockhash, height);
      this.latest = { blockhash, height };
      // Map iteration is insertion order, i.e. oldest first.
      for (const [hash, issued] of this.blockhashes) {
        if (height - issued <= BLOCKHASH_VALIDITY_BLOCKS) break;
        this.blockhashes.delete(hash);
      }
    }
    return {
      blockhash: this.latest.blockhash,
      lastValidBlockHeight: this.latest.height + BLOCKHASH_VALIDITY_BLOCKS,
    };
  }

  /** Whether `blockhash` was issued by this ledger and is still within its validity window. */
  isBlockhashValid(blockhash: string): boolean {
    const issued = this.blockhashes.get(blockhash);
    return issued !== undefined && this.blockHeight() - issued <= BLOCKHASH_VALIDITY_BLOCKS;
  }

  /**
   * Shifts the clock of transactions that land from now on (their `blockTime` and the Clock sysvar's
   * `unixTimestamp`) by `seconds` from wall-clock time, e.g. -700 to make a payment look 700 s old.
   * 0 restores real time. Not journalled: a restart runs on real time.
   */
  setClockOffset(seconds: number): void {
    this.clockOffsetSeconds = seconds;
  }

  /** Wall-clock Unix seconds plus the clock offset. */
  private unixNow(): number {
    return Math.floor(Date.now() / 1000) + this.clockOffsetSeconds;
  }

  /** Forgets every issued blockhash, so transactions built on them fail with BlockhashNotFound (tests). */
  expireBlockhashes(): void {
    this.blockhashes.clear();
    this.latest = null;
  }

  /** Rent-exempt minimum in lamports for an account of `dataLength` bytes. */
  minimumBalanceForRentExemption(dataLength: number): number {
    return Number(this.svm.minimumBalanceForRentExemption(BigInt(dataLength)));
  }

  /** The account at `address`, or null when it does not exist or holds 0 lamports. */
  getAccount(address: PublicKey): LedgerAccount | null {
    const account = this.svm.getAccount(address);
    return account === null || account.lamports === 0 ? null : account;
  }

  /** Decimals of the SPL mint at `mint` (cached; decimals never change), or null if it is no mint. */
  mintDecimals(mint: string): number | null {
    const cached = this.decimals.get(mint);
    if (cached !== undefined) return cached;
    const account = this.getAccount(new PublicKey(mint));
    if (account === null) return null;
    const state = decodeMint(account.owner.toBase58(), account.data);
    if (state === null) return null;
    this.decimals.set(mint, state.decimals);
    return state.decimals;
  }

  /** The record of a landed transaction, or null when `signature` is unknown here. */
  getTransactionRecord(signature: string): TxRecord | null {
    return this.records.get(signature) ?? null;
  }

  /**
   * Executes a signed wire transaction the way a validator's `sendTransaction` does.
   *
   * With preflight (the default) the signatures are verified first (a bad or missing one throws
   * -32003), then a transaction that would fail is not committed and a {@link RpcError} -32002 is
   * thrown with the simulation's `err` and `logs` (also for BlockhashNotFound and AlreadyProcessed,
   * checked in that order). With `skipPreflight` an execution failure lands (fee charged, `meta.err`
   * set) while load failures (bad signature, unknown blockhash, duplicate, fee payer without funds)
   * are dropped silently: the signature is returned and never appears, as on a cluster.
   * @returns the transaction's first signature, base58
   * @throws RpcError -32602 for bytes that are not a (sane) transaction, -32002 / -32003 as above
   */
  sendTransaction(wire: Uint8Array, skipPreflight: boolean): string {
    const tx = decodeTransaction(wire);
    const resolved = this.sanitize(tx);
    const signature = bs58.encode(tx.signatures[0] ?? new Uint8Array(64));
    if (!skipPreflight && !signaturesVerify(wire, tx)) {
      throw new RpcError(
        RpcErrorCode.transactionSignatureVerificationFailure,
        'Transaction signature verification failure',
      );
    }
    const reject = (
      err: RpcTransactionError,
      message: string,
      logs: string[] = [],
      unitsConsumed = 0,
      loadedAccountsDataSize = 0,
    ): string => {
      if (skipPreflight) return signature;
      throw new RpcError(
        RpcErrorCode.sendTransactionPreflightFailure,
        `Transaction simulation failed: ${message}`,
        {
          accounts: null,
          err,
          innerInstructions: null,
          loadedAccountsDataSize,
          logs,
          replacementBlockhash: null,
          returnData: null,
          unitsConsumed,
        },
      );
    };

    // A validator checks the blockhash's age before its status cache.
    if (!this.isBlockhashValid(tx.message.recentBlockhash))
      return reject('BlockhashNotFound', 'Blockhash not found');
    const message = messageKey(wireMessage(wire, tx.signatures.length));
    if (this.records.has(signature) || this.processedMessages.has(message))
      return reject('AlreadyProcessed', 'This transaction has already been processed');
    const { keys } = resolved;
    const writable = keys.map((_, i) => tx.message.isAccountWritable(i));
    const pre = keys.map((key) => this.getAccount(key));

    const slot = Math.max(this.slot + 1, this.blockHeight());
    const blockTime = this.unixNow();
    this.setClock(slot, blockTime);

    const result = this.svm.sendTransaction(tx);
    let meta: TransactionMetadata;
    let err: RpcTransactionError | null = null;
    if (result instanceof FailedTransactionMetadata) {
      const converted = convertTransactionError(result);
      meta = result.meta();
      if (!skipPreflight || !converted.landed) {
        this.restore(keys, pre, writable);
        return reject(
          converted.json,
          converted.message,
          meta.logs(),
          Number(meta.computeUnitsConsumed()),
          converted.landed ? this.loadedDataSize(tx, keys) : 0,
        );
      }
      err = converted.json;
    } else {
      meta = result;
    }

    const post = keys.map((key) => this.getAccount(key));
    const record: TxRecord = {
      signature,
      slot,
      blockTime,
      raw: Buffer.from(wire).toString('base64'),
      version: tx.version === 'legacy' ? 'legacy' : 0,
      meta: {
        err,
        status: err === null ? { Ok: null } : { Err: err },
        fee: feeForMessage(tx.message),
        preBalances: pre.map((a) => a?.lamports ?? 0),
        postBalances: post.map((a) => a?.lamports ?? 0),
        innerInstructions: convertInnerInstructions(meta),
        logMessages: meta.logs(),
        preTokenBalances: this.tokenBalances(pre),
        postTokenBalances: this.tokenBalances(post),
        rewards: [],
        loadedAddresses: resolved.loaded,
        computeUnitsConsumed: Number(meta.computeUnitsConsumed()),
        ...returnDataOf(meta),
      },
    };
    this.slot = slot;
    this.records.set(signature, record);
    this.processedMessages.add(message);
    for (const key of keys) this.known.add(key.toBase58());
    // Serialise the getTransaction answer now, while the transaction is decoded: verifiers ask for
    // it right after landing, and that request then costs a lookup instead of a decode and encode.
    primeTransactionJson(record, tx);
    if (this.journal !== null) {
      const changed: JournalAccount[] = [];
      keys.forEach((key, i) => {
        if (writable[i]) changed.push(encodeAccount(key, post[i] ?? null));
      });
      this.journal.append({ t: 'tx', r: record, a: changed } satisfies JournalEntry);
    }
    return signature;
  }

  /**
   * Simulates a wire transaction the way a validator's `simulateTransaction` does, committing
   * nothing (accounts, slots, status cache and the Clock sysvar are as before).
   *
   * Signatures are verified only with `sigVerify` (so a transaction whose fee payer has not signed
   * yet simulates); `replaceRecentBlockhash` simulates on the latest blockhash instead of the
   * transaction's own. Failures of the transaction itself are answered in `err` (BlockhashNotFound
   * for an unknown or expired blockhash, AlreadyProcessed for a landed signature, InsufficientFundsForFee,
   * InstructionError...), never thrown.
   * @throws RpcError -32602 for bytes that are not a (sane) transaction, for `sigVerify` together with
   * `replaceRecentBlockhash` and for more `accounts` than the transaction has; -32003 when `sigVerify`
   * is set and a signature is missing or invalid (Agave 2.x; Agave 3.1 and later answer
   * `err: "SignatureFailure"` instead)
   */
  simulateTransaction(wire: Uint8Array, options: SimulateOptions = {}): SimulationResult {
    const tx = decodeTransaction(wire);
    let replacementBlockhash: SimulationResult['replacementBlockhash'] = null;
    if (options.replaceRecentBlockhash === true) {
      if (options.sigVerify === true)
        throw invalidParams('sigVerify may not be used with replaceRecentBlockhash');
      replacementBlockhash = this.latestBlockhash();
      tx.message.recentBlockhash = replacementBlockhash.blockhash;
    }
    const { keys } = this.sanitize(tx);
    if (options.sigVerify === true && !signaturesVerify(wire, tx)) {
      throw new RpcError(
        RpcErrorCode.transactionSignatureVerificationFailure,
        'Transaction signature verification failure',
      );
    }
    const requested = options.accounts ?? null;
    if (requested !== null && requested.length > keys.length) {
      throw invalidParams(`Too many accounts provided; max ${keys.length}`);
    }
    const failed = (err: RpcTransactionError): SimulationResult => ({
      err,
      logs: [],
      accounts: requested?.map(() => null) ?? null,
      unitsConsumed: 0,
      loadedAccountsDataSize: 0,
      returnData: null,
      innerInstructions: null,
      replacementBlockhash,
    });
    if (!this.isBlockhashValid(tx.message.recentBlockhash)) return failed('BlockhashNotFound');
    const message =
      replacementBlockhash === null ? wireMessage(wire, tx.signatures.length) : tx.message.serialize();
    if (
      this.records.has(bs58.encode(tx.signatures[0] ?? new Uint8Array(64))) ||
      this.processedMessages.has(messageKey(message))
    ) {
      return failed('AlreadyProcessed');
    }

    // The bank a validator simulates on is at the current slot and time; the clock is put back after.
    const savedClock = this.svm.getClock();
    this.setClock(this.currentSlot(), this.unixNow());
    this.svm.withSigverify(false);
    let result: ReturnType<LiteSVM['simulateTransaction']>;
    try {
      result = this.svm.simulateTransaction(tx);
    } finally {
      this.svm.withSigverify(true);
      this.svm.setClock(savedClock);
    }

    let executed = true;
    let err: RpcTransactionError | null = null;
    let post: Map<string, LedgerAccount | null> | null = null;
    const meta = result.meta();
    if (result instanceof FailedTransactionMetadata) {
      const converted = convertTransactionError(result);
      if (converted.json === 'SanitizeFailure') throw invalidParams(SANITIZE_FAILURE);
      executed = converted.landed;
      err = converted.json;
    } else {
      post = new Map(
        result.postAccounts().map(([key, account]) => [key.toBase58(), fromSvmAccount(account)]),
      );
    }
    if (!executed) return { ...failed(err ?? 'UnknownError'), logs: meta.logs() };
    const returnData = returnDataOf(meta).returnData ?? null;
    return {
      err,
      logs: meta.logs(),
      accounts:
        requested?.map((key) => {
          if (post === null) return null;
          const after = post.get(key.toBase58());
          return after === undefined ? this.getAccount(key) : after;
        }) ?? null,
      unitsConsumed: Number(meta.computeUnitsConsumed()),
      loadedAccountsDataSize: this.loadedDataSize(tx, keys),
      returnData,
      innerInstructions:
        options.innerInstructions === true
          ? parsedInnerInstructions(
              keys.map((k) => k.toBase58()),
              convertInnerInstructions(meta),
            )
          : null,
      replacementBlockhash,
    };
  }

  /**
   * Sends `lamports` from the faucet to `to` in a recorded transfer transaction.
   * @returns the transaction signature
   * @throws RpcError when the transfer fails (e.g. a new account below the rent-exempt minimum)
   */
  airdrop(to: PublicKey, lamports: number): string {
    this.ensureFaucet();
    return this.runInternal(
      [SystemProgram.transfer({ fromPubkey: this.keys.faucet.publicKey, toPubkey: to, lamports })],
      [this.keys.faucet],
    );
  }

  /**
   * In one recorded transaction: airdrops `lamports` to `owner` (skipped when 0), creates the owner's
   * associated token account for the test mint if missing, and mints `usdcAtomic` atomic units to it
   * (skipped when 0).
   * @throws RpcError -32602 for the fee payer (it must not own a token account); RpcError when the
   * transaction fails (e.g. lamports below the rent-exempt minimum for a new wallet)
   */
  fund(owner: PublicKey, usdcAtomic: bigint, lamports: number): FundResult {
    if (this.feePayer !== null && owner.equals(this.feePayer)) {
      throw invalidParams(
        'Invalid params: the x402 fee payer holds SOL only and never a token account; use requestAirdrop',
      );
    }
    this.ensureFaucet();
    const faucet = this.keys.faucet.publicKey;
    const tokenAccount = getAssociatedTokenAddressSync(this.mint, owner, true);
    const instructions: TransactionInstruction[] = [];
    const signers = [this.keys.faucet];
    if (lamports > 0)
      instructions.push(SystemProgram.transfer({ fromPubkey: faucet, toPubkey: owner, lamports }));
    instructions.push(
      createAssociatedTokenAccountIdempotentInstruction(faucet, tokenAccount, owner, this.mint),
    );
    if (usdcAtomic > 0n) {
      instructions.push(
        createMintToInstruction(this.mint, tokenAccount, this.keys.mintAuthority.publicKey, usdcAtomic),
      );
      signers.push(this.keys.mintAuthority);
    }
    const signature = this.runInternal(instructions, signers);
    return {
      owner: owner.toBase58(),
      tokenAccount: tokenAccount.toBase58(),
      mint: this.mint.toBase58(),
      usdcAtomic: usdcAtomic.toString(),
      lamports,
      signature,
    };
  }

  /**
   * `getProgramAccounts`: every account owned by `owner` that passes all `filters` (data size, byte
   * comparison at an offset), among the accounts this ledger ever wrote, in address order.
   */
  programAccounts(
    owner: PublicKey,
    filters: readonly ProgramAccountsFilter[],
  ): { pubkey: string; account: LedgerAccount }[] {
    const out: { pubkey: string; account: LedgerAccount }[] = [];
    for (const address of [...this.known].sort()) {
      const account = this.getAccount(new PublicKey(address));
      if (account === null || !account.owner.equals(owner)) continue;
      const data = account.data;
      const pass = filters.every((filter) => {
        if ('dataSize' in filter) return data.length === filter.dataSize;
        const { offset, bytes } = filter.memcmp;
        if (offset + bytes.length > data.length) return false;
        return Buffer.from(bytes).equals(Buffer.from(data.subarray(offset, offset + bytes.length)));
      });
      if (pass) out.push({ pubkey: address, account });
    }
    return out;
  }

  /** Closes the journal (fsync). */
  close(): void {
    this.journal?.close();
    this.journal = null;
  }

  private runInternal(instructions: TransactionInstruction[], signers: Keypair[]): string {
    const { blockhash, lastValidBlockHeight } = this.latestBlockhash();
    const tx = new Transaction({ feePayer: this.keys.faucet.publicKey, blockhash, lastValidBlockHeight });
    tx.add(...instructions);
    tx.sign(...signers);
    return this.sendTransaction(tx.serialize(), false);
  }

  private setClock(slot: number, unixTimestamp: number): void {
    const clock = this.svm.getClock();
    clock.slot = BigInt(slot);
    clock.unixTimestamp = BigInt(unixTimestamp);
    this.svm.setClock(clock);
  }

  /**
   * The sanitisation a validator does before anything else (in part): one signature per required
   * signer, a writable fee payer, address lookup tables that exist. @returns the account keys, lookups resolved
   * @throws RpcError -32602 "invalid transaction: ..." otherwise
   */
  private sanitize(tx: VersionedTransaction): ResolvedKeys {
    const { numRequiredSignatures, numReadonlySignedAccounts } = tx.message.header;
    // One signature per signer, and a writable signer first to pay the fee.
    if (
      tx.signatures.length !== numRequiredSignatures ||
      numReadonlySignedAccounts >= numRequiredSignatures
    ) {
      throw invalidParams(SANITIZE_FAILURE);
    }
    const resolved = this.resolveKeys(tx.message);
    if (resolved === null) throw invalidParams(MISSING_LOOKUP_TABLE);
    return resolved;
  }

  /**
   * Bytes of account data a transaction loads, counted as Agave 2.x does before SIMD-0186: every
   * account it names, plus once each the loader owning a program it invokes (builtins excepted).
   */
  private loadedDataSize(tx: VersionedTransaction, keys: PublicKey[]): number {
    let size = 0;
    for (const key of keys) size += this.getAccount(key)?.data.length ?? 0;
    const loaders = new Set<string>();
    for (const ix of tx.message.compiledInstructions) {
      const program = keys[ix.programIdIndex];
      const owner = program === undefined ? undefined : this.getAccount(program)?.owner.toBase58();
      if (owner === undefined || owner === NATIVE_LOADER || loaders.has(owner)) continue;
      loaders.add(owner);
      size += this.getAccount(new PublicKey(owner))?.data.length ?? 0;
    }
    return size;
  }

  private ensureFaucet(): void {
    const faucet = this.keys.faucet.publicKey;
    this.known.add(faucet.toBase58());
    if (Number(this.svm.getBalance(faucet) ?? 0n) >= FAUCET_REFILL_BELOW) return;
    const account: LedgerAccount = {
      lamports: FAUCET_LAMPORTS,
      data: new Uint8Array(0),
      owner: SystemProgram.programId,
      executable: false,
      rentEpoch: 0,
    };
    this.svm.setAccount(faucet, account);
    this.journal?.append({ t: 'acct', a: [encodeAccount(faucet, account)] } satisfies JournalEntry);
  }

  private resolveKeys(message: VersionedMessage): ResolvedKeys | null {
    const loaded = { writable: [] as string[], readonly: [] as string[] };
    if (message.version === 'legacy' || message.addressTableLookups.length === 0) {
      return { keys: message.staticAccountKeys, loaded };
    }
    const writable: PublicKey[] = [];
    const readonly: PublicKey[] = [];
    for (const lookup of message.addressTableLookups) {
      const account = this.getAccount(lookup.accountKey);
      if (account === null) return null;
      const table = new AddressLookupTableAccount({
        key: lookup.accountKey,
        state: AddressLookupTableAccount.deserialize(account.data),
      });
      for (const [indexes, into] of [
        [lookup.writableIndexes, writable],
        [lookup.readonlyIndexes, readonly],
      ] as const) {
        for (const index of indexes) {
          const address = table.state.addresses[index];
          if (address === undefined) return null;
          into.push(address);
        }
      }
    }
    loaded.writable = writable.map((k) => k.toBase58());
    loaded.readonly = readonly.map((k) => k.toBase58());
    return { keys: [...message.staticAccountKeys, ...writable, ...readonly], loaded };
  }

  private restore(keys: PublicKey[], pre: (LedgerAccount | null)[], writable: boolean[]): void {
    keys.forEach((key, i) => {
      if (!writable[i]) return;
      const before = pre[i] ?? null;
      if (before !== null) {
        this.svm.setAccount(key, before);
      } else {
        this.clearAccount(key);
      }
    });
  }

  /** Makes an existing account empty (what a closed account looks like); absent ones stay absent. */
  private clearAccount(key: PublicKey): void {
    if (this.svm.getAccount(key) === null) return;
    this.svm.setAccount(key, {
      lamports: 0,
      data: new Uint8Array(0),
      owner: SystemProgram.programId,
      executable: false,
      rentEpoch: 0,
    });
  }

  private tokenBalances(accounts: (LedgerAccount | null)[]): RpcTokenBalance[] {
    const balances: RpcTokenBalance[] = [];
    accounts.forEach((account, accountIndex) => {
      if (account === null) return;
      const programId = account.owner.toBase58();
      const state = decodeTokenAccount(programId, account.data);
      if (state === null) return;
      const decimals = this.mintDecimals(state.mint);
      if (decimals === null) return;
      balances.push({
        accountIndex,
        mint: state.mint,
        owner: state.owner,
        programId,
        uiTokenAmount: uiTokenAmount(state.amount, decimals),
      });
    });
    return balances;
  }

  private applyJournalEntry(entry: JournalEntry): void {
    for (const account of entry.a) {
      this.known.add(account[0]);
      const key = new PublicKey(account[0]);
      if (account[1] === null) {
        this.clearAccount(key);
        continue;
      }
      const [, lamports, owner, executable, data] = account;
      this.svm.setAccount(key, {
        lamports,
        owner: new PublicKey(owner),
        executable: executable === 1,
        data: Buffer.from(data, 'base64'),
        rentEpoch: 0,
      });
    }
    if (entry.t === 'tx') {
      this.records.set(entry.r.signature, entry.r);
      const wire = Buffer.from(entry.r.raw, 'base64');
      // The signature count's shortvec is one byte: a 1232-byte packet holds fewer than 128 signatures.
      this.processedMessages.add(messageKey(wireMessage(wire, wire[0] ?? 0)));
      this.slot = Math.max(this.slot, entry.r.slot);
    }
  }
}

function convertInnerInstructions(meta: TransactionMetadata): RpcTransactionMeta['innerInstructions'] {
  const out: RpcTransactionMeta['innerInstructions'] = [];
  meta.innerInstructions().forEach((list, index) => {
    if (list.length === 0) return;
    out.push({
      index,
      instructions: list.map((inner) => {
        const ix = inner.instruction();
        return {
          programIdIndex: ix.programIdIndex(),
          accounts: Array.from(ix.accounts()),
          data: bs58.encode(ix.data()),
          stackHeight: inner.stackHeight(),
        };
      }),
    });
  });
  return out;
}

function returnDataOf(meta: TransactionMetadata): Pick<RpcTransactionMeta, 'returnData'> {
  const returnData = meta.returnData();
  const data = returnData.data();
  if (data.length === 0) return {};
  return {
    returnData: {
      programId: bs58.encode(returnData.programId()),
      data: [Buffer.from(data).toString('base64'), 'base64'],
    },
  };
}
