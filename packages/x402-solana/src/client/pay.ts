import { randomInt } from 'node:crypto';
import {
  ComputeBudgetProgram,
  Connection,
  PublicKey,
  SendTransactionError,
  Transaction,
} from '@solana/web3.js';
import type { PaymentRequirements } from '@repo/schemas';
import { rpcFetch } from '../rpc-fetch';
import {
  InsufficientFundsError,
  PaymentConfirmationError,
  RpcUnreachableError,
  X402ClientError,
} from '../client-core/errors';
import { signerOf, type PayingWallet } from './signer';
import { createTransferCheckedInstruction, unpackAccount } from '../deps';
import { tokenSourceOf } from '../token-source';

/** Lamports one signature costs in fees on Solana. */
const LAMPORTS_PER_SIGNATURE = 5000n;

/**
 * Input of {@link payForRequirements}: the options and the paying wallet (owner of the source
 * associated token account and fee payer), `keypair` or `signer` (README "The client", "Signers").
 */
export type PayForRequirementsInput = PayForRequirementsOptions & PayingWallet;

/** What {@link payForRequirements} pays and how, besides the wallet. */
export interface PayForRequirementsOptions {
  /** The requirements to pay (an element of a 402's `accepts`): exactly `maxAmountRequired` of `asset` to `payTo`. */
  requirements: PaymentRequirements;
  /** JSON-RPC URL of the requirements' network (or pass `connection`). */
  rpcUrl?: string;
  /** A ready web3.js v1 connection. */
  connection?: Connection;
  /** Milliseconds to wait for `confirmed`; default 30000. */
  confirmTimeoutMs?: number;
  /** Milliseconds between `getSignatureStatuses` polls; default 250. */
  pollIntervalMs?: number;
  /** Timeout of one RPC call in milliseconds (only with `rpcUrl`); default 10000. */
  rpcTimeoutMs?: number;
}

/**
 * Pays x402 requirements (docs/payments.md, "Paying for data (x402)", step 2): one SPL `transferChecked` of
 * exactly `maxAmountRequired` atomic units of `asset` from the payer's associated token account to
 * `payTo` (decimals read from the mint account, 6 if unreadable; SPL Token or Token-2022 by the mint's
 * owner), carrying `extra.reference` when the requirements have one (a read-only, non-signer account
 * of the instruction, as Solana Pay does: the payment then buys only the request it was offered for),
 * preceded by a compute-unit limit that makes each payment a distinct transaction, signed (by the
 * keypair, or by the signer once, after the funds are checked), sent, and confirmed by polling
 * `getSignatureStatuses` until `confirmed` (no websocket).
 *
 * @returns the base58 transaction signature
 * @throws InsufficientFundsError no token account, too few tokens, or no SOL for the fee (checked up
 *   front and recognised in the RPC's simulation error)
 * @throws RpcUnreachableError the RPC cannot be reached (the error carries the URL)
 * @throws PaymentConfirmationError not confirmed within `confirmTimeoutMs`, or failed on chain
 * @throws X402ClientError any other refusal by the RPC (`send_failed`); `signature_missing` when the
 *   signer answered without its valid signature (nothing was sent)
 * @throws TypeError when `signer` is not a Keypair, a wallet adapter or a kit signer
 */
export async function payForRequirements(input: PayForRequirementsInput): Promise<string> {
  const { requirements } = input;
  const signer = signerOf(input);
  const connection = input.connection ?? connectionFor(requiredUrl(input), input.rpcTimeoutMs ?? 10_000);
  const url = connection.rpcEndpoint;
  const call = <T>(run: () => Promise<T>): Promise<T> =>
    run().catch((error: unknown) => {
      throw isUnreachable(error) ? new RpcUnreachableError(url, error) : error;
    });

  const owner = signer.publicKey;
  const mint = new PublicKey(requirements.asset);
  const payTo = new PublicKey(requirements.payTo);
  const amount = BigInt(requirements.maxAmountRequired);

  const [{ programId, decimals, source }, lamports] = await Promise.all([
    checkTokenFunds({ connection, owner, mint, amountAtomic: amount, call }),
    call(() => connection.getBalance(owner, 'confirmed')),
  ]);
  if (BigInt(lamports) < LAMPORTS_PER_SIGNATURE) {
    throw new InsufficientFundsError(
      'sol_for_fees',
      `Wallet ${owner.toBase58()} has ${lamports} lamports, not enough SOL for the fee`,
      {
        required: LAMPORTS_PER_SIGNATURE,
        available: BigInt(lamports),
      },
    );
  }

  const transfer = createTransferCheckedInstruction(
    source,
    mint,
    payTo,
    owner,
    amount,
    decimals,
    [],
    programId,
  );
  const reference = referenceOf(requirements);
  if (reference) transfer.keys.push({ pubkey: reference, isSigner: false, isWritable: false });
  const { blockhash, lastValidBlockHeight } = await call(() => connection.getLatestBlockhash('confirmed'));
  const tx = new Transaction({ feePayer: owner, blockhash, lastValidBlockHeight }).add(
    // A compute-unit limit drawn at random makes two equal payments within one blockhash window two
    // distinct transactions (an identical one would be refused as already processed).
    ComputeBudgetProgram.setComputeUnitLimit({ units: computeUnitLimit() }),
    transfer,
  );
  const wire = await signer.signWire(tx.serialize({ requireAllSignatures: false, verifySignatures: false }));
  let signature: string;
  try {
    signature = await call(() => connection.sendRawTransaction(wire, { preflightCommitment: 'confirmed' }));
  } catch (error) {
    throw classifySendError(error, owner.toBase58());
  }
  await waitForConfirmation(
    connection,
    signature,
    input.confirmTimeoutMs ?? 30_000,
    input.pollIntervalMs ?? 250,
    call,
  );
  return signature;
}

/** Input of {@link checkTokenFunds}. */
export interface CheckTokenFundsInput {
  /** Connection to the network of the payment. */
  connection: Connection;
  /** The paying wallet (owner of the source associated token account). */
  owner: PublicKey;
  /** The mint of the payment. */
  mint: PublicKey;
  /** The price, in atomic units of `mint`. */
  amountAtomic: bigint;
  /** Wraps each RPC call (maps transport failures to {@link RpcUnreachableError}); default: none. */
  call?: <T>(run: () => Promise<T>) => Promise<T>;
}

/**
 * Checks, before anything is signed, that `owner` can pay `amountAtomic` of `mint`: its associated token
 * account exists and holds at least the price. Reads the mint to know its token program (SPL Token or
 * Token-2022) and decimals (6 when the mint cannot be read). Used by push mode and by the official
 * scheme (where the server pays the SOL fee, so no SOL is needed).
 *
 * @returns the mint's token program, its decimals, and the payer's associated token account
 * @throws InsufficientFundsError `no_token_account` or `token_balance`
 * @throws whatever `call` throws (with the default, the RPC's own errors)
 */
export async function checkTokenFunds(input: CheckTokenFundsInput): Promise<{
  programId: PublicKey;
  decimals: number;
  source: PublicKey;
}> {
  const { connection, owner, mint, amountAtomic: amount } = input;
  const call = input.call ?? (<T>(run: () => Promise<T>) => run());
  const mintInfo = await call(() => connection.getAccountInfo(mint, 'confirmed'));
  const { programId, decimals, source } = tokenSourceOf(mint, mintInfo, owner);
  const sourceInfo = await call(() => connection.getAccountInfo(source, 'confirmed'));
  if (!sourceInfo) {
    throw new InsufficientFundsError(
      'no_token_account',
      `Wallet ${owner.toBase58()} has no token account for mint ${mint.toBase58()}`,
      { required: amount, available: 0n },
    );
  }
  const balance = unpackAccount(source, sourceInfo, programId).amount;
  if (balance < amount) {
    throw new InsufficientFundsError(
      'token_balance',
      `Wallet ${owner.toBase58()} holds ${balance} atomic units of ${mint.toBase58()}, the price is ${amount}`,
      { required: amount, available: balance },
    );
  }
  return { programId, decimals, source };
}

/** The requirements' `extra.reference` as an address, when it is one (anything else is ignored). */
function referenceOf(requirements: PaymentRequirements): PublicKey | undefined {
  const value = requirements.extra?.reference;
  if (typeof value !== 'string') return undefined;
  try {
    return new PublicKey(value);
  } catch {
    return undefined;
  }
}

/** A compute-unit limit for one `transferChecked`: 40 000 to 59 999 (it needs under 10 000). */
export function computeUnitLimit(): number {
  return 40_000 + randomInt(20_000);
}

/**
 * Polls `getSignatureStatuses` until the transaction is `confirmed` or `finalized`.
 *
 * @throws PaymentConfirmationError on failure on chain or when the deadline passes
 */
async function waitForConfirmation(
  connection: Connection,
  signature: string,
  timeoutMs: number,
  pollIntervalMs: number,
  call: <T>(run: () => Promise<T>) => Promise<T>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { value } = await call(() => connection.getSignatureStatuses([signature]));
    const status = value[0];
    if (status?.err) {
      throw new PaymentConfirmationError(
        'transaction_failed',
        signature,
        `Payment transaction ${signature} failed: ${JSON.stringify(status.err)}`,
      );
    }
    if (status && (status.confirmationStatus === 'confirmed' || status.confirmationStatus === 'finalized'))
      return;
    if (Date.now() >= deadline) {
      throw new PaymentConfirmationError(
        'confirmation_timeout',
        signature,
        `Payment transaction ${signature} was not confirmed within ${Math.round(timeoutMs / 1000)} s`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, pollIntervalMs));
  }
}

function requiredUrl(input: PayForRequirementsInput): string {
  if (!input.rpcUrl) throw new X402ClientError('no_rpc', 'payForRequirements needs rpcUrl or connection');
  return input.rpcUrl;
}

/** A web3.js connection whose every HTTP call times out after `timeoutMs`. */
export function connectionFor(rpcUrl: string, timeoutMs = 10_000): Connection {
  return new Connection(rpcUrl, {
    commitment: 'confirmed',
    disableRetryOnRateLimit: true,
    fetch: rpcFetch(timeoutMs),
  });
}

/**
 * `true` for failures to reach the RPC at all: transport errors (refused, DNS, timeout) and HTTP error
 * answers that are not JSON-RPC. Duck-typed, so errors from another realm are recognised too.
 */
export function isUnreachable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth++) {
    const { name, message, code } = current as { name?: unknown; message?: unknown; code?: unknown };
    if (
      name === 'RpcTransportError' ||
      name === 'RpcUnreachableError' ||
      name === 'TimeoutError' ||
      name === 'AbortError'
    )
      return true;
    if (typeof code === 'string' && NETWORK_ERROR_CODES.has(code)) return true;
    // web3.js re-wraps some failures as `new Error("failed to get info about account …: " + error)`.
    if (
      typeof message === 'string' &&
      (/\bfetch failed\b|RpcTransportError/.test(message) || /(?:^|Error: )[45]\d\d \w/.test(message))
    )
      return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

const NETWORK_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
]);

/**
 * The text a refused transaction is recognised by: the error's message, a line break, then the
 * simulation logs a `SendTransactionError` carries (none for other errors); `String(error)` for a
 * thrown non-error.
 */
export function sendErrorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const logs = error instanceof SendTransactionError ? (error.logs ?? []).join('\n') : '';
  return `${error.message}\n${logs}`;
}

function classifySendError(error: unknown, owner: string): unknown {
  if (!(error instanceof Error) || error instanceof RpcUnreachableError) return error;
  const text = sendErrorText(error);
  if (
    /no record of a prior credit|insufficient funds for fee|InsufficientFundsForFee|AccountNotFound/i.test(
      text,
    )
  ) {
    return new InsufficientFundsError(
      'sol_for_fees',
      `Wallet ${owner} has not enough SOL to pay the transaction fee`,
      { cause: error },
    );
  }
  if (/insufficient funds|custom program error: 0x1\b/i.test(text)) {
    return new InsufficientFundsError(
      'token_balance',
      `Wallet ${owner} has not enough tokens for this payment`,
      { cause: error },
    );
  }
  return new X402ClientError(
    'send_failed',
    `The RPC refused the payment transaction: ${error.message.split('\n')[0]}`,
    error,
  );
}
