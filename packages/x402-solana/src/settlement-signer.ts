import { TransactionOnchainFailureError, type FacilitatorSvmSigner } from '@x402/svm';
import type { RpcSignatureStatus, SolanaRpcClient } from './rpc-client';

/** The most signatures one `getSignatureStatuses` call may ask about. */
const MAX_STATUSES_PER_CALL = 256;

/** How {@link SignatureStatusPoller} waits for confirmations. */
export interface ConfirmationOptions {
  /**
   * Milliseconds between two status calls while every waiting signature has been asked about at
   * least once; default 250 (the official facilitator's first interval). A signature that starts
   * waiting is asked about at the next call, without waiting for the interval.
   */
  pollIntervalMs?: number;
  /** Milliseconds a signature may wait for its confirmation; default 30 000 (the official facilitator's). */
  timeoutMs?: number;
}

interface Waiter {
  deadline: number;
  polled: boolean;
  listeners: { resolve: (status: RpcSignatureStatus) => void; reject: (error: unknown) => void }[];
}

/**
 * Waits for transactions to be confirmed with one `getSignatureStatuses` call for all the signatures
 * waiting at that moment (docs/payments.md, "Paying with an official x402 client": settling): at most
 * one call is in flight, and the signatures that start waiting meanwhile are asked about by the next.
 * A signature resolves once its status is `confirmed` or `finalized`.
 */
export class SignatureStatusPoller {
  private readonly waiting = new Map<string, Waiter>();
  private readonly intervalMs: number;
  private readonly timeoutMs: number;
  private running = false;
  private wake: (() => void) | undefined;

  /**
   * @param rpc the client whose `getSignatureStatuses` is called
   * @param options the interval and the timeout, in milliseconds
   */
  constructor(
    private readonly rpc: Pick<SolanaRpcClient, 'getSignatureStatuses'>,
    options: ConfirmationOptions = {},
  ) {
    this.intervalMs = options.pollIntervalMs ?? 250;
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  /**
   * Resolves once `signature` is confirmed without error.
   * @param signature base58 transaction signature
   * @returns its status (its slot)
   * @throws TransactionOnchainFailureError (`@x402/svm`) when it landed and failed: terminal
   * @throws Error `Transaction confirmation timeout` after the timeout, and the RPC client's
   *   `RpcTransportError` / `RpcResponseError` when the status call fails: the outcome is unknown
   */
  confirm(signature: string): Promise<RpcSignatureStatus> {
    return new Promise((resolve, reject) => {
      const waiter = this.waiting.get(signature);
      if (waiter) waiter.listeners.push({ resolve, reject });
      else
        this.waiting.set(signature, {
          deadline: Date.now() + this.timeoutMs,
          polled: false,
          listeners: [{ resolve, reject }],
        });
      if (this.running) this.wake?.();
      else void this.run();
    });
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      // The signatures that start waiting in this turn of the event loop share the first call.
      await new Promise<void>((resolve) => setImmediate(resolve));
      while (this.waiting.size > 0) {
        const batch = this.nextBatch();
        let statuses: (RpcSignatureStatus | null)[] | undefined;
        let failure: unknown;
        try {
          statuses = await this.rpc.getSignatureStatuses(batch);
        } catch (error) {
          failure = error ?? new Error('getSignatureStatuses failed');
        }
        const now = Date.now();
        batch.forEach((signature, i) => {
          const waiter = this.waiting.get(signature);
          if (!waiter) return;
          const status = statuses?.[i];
          if (failure !== undefined) this.finish(signature, waiter, { error: failure });
          else if (status?.confirmationStatus === 'confirmed' || status?.confirmationStatus === 'finalized')
            this.finish(
              signature,
              waiter,
              status.err === null || status.err === undefined
                ? { status }
                : {
                    error: new TransactionOnchainFailureError(
                      `Transaction failed onchain: ${JSON.stringify(status.err)}`,
                    ),
                  },
            );
          else if (now >= waiter.deadline)
            this.finish(signature, waiter, { error: new Error('Transaction confirmation timeout') });
          else waiter.polled = true;
        });
        if (this.waiting.size > 0 && [...this.waiting.values()].every((waiter) => waiter.polled))
          await this.sleep(this.intervalMs);
      }
    } finally {
      this.running = false;
    }
  }

  /** The signatures never asked about first, then the others, up to the RPC's limit. */
  private nextBatch(): string[] {
    const fresh: string[] = [];
    const asked: string[] = [];
    for (const [signature, waiter] of this.waiting) (waiter.polled ? asked : fresh).push(signature);
    return [...fresh, ...asked].slice(0, MAX_STATUSES_PER_CALL);
  }

  private finish(
    signature: string,
    waiter: Waiter,
    outcome: { status: RpcSignatureStatus } | { error: unknown },
  ): void {
    this.waiting.delete(signature);
    for (const listener of waiter.listeners)
      if ('status' in outcome) listener.resolve(outcome.status);
      else listener.reject(outcome.error);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }
}

/** What {@link SettlementSigner} learned when it saw one of its settlements confirmed. */
export interface Confirmation {
  /** The slot the transaction was processed in. */
  slot: number;
  /** When this server saw it confirmed (within a slot or two of its block's time). */
  confirmedAt: Date;
}

/** Most remembered co-signatures and confirmations: a bound, they are taken as soon as a settlement ends. */
const REMEMBERED = 4096;

function remember<V>(map: Map<string, V>, key: string, value: V): void {
  if (map.size >= REMEMBERED) {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }
  map.set(key, value);
}

/**
 * The official facilitator's signer (`@x402/svm`'s `FacilitatorSvmSigner`, docs/payments.md,
 * "Paying with an official x402 client") with the calls of a settlement on this project's pooled
 * JSON-RPC client instead of `@solana/kit`'s RPC over the global `fetch`: the simulation, the send, and
 * the confirmation through one {@link SignatureStatusPoller} for all settlements in flight. The
 * co-signature computed for the ledger key (`ExactSvmSettler.signatureOf`, deterministic Ed25519) is
 * written into the transaction instead of signing it again. Every other capability (address lookup
 * tables, smart wallets) is `fallback`'s, the official signer.
 */
export class SettlementSigner {
  /** The signer handed to the official facilitator. */
  readonly facilitatorSigner: FacilitatorSvmSigner;
  private readonly cosignatures = new Map<string, Uint8Array>();
  private readonly confirmations = new Map<string, Confirmation>();
  private readonly poller: SignatureStatusPoller;

  /**
   * @param fallback the official signer (`toFacilitatorSvmSigner`) for this fee payer and network
   * @param rpc the pooled client of this network
   * @param caip2 the CAIP-2 id of the network: the only one this signer settles on
   * @param confirmation the confirmation poll's interval and timeout
   */
  constructor(
    fallback: FacilitatorSvmSigner,
    private readonly rpc: SolanaRpcClient,
    private readonly caip2: string,
    confirmation: ConfirmationOptions = {},
  ) {
    this.poller = new SignatureStatusPoller(rpc, confirmation);
    const [feePayer] = fallback.getAddresses();
    this.facilitatorSigner = {
      ...fallback,
      signTransaction: async (transaction, payer, network) => {
        const signature = this.cosignatures.get(transaction);
        const bytes = signature && payer === feePayer ? Buffer.from(transaction, 'base64') : undefined;
        // One signature-count byte, then the fee payer's slot (signatureOf checked it comes first).
        const count = bytes?.[0];
        if (!bytes || !signature || count === undefined || count === 0 || count >= 0x80 || bytes.length < 65)
          return fallback.signTransaction(transaction, payer, network);
        bytes.set(signature, 1);
        return bytes.toString('base64');
      },
      simulateTransaction: async (transaction, network, options) => {
        this.check(network);
        const err = await this.rpc.simulateTransaction(transaction, {
          ...(options?.sigVerify === undefined ? {} : { sigVerify: options.sigVerify }),
          ...(options?.replaceRecentBlockhash === undefined
            ? {}
            : { replaceRecentBlockhash: options.replaceRecentBlockhash }),
          ...(options?.commitment === undefined ? {} : { commitment: options.commitment }),
        });
        if (err !== null) throw new Error(`Simulation failed: ${JSON.stringify(err)}`);
      },
      sendTransaction: async (transaction, network) => {
        this.check(network);
        return this.rpc.sendTransaction(transaction);
      },
      confirmTransaction: async (signature, network) => {
        this.check(network);
        const status = await this.poller.confirm(signature);
        remember(this.confirmations, signature, { slot: status.slot, confirmedAt: new Date() });
      },
    };
  }

  /**
   * Remembers this server's co-signature of `transaction` until {@link forget}: the facilitator's
   * signing then writes it in place.
   * @param transaction base64 wire transaction whose first signer is this fee payer
   * @param signature the 64-byte Ed25519 signature of its message by the fee payer
   */
  rememberCosignature(transaction: string, signature: Uint8Array): void {
    remember(this.cosignatures, transaction, signature);
  }

  /**
   * Forgets the co-signature of `transaction` (its settlement ended).
   * @param transaction base64 wire transaction
   */
  forget(transaction: string): void {
    this.cosignatures.delete(transaction);
  }

  /**
   * The confirmation this signer saw for `signature`, once (it is forgotten when taken).
   * @param signature base58 transaction signature
   */
  takeConfirmation(signature: string): Confirmation | undefined {
    const confirmation = this.confirmations.get(signature);
    this.confirmations.delete(signature);
    return confirmation;
  }

  private check(network: string): void {
    if (network !== this.caip2) throw new Error(`This signer settles on ${this.caip2}, not ${network}`);
  }
}
