import {
  type Connection,
  Keypair,
  PublicKey,
  SendTransactionError,
  Transaction,
  TransactionInstruction,
} from '@solana/web3.js';
import type { X402Network } from '@repo/schemas';
import { connectionFor, isUnreachable, sendErrorText } from './client/pay';
import { bs58, createTransferCheckedInstruction, unpackAccount } from './deps';
import { SolanaRpcClient, type RpcTokenBalance } from './rpc-client';
import { tokenSourceOf, type TokenSource } from './token-source';
import { findTransfersChecked, resolveAccountKeys } from './verifier';

/** SPL Memo v2: the refund names the payment it returns, on chain, for the payer's bookkeeping. */
const MEMO_PROGRAM_ID = new PublicKey('MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr');

/** Where and from what a {@link RefundSender} refunds, per network. */
export interface RefundSenderConfig {
  /** The network, as this project names it. */
  network: X402Network;
  /** JSON-RPC URL of that network. */
  rpcUrl: string;
  /** The USDC mint (base58) the payments were made in. */
  asset: string;
  /** The refund wallet's 64-byte secret key: it owns the USDC account refunds come from and pays their fees. */
  refundSecretKey: Uint8Array;
  /** Timeout of one RPC call, in milliseconds; default 10 000. */
  rpcTimeoutMs?: number;
}

/**
 * What to refund: the whole amount of one payment, back into the token account it was paid from
 * (README "@repo/x402-solana", "Refunds").
 */
export interface RefundOrder {
  /** The payment transaction's signature (base58): read on chain to find the paying account, and written in the memo. */
  paymentSignature: string;
  /** The wallet that paid (the payment transfer's authority, base58). */
  payer: string;
  /** Atomic USDC units to return (the price paid). */
  amountAtomic: bigint;
  /** The merchant token account the payment went into (base58): picks the payment's `transferChecked`. */
  payTo: string;
}

/**
 * A refund transaction signed and not necessarily sent: store it before sending, so that after a
 * crash the same transaction is sent again (or found on chain) instead of a second one being built.
 */
export interface SignedRefund {
  /** The transaction's signature (base58), known before it is sent. */
  signature: string;
  /** The wire transaction, base64. */
  transaction: string;
  /** The last block height at which its blockhash is accepted: past it, it can never land. */
  lastValidBlockHeight: number;
  /** The token account it pays into (base58): the source of the payment's transfer. */
  destination: string;
}

/**
 * Why a refund cannot be sent without spending more than the refund itself (README
 * "@repo/x402-solana", "Refunds"); each is final for that refund, which is held, never retried:
 * - `source_account_closed`: the token account the payment came from no longer exists (a refund
 *   would have to create it, paying its rent, which its owner can then close and keep);
 * - `source_account_changed`: it exists but is no longer a token account of the mint owned by the
 *   wallet that owned it when it paid (closed and recreated otherwise, or its owner changed);
 * - `source_account_frozen`: it is frozen (the mint's freeze authority): a transfer into it fails;
 * - `payment_transfer_not_found`: the payment transaction carries no `transferChecked` of the amount
 *   of the mint from the payer into the merchant account (it failed on chain, or it is not the
 *   payment recorded).
 */
export type UnclaimableReason =
  'source_account_closed' | 'source_account_changed' | 'source_account_frozen' | 'payment_transfer_not_found';

/**
 * What {@link RefundSender.build} made of an order: a signed refund into the paying account, or the
 * reason none can be made (`destination`: the paying account when it is known; `detail`: a sentence
 * for operators).
 */
export type RefundBuild =
  | { kind: 'signed'; refund: SignedRefund }
  | { kind: 'unclaimable'; reason: UnclaimableReason; destination: string | null; detail: string };

/**
 * Where a sent refund stands:
 * - `confirmed`: landed without error at `slot` (the payer has the money back);
 * - `failed`: landed with an error (nothing moved, only the fee was spent): build a new one;
 * - `pending`: not seen yet and its blockhash is still valid: it may still land, send it again;
 * - `expired`: not landed and its blockhash expired: it can never land, build a new one.
 */
export type RefundState =
  | { state: 'confirmed'; slot: number }
  | { state: 'failed'; error: string }
  | { state: 'pending' }
  | { state: 'expired' };

/**
 * Why {@link RefundSender.send} could not hand a refund to the network: `refused` (the RPC's preflight
 * refused it, so it was not forwarded and cannot land: e.g. the refund wallet lacks USDC or SOL, or
 * the blockhash expired), `unknown` (the RPC could not be reached or did not answer: it may have been
 * forwarded).
 */
export class RefundSendError extends Error {
  constructor(
    readonly kind: 'refused' | 'unknown',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'RefundSendError';
  }
}

/**
 * Sends refunds of x402 payments on one network (README "@repo/x402-solana", "Refunds"): one
 * transaction per refund, a `transferChecked` of the whole amount from the refund wallet's associated
 * token account into the token account the payment came from (the source of the payment's
 * `transferChecked` into the merchant account, read with `getTransaction`), with a memo
 * `x402 refund <payment signature>`. It never creates an account: when the paying account is gone or
 * changed, {@link build} answers `unclaimable` instead of a transaction. It keeps no state: the caller
 * stores each {@link SignedRefund} before {@link send} and asks {@link status} until it is final,
 * which makes a refund exactly-once as long as a new one is only built after the stored one is
 * `failed` or `expired`.
 */
export class RefundSender {
  /** The network, as this project names it. */
  readonly network: X402Network;
  /** The refund wallet (base58). */
  readonly wallet: string;
  private readonly keypair: Keypair;
  private readonly mint: PublicKey;
  private readonly connection: Connection;
  private readonly rpc: SolanaRpcClient;
  private token: Promise<TokenSource> | undefined;

  /**
   * @param config network, RPC URL, mint and the refund wallet's key
   * @throws Error when the secret key is not a 64-byte keypair or the mint is not base58
   */
  constructor(config: RefundSenderConfig) {
    this.network = config.network;
    this.keypair = Keypair.fromSecretKey(config.refundSecretKey);
    this.wallet = this.keypair.publicKey.toBase58();
    this.mint = new PublicKey(config.asset);
    this.connection = connectionFor(config.rpcUrl, config.rpcTimeoutMs ?? 10_000);
    this.rpc = new SolanaRpcClient(config.rpcUrl, {
      timeoutMs: config.rpcTimeoutMs ?? 10_000,
      maxConnections: 4,
    });
  }

  /**
   * Builds and signs the refund of `order` on the latest blockhash, into the token account the payment
   * came from; sends nothing. Reads the payment transaction (`getTransaction`), then that account
   * (`getAccountInfo`): it must still be a token account of the mint, owned by the wallet that owned
   * it when it paid (the payer, unless the payer paid as its delegate), and not frozen; otherwise the
   * answer is `unclaimable` with the {@link UnclaimableReason}, and no transaction is made.
   * @returns `{ kind: "signed", refund }` or `{ kind: "unclaimable", reason, destination, detail }`
   * @throws Error when the RPC cannot be reached or does not know the payment transaction (yet): worth
   *   trying again later, unlike `unclaimable`
   */
  async build(order: RefundOrder): Promise<RefundBuild> {
    const { programId, decimals, source } = await this.tokenProgram();
    const found = await this.payingAccount(order);
    if (found.kind === 'unclaimable') return found;
    const held = await this.checkDestination(found.account, found.owner, programId);
    if (held) return held;
    const destination = new PublicKey(found.account);
    const { blockhash, lastValidBlockHeight } = await this.connection.getLatestBlockhash('confirmed');
    const tx = new Transaction({ feePayer: this.keypair.publicKey, blockhash, lastValidBlockHeight }).add(
      createTransferCheckedInstruction(
        source,
        this.mint,
        destination,
        this.keypair.publicKey,
        order.amountAtomic,
        decimals,
        [],
        programId,
      ),
      new TransactionInstruction({
        programId: MEMO_PROGRAM_ID,
        keys: [],
        data: Buffer.from(`x402 refund ${order.paymentSignature}`, 'utf8'),
      }),
    );
    tx.sign(this.keypair);
    const signature = tx.signature;
    if (!signature) throw new Error('the refund transaction was not signed');
    return {
      kind: 'signed',
      refund: {
        signature: bs58.encode(signature),
        transaction: tx.serialize().toString('base64'),
        lastValidBlockHeight,
        destination: found.account,
      },
    };
  }

  /**
   * The token account the payment came from and its owner then: the source of the payment's first
   * `transferChecked` (top-level or inner) of exactly `amountAtomic` of the mint into `payTo` (the one
   * the verifier accepted), whose authority must be the payer. The owner is the source's `owner` in
   * the payment's `preTokenBalances` (else `postTokenBalances`), or the payer when the node does not
   * report it.
   * @throws Error when the RPC cannot be reached or does not know the transaction
   */
  private async payingAccount(
    order: RefundOrder,
  ): Promise<
    { kind: 'found'; account: string; owner: string } | Extract<RefundBuild, { kind: 'unclaimable' }>
  > {
    const tx = await this.rpc.getTransaction(order.paymentSignature);
    if (!tx?.meta) {
      throw new Error(`the payment transaction ${order.paymentSignature} is not known to the RPC (yet)`);
    }
    const mint = this.mint.toBase58();
    const keys = resolveAccountKeys(tx);
    const transfer =
      tx.meta.err === null || tx.meta.err === undefined
        ? findTransfersChecked(tx, keys).find(
            (t) => t.destination === order.payTo && t.mint === mint && t.amountAtomic === order.amountAtomic,
          )
        : undefined;
    if (!transfer || transfer.authority !== order.payer) {
      return {
        kind: 'unclaimable',
        reason: 'payment_transfer_not_found',
        destination: null,
        detail: `the payment transaction moves no ${order.amountAtomic} atomic units of ${mint} from ${order.payer} into ${order.payTo}`,
      };
    }
    const ofSource = (balances: readonly RpcTokenBalance[] | null | undefined) =>
      balances?.find((b) => keys[b.accountIndex] === transfer.source && b.mint === mint)?.owner;
    const owner = ofSource(tx.meta.preTokenBalances) ?? ofSource(tx.meta.postTokenBalances) ?? order.payer;
    return { kind: 'found', account: transfer.source, owner };
  }

  /**
   * Why a refund into `account` cannot be sent as it is, or undefined when it can: the account must
   * exist, belong to the mint's token program, hold the mint, be owned by `owner` and not be frozen.
   * @throws Error when the RPC cannot be reached
   */
  private async checkDestination(
    account: string,
    owner: string,
    programId: PublicKey,
  ): Promise<Extract<RefundBuild, { kind: 'unclaimable' }> | undefined> {
    const address = new PublicKey(account);
    const info = await this.connection.getAccountInfo(address, 'confirmed');
    const held = (reason: UnclaimableReason, detail: string) =>
      ({ kind: 'unclaimable', reason, destination: account, detail }) as const;
    if (!info) return held('source_account_closed', `the paying token account ${account} no longer exists`);
    let state: ReturnType<typeof unpackAccount>;
    try {
      state = unpackAccount(address, info, programId);
    } catch {
      return held(
        'source_account_changed',
        `${account} is no longer a token account of ${programId.toBase58()}`,
      );
    }
    if (!state.mint.equals(this.mint)) {
      return held('source_account_changed', `${account} now holds mint ${state.mint.toBase58()}`);
    }
    if (state.owner.toBase58() !== owner) {
      return held(
        'source_account_changed',
        `${account} is now owned by ${state.owner.toBase58()}, not ${owner}`,
      );
    }
    if (state.isFrozen) return held('source_account_frozen', `${account} is frozen`);
    return undefined;
  }

  /**
   * Sends a signed refund (with preflight). Sending one that already landed is harmless: the network
   * refuses a transaction it processed, and that refusal counts as sent.
   * @throws RefundSendError `refused` when the RPC refused it without forwarding it, `unknown` when
   *   the RPC could not be reached (it may have been forwarded)
   */
  async send(refund: Pick<SignedRefund, 'transaction'>): Promise<void> {
    try {
      await this.connection.sendRawTransaction(Buffer.from(refund.transaction, 'base64'), {
        preflightCommitment: 'confirmed',
        maxRetries: 0,
      });
    } catch (error) {
      const text = sendErrorText(error);
      if (/already been processed|AlreadyProcessed/i.test(text)) return;
      if (isUnreachable(error) || !(error instanceof SendTransactionError)) {
        throw new RefundSendError('unknown', `sending the refund failed: ${firstLine(text)}`, {
          cause: error,
        });
      }
      throw new RefundSendError('refused', `the RPC refused the refund: ${firstLine(text)}`, {
        cause: error,
      });
    }
  }

  /**
   * Where a sent refund stands. The block height is read before the signature's status, so that
   * `expired` is only answered for a transaction that could no longer land when its absence was seen.
   * @throws Error when the RPC cannot be reached or answers an error
   */
  async status(refund: Pick<SignedRefund, 'signature' | 'lastValidBlockHeight'>): Promise<RefundState> {
    const height = await this.connection.getBlockHeight('confirmed');
    const { value } = await this.connection.getSignatureStatuses([refund.signature], {
      searchTransactionHistory: true,
    });
    const status = value[0];
    if (status && (status.confirmationStatus === 'confirmed' || status.confirmationStatus === 'finalized')) {
      return status.err === null
        ? { state: 'confirmed', slot: status.slot }
        : { state: 'failed', error: JSON.stringify(status.err) };
    }
    if (!status && height > refund.lastValidBlockHeight) return { state: 'expired' };
    return { state: 'pending' };
  }

  /**
   * The refund wallet's USDC, in atomic units (0 when it has no token account).
   * @throws Error when the RPC cannot be reached
   */
  async balance(): Promise<bigint> {
    const { programId, source } = await this.tokenProgram();
    const info = await this.connection.getAccountInfo(source, 'confirmed');
    return info ? unpackAccount(source, info, programId).amount : 0n;
  }

  /** The mint's token program and decimals (read once) and the refund wallet's token account. */
  private tokenProgram(): Promise<TokenSource> {
    this.token ??= (async () => {
      const info = await this.connection.getAccountInfo(this.mint, 'confirmed');
      if (!info) throw new Error(`the mint ${this.mint.toBase58()} does not exist on ${this.network}`);
      return tokenSourceOf(this.mint, info, this.keypair.publicKey);
    })();
    // A failed read is tried again next time.
    this.token.catch(() => {
      this.token = undefined;
    });
    return this.token;
  }
}

function firstLine(text: string): string {
  return (text.split('\n')[0] ?? text).slice(0, 300);
}
