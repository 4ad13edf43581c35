import {
  address,
  createKeyPairSignerFromBytes,
  createSolanaRpc,
  signBytes,
  type KeyPairSigner,
} from '@solana/kit';
import { toFacilitatorSvmSigner } from '@x402/svm';
import { ExactSvmScheme } from '@x402/svm/exact/facilitator';
import { Keypair, PublicKey } from '@solana/web3.js';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import type { X402Network } from '@repo/schemas';
import { bs58, getAssociatedTokenAddressSync } from './deps';
import { TOKEN_2022_PROGRAM_ADDRESS, TOKEN_PROGRAM_ADDRESS, TRANSFER_CHECKED } from './transfers';
import { parseWireTransaction, type WireTransaction } from './wire-transaction';
import { CAIP2_NETWORKS, type PaymentRequirementsV2, type VerifiedPayment } from '@repo/x402-core';
import { SolanaRpcClient } from './rpc-client';
import { SettlementSigner, type ConfirmationOptions } from './settlement-signer';

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
 * `transaction_failed`) and nothing of ours spent but, after a send, the fee.
 *
 * `payment` needs no `getTransaction`: the facilitator verified the transaction's instructions (one
 * `transferChecked` of exactly the required amount of the asset into the merchant's associated token
 * account, nothing else that moves tokens) before this server co-signed it, and saw that very
 * transaction confirmed without error; its `blockTime` is when the confirmation was seen and its
 * `rpcMs` is 0 (docs/payments.md, "Paying with an official x402 client").
 */
export type SettlementOutcome =
  | { ok: true; transaction: string; payer: string; payment?: VerifiedPayment }
  | { ok: false; reason: string; message: string };

/**
 * Why {@link ExactSvmSettler.signatureOf} refused a transaction before any network call, in the
 * official facilitator's (`@x402/svm`) reason codes: `invalid_exact_svm_payload_transaction_could_not_be_decoded`,
 * `invalid_exact_svm_fee_payer_not_managed_by_facilitator` (another wallet pays its fee) and
 * `invalid_exact_svm_payload_signature_invalid` (a signer other than the fee payer did not sign its
 * message: an unsigned transaction naming someone else's wallet proves nothing about who pays).
 */
export class SettlementRefusedError extends Error {
  constructor(
    readonly reason:
      | 'invalid_exact_svm_payload_transaction_could_not_be_decoded'
      | 'invalid_exact_svm_fee_payer_not_managed_by_facilitator'
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
   * `undefined` when the fee payer is its only signer (the facilitator then refuses it).
   */
  payer: string | undefined;
  /**
   * The source token account of its first `transferChecked` (base58), or `undefined` when the
   * instruction is absent or its source comes from an address lookup table.
   */
  source: string | undefined;
}

/**
 * The official exact SVM scheme, server side (docs/payments.md, "Paying for data (x402)": the `PAYMENT-REQUIRED`
 * offer; and "Paying with an official x402 client"): the payer sends a transaction signed by
 * themselves with this server's fee payer as its first signer; the official facilitator
 * (`@x402/svm`'s `ExactSvmScheme`, with `@x402/core`'s checks) verifies it — instructions, amount,
 * destination, compute price, fee payer safety, simulation — co-signs it as fee payer, sends it and
 * waits for confirmation. This class adds what the ledger needs: the signature the transaction will
 * have once co-signed, known before anything is sent, so concurrent copies of one payload are
 * claimed once.
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
  /** The merchant's associated token account for the asset, where the official scheme pays. */
  private readonly payToTokenAccount: string;
  private readonly signer: Promise<KeyPairSigner>;
  private readonly settlementSigner: Promise<SettlementSigner>;
  private readonly facilitator: Promise<ExactSvmScheme>;
  private readonly rpc: ReturnType<typeof createSolanaRpc>;
  private readonly settlementRpc: SolanaRpcClient;

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
    this.payToTokenAccount = associatedTokenAccountOf(config.payTo, config.asset);
    this.signer = createKeyPairSignerFromBytes(config.feePayerSecretKey);
    this.rpc = createSolanaRpc(config.rpcUrl);
    this.settlementRpc = new SolanaRpcClient(config.rpcUrl, {
      timeoutMs: config.rpcTimeoutMs ?? 10_000,
    });
    this.settlementSigner = this.signer.then(
      (signer) =>
        new SettlementSigner(
          toFacilitatorSvmSigner(signer, { [this.caip2]: this.rpc }),
          this.settlementRpc,
          this.caip2,
          config.confirmation,
        ),
    );
    this.facilitator = this.settlementSigner.then(
      (signer) =>
        new ExactSvmScheme(signer.facilitatorSigner, undefined, {
          maxPriorityFeeMicroLamports: config.maxPriorityFeeMicroLamports ?? 50_000,
          maxComputeUnits: config.maxComputeUnits ?? 200_000,
          maxRequiredSignatures: 2,
        }),
    );
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
    const balance = await this.rpc
      .getBalance(address(this.feePayer))
      .send({ abortSignal: AbortSignal.timeout(timeoutMs) });
    return balance.value;
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
   * account of its transfer. No network call.
   * @param transaction base64 wire transaction
   * @throws SettlementRefusedError (see its reasons) when it does not decode, another wallet pays its
   *   fee, or the signature of another signer is missing or does not verify
   */
  async signatureOf(transaction: string): Promise<SettlementKey> {
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
    // No other signer: the facilitator refuses it with its own reason (the fee payer moving funds).
    for (const [i, signer] of signers.entries()) {
      if (i === 0) continue;
      const signature = wire.signatures[i];
      if (!signature || !(await verifiesEd25519(signer, signature, wire.message)))
        throw new SettlementRefusedError(
          'invalid_exact_svm_payload_signature_invalid',
          `The transaction's signature by ${bs58.encode(signer)} is missing or does not verify`,
        );
    }
    const payer = signers[1];
    const signer = await this.signer;
    const cosignature = await signBytes(signer.keyPair.privateKey, wire.message);
    (await this.settlementSigner).rememberCosignature(transaction, cosignature);
    const source = transferSourceOf(wire);
    return {
      signature: bs58.encode(cosignature),
      payer: payer && bs58.encode(payer),
      source: source && bs58.encode(source),
    };
  }

  /**
   * Verifies, co-signs, sends and confirms `transaction` with the official facilitator, its RPC calls on
   * a pooled client and its confirmation polled together with the other settlements in flight.
   * @param transaction base64 wire transaction
   * @param requirements the requirement it must pay (from {@link requirements})
   * @returns the outcome; never throws for a bad transaction or a failed send
   */
  async settle(transaction: string, requirements: PaymentRequirementsV2): Promise<SettlementOutcome> {
    const facilitator = await this.facilitator;
    const signer = await this.settlementSigner;
    const accepted = requirements as PaymentRequirements; // CAIP-2 network, checked by the constructor
    const payload: PaymentPayload = { x402Version: 2, accepted, payload: { transaction } };
    let result;
    try {
      result = await facilitator.settle(payload, accepted);
    } catch (error) {
      return {
        ok: false,
        reason: 'settlement_error',
        message: `Settlement failed: ${error instanceof Error ? error.message : String(error)}`,
      };
    } finally {
      signer.forget(transaction);
    }
    const confirmation = result.transaction ? signer.takeConfirmation(result.transaction) : undefined;
    if (result.success) {
      const payer = result.payer ?? '';
      return {
        ok: true,
        transaction: result.transaction,
        payer,
        // Only for this settler's own offer: the facilitator checked the transfer against `requirements`.
        ...(confirmation && payer && requirements.asset === this.asset && requirements.payTo === this.payTo
          ? {
              payment: {
                signature: result.transaction,
                network: this.network,
                payer,
                amountAtomic: BigInt(requirements.amount),
                asset: this.asset,
                payTo: this.payToTokenAccount,
                slot: confirmation.slot,
                blockTime: confirmation.confirmedAt,
                rpcMs: 0,
              },
            }
          : {}),
      };
    }
    const reason = result.errorReason ?? 'settlement_failed';
    return { ok: false, reason, message: `The payment transaction was refused: ${reason}` };
  }
}

const TOKEN_PROGRAMS = [TOKEN_PROGRAM_ADDRESS, TOKEN_2022_PROGRAM_ADDRESS].map((id) =>
  Buffer.from(bs58.decode(id)),
);

/** The source account of the first SPL Token `transferChecked` of a transaction, if static. */
function transferSourceOf(wire: WireTransaction): Uint8Array | undefined {
  for (const instruction of wire.instructions) {
    const program = wire.staticAccounts[instruction.programIdIndex];
    if (!program || !TOKEN_PROGRAMS.some((id) => id.equals(program))) continue;
    if (instruction.data[0] !== TRANSFER_CHECKED) continue;
    const index = instruction.accountIndexes[0];
    return index === undefined ? undefined : wire.staticAccounts[index];
  }
  return undefined;
}

/** Whether `signature` is `key`'s Ed25519 signature of `message` (false for a key that is not a point). */
async function verifiesEd25519(
  key: Uint8Array,
  signature: Uint8Array,
  message: Uint8Array,
): Promise<boolean> {
  try {
    const publicKey = await crypto.subtle.importKey('raw', key, 'Ed25519', false, ['verify']);
    return await crypto.subtle.verify('Ed25519', publicKey, signature, message);
  } catch {
    return false;
  }
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
