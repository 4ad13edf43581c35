import { sign, type KeyObject } from 'node:crypto';
import { Keypair, PublicKey } from '@solana/web3.js';
import { TransactionOnchainFailureError } from '@x402/svm';
import type { X402Network } from '@repo/schemas';
import { bs58, getAssociatedTokenAddressSync, TOKEN_2022_PROGRAM_ID, TOKEN_PROGRAM_ID } from './deps';
import { parseWireTransaction, type WireTransaction } from './wire-transaction';
import { CAIP2_NETWORKS, type PaymentRequirementsV2, type VerifiedPayment } from '@repo/x402-core';
import { RpcResponseError, SolanaRpcClient } from './rpc-client';
import { SignatureStatusPoller, type ConfirmationOptions } from './settlement-signer';
import { checkExactSvmTransaction, transferSourceOf, type ExactSvmExpectation } from './exact-svm-checks';
import { resolveLookupTables } from './lookup-tables';
import { ed25519PrivateKey, verifiesEd25519 } from './ed25519';

/** Where and how an {@link ExactSvmSettler} settles, per network. */
export interface ExactSvmSettlerConfig {
  /** The network, as this project names it. */
  network: X402Network;
  /** JSON-RPC URL of that network. */
  rpcUrl: string;
  /** The USDC mint (base58). */
  asset: string;
  /** The merchant's wallet (base58): the official scheme pays into its associated token account. */
  payTo: string;
  /** The fee payer's 64-byte secret key (a Solana keypair file's bytes): SOL only, never USDC. */
  feePayerSecretKey: Uint8Array;
  /**
   * Highest compute unit price a payer may set, in micro-lamports per compute unit (the fee payer
   * pays it); default 50,000 (at most 0.000001 SOL for the client's 20,000 units).
   */
  maxPriorityFeeMicroLamports?: number;
  /** Highest compute unit limit a payer may set; default 200,000. */
  maxComputeUnits?: number;
  /** The settlement's confirmation poll: interval and timeout in milliseconds (defaults 250 and 30 000). */
  confirmation?: ConfirmationOptions;
  /** Milliseconds within which each settlement RPC call must answer; default 10 000. */
  rpcTimeoutMs?: number;
}

/**
 * How a settlement ended: sent and confirmed (`transaction` is its signature, `payer` the token
 * authority, and `payment` what the ledger records of it, when this server saw the confirmation), or
 * refused with the official facilitator's reason (e.g. `invalid_exact_svm_payload_…`,
 * `invalid_exact_svm_transaction_simulation_failed`, `invalid_exact_svm_transaction_failed`,
 * `invalid_exact_svm_smart_wallet_alt_resolution_failed`, `settlement_pending`) and nothing of ours
 * spent but, after a send, the fee.
 *
 * `payment` needs no `getTransaction`: the transaction's instructions were checked (one
 * `transferChecked` of exactly the required amount of the asset into the merchant's associated token
 * account, nothing else that moves tokens) before this server co-signed it, and that very
 * transaction was seen confirmed without error; its `blockTime` is when the confirmation was seen and
 * its `rpcMs` is 0 (docs/payments.md, "Paying with an official x402 client").
 */
export type SettlementOutcome =
  | { ok: true; transaction: string; payer: string; payment?: VerifiedPayment }
  | { ok: false; reason: string; message: string };

/**
 * Why {@link ExactSvmSettler.signatureOf} refused a transaction before any network call, in the
 * official facilitator's (`@x402/svm`) reason codes: `invalid_exact_svm_payload_transaction_could_not_be_decoded`,
 * `invalid_exact_svm_fee_payer_not_managed_by_facilitator` (another wallet pays its fee),
 * `invalid_exact_svm_payload_excessive_signers` (more signers than the scheme's two) and
 * `invalid_exact_svm_payload_signature_invalid` (a signer other than the fee payer did not sign its
 * message: an unsigned transaction naming someone else's wallet proves nothing about who pays).
 */
export class SettlementRefusedError extends Error {
  constructor(
    readonly reason:
      | 'invalid_exact_svm_payload_transaction_could_not_be_decoded'
      | 'invalid_exact_svm_fee_payer_not_managed_by_facilitator'
      | 'invalid_exact_svm_payload_excessive_signers'
      | 'invalid_exact_svm_payload_signature_invalid',
    message: string,
  ) {
    super(message);
    this.name = 'SettlementRefusedError';
  }
}

/** What {@link ExactSvmSettler.signatureOf} learns of a transaction without any network call. */
export interface SettlementKey {
  /** The base58 signature the transaction will have once this server co-signs it (its ledger key). */
  signature: string;
  /**
   * The wallet paying with it: the signer other than the fee payer, whose signature was checked;
   * `undefined` when the fee payer is its only signer (the settlement then refuses it).
   */
  payer: string | undefined;
  /**
   * The source token account of its first `transferChecked` (base58), or `undefined` when the
   * instruction is absent or its source comes from an address lookup table.
   */
  source: string | undefined;
}

/** A transaction read, its other signers' signatures checked and co-signed: what settling it needs. */
interface Prepared {
  wire: WireTransaction;
  /** The fee payer's signature of its message. */
  cosignature: Buffer;
  key: SettlementKey;
}

/** Most transactions prepared by `signatureOf` and not settled yet that a settler remembers. */
const REMEMBERED = 4096;

/**
 * Milliseconds a settled (or possibly sent) transaction stays known to its settler: about twice a
 * blockhash's life, after which it cannot land (the scheme's "Duplicate Settlement Mitigation").
 */
const SETTLED_TTL_MS = 120_000;

/** The JSON-RPC error codes of a send refused by the node's preflight: nothing was sent. */
const PREFLIGHT_FAILURE = -32002;
const SIGNATURE_VERIFICATION_FAILURE = -32003;
/**
 * The JSON-RPC "invalid params" code, which a node's `sendTransaction` answers for a transaction it
 * cannot sanitise ("invalid transaction: ...", such as a lookup table it cannot load): nothing was sent.
 */
const INVALID_TRANSACTION = -32602;

/**
 * The official exact SVM scheme, server side (docs/payments.md, "Paying for data (x402)": the
 * `PAYMENT-REQUIRED` offer; and "Paying with an official x402 client"): the payer sends a transaction
 * signed by themselves with this server's fee payer as its first signer; this settler checks it
 * against every verification rule of the scheme (its other signers' signatures in
 * {@link signatureOf}; instructions, amount, destination, compute budget and fee payer safety in
 * `checkExactSvmTransaction`, with the official facilitator's reason codes), co-signs it as fee
 * payer, sends it with the node's preflight simulation (a transaction that would fail is refused,
 * and nothing is sent) and waits for its confirmation, polled together with the other settlements
 * in flight. A transaction with address table lookups (at most four tables) has its tables fetched in
 * one `getMultipleAccounts` call in {@link settle}, after the caller claimed the payment, and every
 * check reads the accounts they load (`resolveLookupTables`); one without makes no such call. The wire transaction is read once, and its co-signature, computed for the ledger key
 * before anything is sent (so concurrent copies of one payload are claimed once), is the one sent.
 */
export class ExactSvmSettler {
  /** The network, as this project names it. */
  readonly network: X402Network;
  /** The CAIP-2 id of the network. */
  readonly caip2: string;
  /** The USDC mint. */
  readonly asset: string;
  /** The merchant wallet the offer names as `payTo`. */
  readonly payTo: string;
  /** The fee payer's address, advertised as `extra.feePayer`. */
  readonly feePayer: string;
  private readonly feePayerBytes: Buffer;
  private readonly privateKey: KeyObject;
  /** The merchant's associated token account for the asset, where the official scheme pays. */
  private readonly payToTokenAccount: string;
  /** What the settler's own offer expects of a transaction, but its amount and memo. */
  private readonly expectation: Omit<ExactSvmExpectation, 'amount' | 'memo'>;
  private readonly settlementRpc: SolanaRpcClient;
  private readonly poller: SignatureStatusPoller;
  private readonly prepared = new Map<string, Prepared>();
  /**
   * Ledger key → when its settlement started: a transaction being settled, or sent, is not sent again
   * while it could land (the scheme's "Duplicate Settlement Mitigation"; the ledger's claim already
   * keeps concurrent copies of one payment from settling twice across replicas).
   */
  private readonly settled = new Map<string, number>();

  /**
   * @param config network, RPC URL, mint, merchant wallet, fee payer key and fee caps
   * @throws Error when the secret key is not 64 bytes of a valid keypair
   */
  constructor(config: ExactSvmSettlerConfig) {
    this.network = config.network;
    this.caip2 = CAIP2_NETWORKS[config.network];
    this.asset = config.asset;
    this.payTo = config.payTo;
    const feePayer = Keypair.fromSecretKey(config.feePayerSecretKey).publicKey;
    this.feePayer = feePayer.toBase58();
    this.feePayerBytes = feePayer.toBuffer();
    this.privateKey = ed25519PrivateKey(config.feePayerSecretKey.subarray(0, 32));
    this.payToTokenAccount = associatedTokenAccountOf(config.payTo, config.asset);
    this.expectation = {
      feePayer: this.feePayerBytes,
      mint: new PublicKey(config.asset).toBuffer(),
      destinations: destinationsOf(config.payTo, config.asset),
      maxComputeUnits: config.maxComputeUnits ?? 200_000,
      maxPriorityFeeMicroLamports: BigInt(config.maxPriorityFeeMicroLamports ?? 50_000),
      maxRequiredSignatures: 2,
    };
    this.settlementRpc = new SolanaRpcClient(config.rpcUrl, {
      timeoutMs: config.rpcTimeoutMs ?? 10_000,
    });
    this.poller = new SignatureStatusPoller(this.settlementRpc, config.confirmation);
  }

  /** Closes the settlement RPC's connections (for a graceful shutdown); `settle` must not be called after. */
  close(): Promise<void> {
    return this.settlementRpc.close();
  }

  /**
   * The fee payer's SOL balance, in lamports (for the low-balance metric and warning).
   * @param timeoutMs how long to wait for the RPC, in milliseconds (default 5000)
   * @throws whatever the RPC call throws, and an abort error after `timeoutMs`
   */
  async feePayerLamports(timeoutMs = 5000): Promise<bigint> {
    const signal = AbortSignal.timeout(timeoutMs);
    return await new Promise<bigint>((resolve, reject) => {
      signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
      this.settlementRpc.getBalance(this.feePayer).then(resolve, reject);
    });
  }

  /**
   * The v2 requirement of a price on this network (`extra.feePayer` set).
   * @param amountAtomic price in atomic USDC units
   * @param maxTimeoutSeconds seconds the payer has
   */
  requirements(amountAtomic: bigint, maxTimeoutSeconds: number): PaymentRequirementsV2 {
    return {
      scheme: 'exact',
      network: this.caip2,
      amount: amountAtomic.toString(),
      asset: this.asset,
      payTo: this.payTo,
      maxTimeoutSeconds,
      extra: { feePayer: this.feePayer },
    };
  }

  /**
   * The signature `transaction` will have once this server co-signs it (its first signer must be the
   * fee payer, and Ed25519 signatures are deterministic), the wallet paying with it (the one other
   * signer, whose Ed25519 signature over the message is checked here, so that nobody can act in
   * another wallet's name: docs/payments.md, "Paying with an official x402 client") and the source token
   * account of its transfer. No network call; what it read and signed is kept for {@link settle}.
   * @param transaction base64 wire transaction
   * @throws SettlementRefusedError (see its reasons) when it does not decode, another wallet pays its
   *   fee, it has more than two signers, or the signature of another signer is missing or does not verify
   */
  async signatureOf(transaction: string): Promise<SettlementKey> {
    const prepared = this.prepare(transaction);
    remember(this.prepared, transaction, prepared);
    return prepared.key;
  }

  private prepare(transaction: string): Prepared {
    let wire: WireTransaction;
    try {
      wire = parseWireTransaction(Buffer.from(transaction, 'base64'));
    } catch {
      throw new SettlementRefusedError(
        'invalid_exact_svm_payload_transaction_could_not_be_decoded',
        'payload.transaction is not a Solana transaction',
      );
    }
    const signers = wire.staticAccounts.slice(0, wire.signatures.length);
    const firstSigner = signers[0];
    if (!firstSigner || !this.feePayerBytes.equals(firstSigner)) {
      throw new SettlementRefusedError(
        'invalid_exact_svm_fee_payer_not_managed_by_facilitator',
        `The transaction's fee payer is ${firstSigner ? bs58.encode(firstSigner) : 'missing'}; this server pays fees as ${this.feePayer}`,
      );
    }
    // Before any signature is checked: each costs an Ed25519 verification.
    if (signers.length > this.expectation.maxRequiredSignatures)
      throw new SettlementRefusedError(
        'invalid_exact_svm_payload_excessive_signers',
        `The transaction requires ${signers.length} signatures; the scheme allows ${this.expectation.maxRequiredSignatures}`,
      );
    // No other signer: the settlement refuses it with its own reason (the fee payer moving funds).
    for (const [i, signer] of signers.entries()) {
      if (i === 0) continue;
      const signature = wire.signatures[i];
      if (!signature || !verifiesEd25519(signer, signature, wire.message))
        throw new SettlementRefusedError(
          'invalid_exact_svm_payload_signature_invalid',
          `The transaction's signature by ${bs58.encode(signer)} is missing or does not verify`,
        );
    }
    const payer = signers[1];
    const cosignature = sign(null, wire.message, this.privateKey);
    const source = transferSourceOf(wire);
    return {
      wire,
      cosignature,
      key: {
        signature: bs58.encode(cosignature),
        payer: payer && bs58.encode(payer),
        source: source && bs58.encode(source),
      },
    };
  }

  /**
   * Checks `transaction` against every verification rule of the scheme and `requirements` (its address
   * lookup tables resolved first, when it has any: one `getMultipleAccounts` call, so call this only
   * once the payment is claimed), co-signs, sends (with the node's preflight simulation) and confirms
   * it, its RPC calls on a pooled client and its confirmation polled together with the other
   * settlements in flight.
   * @param transaction base64 wire transaction
   * @param requirements the requirement it must pay (from {@link requirements}, possibly with
   *   `extra.memo`)
   * @returns the outcome; never throws for a bad transaction or a failed send
   */
  async settle(transaction: string, requirements: PaymentRequirementsV2): Promise<SettlementOutcome> {
    const refuse = (reason: string, message = `The payment transaction was refused: ${reason}`) =>
      ({ ok: false, reason, message }) as const;
    if (requirements.scheme !== 'exact') return refuse('invalid_exact_svm_unsupported_scheme');
    if (requirements.network !== this.caip2) return refuse('invalid_exact_svm_network_mismatch');
    if (requirements.extra?.feePayer !== this.feePayer)
      return refuse('invalid_exact_svm_fee_payer_not_managed_by_facilitator');
    let prepared = this.prepared.get(transaction);
    this.prepared.delete(transaction);
    try {
      prepared ??= this.prepare(transaction);
    } catch (error) {
      if (error instanceof SettlementRefusedError) return refuse(error.reason, error.message);
      throw error;
    }
    const expectation = this.expectationOf(requirements);
    if (!expectation) return refuse('invalid_exact_svm_payload_recipient_mismatch');
    // After the claim (the caller holds it): the one network call before the send, only with lookups.
    let loaded: Uint8Array[] | undefined;
    if (prepared.wire.addressTableLookups.length > 0) {
      const resolution = await resolveLookupTables(prepared.wire, this.settlementRpc);
      if (!resolution.ok)
        return refuse(
          resolution.reason,
          `The payment transaction was refused: ${resolution.reason} (${resolution.message})`,
        );
      loaded = resolution.loaded;
    }
    const check = checkExactSvmTransaction(prepared.wire, expectation, loaded);
    if (!check.ok) return refuse(check.reason);
    const signature = prepared.key.signature;
    if (this.isSettled(signature)) return refuse('duplicate_settlement');
    this.markSettled(signature);
    const outcome = await this.send(transaction, prepared, check.payer, requirements);
    // Refused before it could land (its preflight, or an on-chain failure): it may be tried again.
    if (!outcome.ok && outcome.reason !== 'settlement_pending') this.settled.delete(signature);
    return outcome;
  }

  private async send(
    transaction: string,
    prepared: Prepared,
    payer: string,
    requirements: PaymentRequirementsV2,
  ): Promise<SettlementOutcome> {
    const signature = prepared.key.signature;
    const refuse = (reason: string, detail: string) =>
      ({ ok: false, reason, message: `The payment transaction was refused: ${reason} (${detail})` }) as const;
    // One signature-count byte (at most two signers), then the fee payer's slot.
    const bytes = Buffer.from(transaction, 'base64');
    bytes.set(prepared.cosignature, 1);
    try {
      await this.settlementRpc.sendTransaction(bytes.toString('base64'));
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      // The node's preflight refused it, or its sanitisation did (e.g. a lookup table deactivated
      // since it was resolved): nothing was sent.
      if (
        error instanceof RpcResponseError &&
        error.kind === 'rpc' &&
        (error.code === PREFLIGHT_FAILURE || error.code === INVALID_TRANSACTION)
      )
        return refuse('invalid_exact_svm_transaction_simulation_failed', detail);
      if (
        error instanceof RpcResponseError &&
        error.kind === 'rpc' &&
        error.code === SIGNATURE_VERIFICATION_FAILURE
      )
        return refuse('invalid_exact_svm_payload_signature_invalid', detail);
      // Possibly sent (a timeout, a connection lost after the request): the caller looks on chain.
      return refuse('invalid_exact_svm_transaction_failed', detail);
    }
    let slot: number;
    try {
      slot = (await this.poller.confirm(signature)).slot;
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      if (error instanceof TransactionOnchainFailureError)
        return refuse('invalid_exact_svm_transaction_failed', detail);
      return refuse('settlement_pending', detail);
    }
    return {
      ok: true,
      transaction: signature,
      payer,
      // Only for this settler's own offer: the checks compared the transfer with `requirements`.
      ...(requirements.asset === this.asset && requirements.payTo === this.payTo
        ? {
            payment: {
              signature,
              network: this.network,
              payer,
              amountAtomic: BigInt(requirements.amount),
              asset: this.asset,
              payTo: this.payToTokenAccount,
              slot,
              blockTime: new Date(),
              rpcMs: 0,
            },
          }
        : {}),
    };
  }

  /** What `requirements` expect of a transaction; `undefined` when its `payTo` or `asset` is no address. */
  private expectationOf(requirements: PaymentRequirementsV2): ExactSvmExpectation | undefined {
    const memo = requirements.extra?.memo;
    let amount: bigint;
    try {
      amount = BigInt(requirements.amount);
      const own = requirements.asset === this.asset && requirements.payTo === this.payTo;
      return {
        ...this.expectation,
        ...(own
          ? {}
          : {
              mint: new PublicKey(requirements.asset).toBuffer(),
              destinations: destinationsOf(requirements.payTo, requirements.asset),
            }),
        amount,
        ...(typeof memo === 'string' ? { memo } : {}),
      };
    } catch {
      return undefined;
    }
  }

  private markSettled(signature: string): void {
    const now = Date.now();
    // Oldest first: drop the expired ones.
    for (const [key, at] of this.settled) {
      if (at > now - SETTLED_TTL_MS) break;
      this.settled.delete(key);
    }
    this.settled.set(signature, now);
  }

  private isSettled(signature: string): boolean {
    const at = this.settled.get(signature);
    return at !== undefined && at > Date.now() - SETTLED_TTL_MS;
  }
}

function remember<V>(map: Map<string, V>, key: string, value: V): void {
  if (map.size >= REMEMBERED) {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }
  map.set(key, value);
}

/** The associated token accounts of `wallet` for `mint` under SPL Token and Token-2022 (32 bytes each). */
function destinationsOf(wallet: string, mint: string): ExactSvmExpectation['destinations'] {
  const owner = new PublicKey(wallet);
  const asset = new PublicKey(mint);
  return {
    token: getAssociatedTokenAddressSync(asset, owner, true, TOKEN_PROGRAM_ID).toBuffer(),
    token2022: getAssociatedTokenAddressSync(asset, owner, true, TOKEN_2022_PROGRAM_ID).toBuffer(),
  };
}

/**
 * Reads a Solana keypair file's contents (a JSON array of 64 bytes, as `solana-keygen` writes).
 * @throws Error when it is not such an array
 */
export function parseKeypairJson(json: string): Uint8Array {
  const bytes: unknown = JSON.parse(json);
  if (
    !Array.isArray(bytes) ||
    bytes.length !== 64 ||
    !bytes.every((b) => Number.isInteger(b) && b >= 0 && b < 256)
  )
    throw new Error('a keypair file must hold a JSON array of 64 bytes');
  return Uint8Array.from(bytes as number[]);
}

/**
 * The associated token account of `wallet` for `mint` under the classic SPL Token program (where the
 * official exact scheme sends a payment to `payTo = wallet`), base58.
 * @throws Error when an address is not base58 of 32 bytes
 */
export function associatedTokenAccountOf(wallet: string, mint: string): string {
  return getAssociatedTokenAddressSync(new PublicKey(mint), new PublicKey(wallet), true).toBase58();
}
