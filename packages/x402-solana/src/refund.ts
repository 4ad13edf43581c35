import {
  type Connection,
  Keypair,
  PublicKey,
  SendTransactionError,
  Transaction,
  TransactionInstruction,
} from '@solana/web3.js';
import type { X402Network } from '@repo/schemas';
import { connectionFor, isUnreachable } from './client/pay';
import {
  bs58,
  createAssociatedTokenAccountIdempotentInstruction,
  createTransferCheckedInstruction,
  getAssociatedTokenAddressSync,
  TOKEN_2022_PROGRAM_ID,
  TOKEN_PROGRAM_ID,
  unpackAccount,
  unpackMint,
} from './deps';

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

/** What to refund: the whole amount of one payment, to its payer. */
export interface RefundOrder {
  /** The payment transaction's signature (base58): written in the refund's memo. */
  paymentSignature: string;
  /** The wallet that paid (the transfer's authority, base58): the refund goes to its associated token account. */
  payer: string;
  /** Atomic USDC units to return (the price paid). */
  amountAtomic: bigint;
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
}

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
 * transaction per refund, from the refund wallet's associated token account to the payer's (created
 * first, at the refund wallet's expense, when the payer has none), `transferChecked` of the whole
 * amount, with a memo `x402 refund <payment signature>`. It keeps no state: the caller stores each
 * {@link SignedRefund} before {@link send} and asks {@link status} until it is final, which makes a
 * refund exactly-once as long as a new one is only built after the stored one is `failed` or `expired`.
 */
export class RefundSender {
  /** The network, as this project names it. */
  readonly network: X402Network;
  /** The refund wallet (base58). */
  readonly wallet: string;
  private readonly keypair: Keypair;
  private readonly mint: PublicKey;
  private readonly connection: Connection;
  private token: Promise<{ programId: PublicKey; decimals: number; source: PublicKey }> | undefined;

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
  }

  /**
   * Builds and signs the refund of `order` on the latest blockhash; sends nothing.
   * @throws Error when the RPC cannot be reached or `order.payer` is not an address
   */
  async build(order: RefundOrder): Promise<SignedRefund> {
    const payer = new PublicKey(order.payer);
    const { programId, decimals, source } = await this.tokenProgram();
    const destination = getAssociatedTokenAddressSync(this.mint, payer, true, programId);
    const { blockhash, lastValidBlockHeight } = await this.connection.getLatestBlockhash('confirmed');
    const tx = new Transaction({ feePayer: this.keypair.publicKey, blockhash, lastValidBlockHeight }).add(
      createAssociatedTokenAccountIdempotentInstruction(
        this.keypair.publicKey,
        destination,
        payer,
        this.mint,
        programId,
      ),
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
      signature: bs58.encode(signature),
      transaction: tx.serialize().toString('base64'),
      lastValidBlockHeight,
    };
  }

  /**
   * Sends a signed refund (with preflight). Sending one that already landed is harmless: the network
   * refuses a transaction it processed, and that refusal counts as sent.
   * @throws RefundSendError `refused` when the RPC refused it without forwarding it, `unknown` when
   *   the RPC could not be reached (it may have been forwarded)
   */
  async send(refund: SignedRefund): Promise<void> {
    try {
      await this.connection.sendRawTransaction(Buffer.from(refund.transaction, 'base64'), {
        preflightCommitment: 'confirmed',
        maxRetries: 0,
      });
    } catch (error) {
      const text = errorText(error);
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
  private tokenProgram(): Promise<{ programId: PublicKey; decimals: number; source: PublicKey }> {
    this.token ??= (async () => {
      const info = await this.connection.getAccountInfo(this.mint, 'confirmed');
      if (!info) throw new Error(`the mint ${this.mint.toBase58()} does not exist on ${this.network}`);
      const programId = info.owner.equals(TOKEN_2022_PROGRAM_ID) ? TOKEN_2022_PROGRAM_ID : TOKEN_PROGRAM_ID;
      const { decimals } = unpackMint(this.mint, info, programId);
      return {
        programId,
        decimals,
        source: getAssociatedTokenAddressSync(this.mint, this.keypair.publicKey, true, programId),
      };
    })();
    // A failed read is tried again next time.
    this.token.catch(() => {
      this.token = undefined;
    });
    return this.token;
  }
}

function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const logs = error instanceof SendTransactionError ? (error.logs ?? []).join('\n') : '';
  return `${error.message}\n${logs}`;
}

function firstLine(text: string): string {
  return (text.split('\n')[0] ?? text).slice(0, 300);
}
