// Paying 402s within limits (README, "Paying within limits"): the payer's types and its light shell.
// The engine (payment schemes, Solana libraries) is loaded on the first payment, so importing the
// package for its typed clients, waitForJob or verifyWebhook stays fast.
import { readFileSync } from 'node:fs';
import type { ReceiptEvidence, ReceiptStore } from '../receipts';
import type { Engine } from './engine';
import type { receiptChecker } from './evidence';
import { SpendTracker } from './limits';
import type { SpendLimits } from './limits';
import type { Signer } from './signer';

/** A Solana network as the services name it in x402 (`solana` is mainnet). */
export type X402Network = 'solana' | 'solana-devnet';

/**
 * How a 402 is paid: `auto` (default: the official exact scheme when offered, else push), `official`
 * (only the official scheme) or `push` (the agent sends the transfer itself and pays its fee in SOL).
 */
export type PaymentMode = 'auto' | 'push' | 'official';

/** The method and URL a payment or an offer is for. */
export interface PaidRequest {
  /** HTTP method, upper case. */
  method: string;
  /** Full URL, query included. */
  url: string;
}

/** What a server asks for one request: the offer that would be paid. */
export interface PaymentOffer {
  /** `official`: the x402 exact SVM scheme (the server pays the fee); `push`: the agent sends the transfer. */
  scheme: 'official' | 'push';
  /** The network. */
  network: X402Network;
  /** The price in USDC, a decimal string (`"0.05"`). */
  amountUsdc: string;
  /** The price in atomic units (6 decimals), a decimal string (`"50000"`). */
  amountAtomic: string;
  /** The mint paid in (base58). */
  asset: string;
  /** The recipient: the merchant's wallet (official) or token account (push). */
  payTo: string;
  /** The request the offer is for. */
  request: PaidRequest;
}

/** A payment made: what {@link Payer.fetch} records for each paid request. */
export interface PaymentReceipt extends PaymentOffer {
  /** Base58 signature of the paying transaction (settled by the server in the official scheme). */
  signature: string;
  /** The paying wallet (base58), as the server reported it when it did. */
  payer: string;
  /** When the paid answer arrived (ISO 8601). */
  paidAt: string;
  /**
   * The x402 `payment-identifier` id the payment carried (official scheme, when the server declares
   * the extension): the idempotency key its retries shared (README, "Paying within limits").
   */
  paymentId?: string;
  /**
   * The answer's signed receipt (x402 `offer-receipt`), checked against the service's published
   * keys, the body received and this payment (README, "Receipts as evidence"); absent when the
   * answer carries none or `verifyReceipts` is false.
   */
  evidence?: ReceiptEvidence;
}

/** Options of {@link createPayer}. */
export interface PayerOptions {
  /**
   * Who pays (README, "Signers"): a keypair file path, a `Keypair`, a wallet adapter
   * `{ publicKey, signTransaction }`, or a `@solana/kit` signer. Its address is read on the first payment.
   */
  signer: Signer;
  /** JSON-RPC URL per network, e.g. `{ solana: "http://127.0.0.1:8899" }`: offers on other networks are not paid. */
  rpcUrls: Partial<Record<X402Network, string>>;
  /** Spend controls; default: at most 1 USDC per payment, no rolling caps, no allowlists. */
  limits?: SpendLimits;
  /** Which scheme to pay with; default `auto`. */
  mode?: PaymentMode;
  /**
   * Pay nothing: a 402 is answered as it came, after `onOffer` is told what it asks (and after the
   * allowlists and caps are checked, so a refusal still throws).
   */
  dryRun?: boolean;
  /** Told of every offer about to be paid (or, in dry-run mode, not paid). */
  onOffer?: (offer: PaymentOffer) => void;
  /** Told of every payment made. */
  onPayment?: (receipt: PaymentReceipt) => void;
  /** The fetch implementation; default the global fetch. */
  fetch?: typeof fetch;
  /**
   * Check each paid answer's signed receipt (x402 `offer-receipt`) against the service's keys
   * (`/.well-known/jwks.json` of the request's origin, cached 5 minutes) and the body received, into
   * the {@link PaymentReceipt}'s `evidence` (README, "Receipts as evidence"); default true. A receipt
   * that does not check is kept as `invalid` with its `problem`: the paid answer is returned either way.
   */
  verifyReceipts?: boolean;
  /**
   * Where to keep each checked receipt with the body it covers, e.g. `directoryReceiptStore(dir)`.
   * A store that fails leaves the answer as it is and `evidence.stored` false.
   */
  receiptStore?: ReceiptStore;
  /**
   * How many times a paid official-scheme request is sent again, with the same payment and x402
   * `payment-identifier` id, after its answer was lost (a network error) or the server answered
   * `503 settlement_pending`; default 2. Only when the server declares `payment-identifier`, which
   * makes it settle one payment per id whatever the retries (README, "Paying within limits").
   */
  paymentRetries?: number;
}

/** A wallet that pays 402s within its limits. */
export interface Payer {
  /** The paying wallet's address (base58); loads the Solana libraries on first use. */
  address(): Promise<string>;
  /**
   * A `fetch` that pays a 402 once and repeats the request (README, "Paying within limits"). The
   * answer's receipt is {@link receiptOf}(response).
   * @throws SpendLimitExceededError a cap would be passed (nothing signed)
   * @throws PaymentNotAllowedError the host or recipient is not allowed (nothing signed)
   * @throws PaymentRefusedError nothing payable is offered, or the server refused the payment
   * @throws InsufficientFundsError, RpcUnreachableError, PaymentConfirmationError, X402ClientError (from the payment)
   */
  fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>;
  /** What the server would ask for this request (no payment), or `undefined` when it answers without 402. */
  quote(input: string | URL | Request, init?: RequestInit): Promise<PaymentOffer | undefined>;
  /** Atomic USDC units paid (and being paid) within the last `windowMs` milliseconds. */
  spent(windowMs: number): Promise<bigint>;
  /** Every payment made by this payer in this process, oldest first. */
  readonly receipts: readonly PaymentReceipt[];
}

const receipts = new WeakMap<Response, PaymentReceipt>();

/** A request paid through another transport than HTTP (see {@link payThrough}). */
type Through = (
  input: string | URL | Request,
  init: RequestInit | undefined,
  transport: (request: Request) => Promise<Response>,
) => Promise<Response>;
const throughs = new WeakMap<Payer, Through>();

/**
 * Pays `input` as {@link Payer.fetch} does (same engine, spend controls, receipts and hooks), with
 * `transport` carrying the request and its paid repeat: how the MCP helper (src/mcp.ts) pays a tool
 * call. Internal to the package.
 * @throws TypeError when `payer` was not made by {@link createPayer}; else as {@link Payer.fetch}
 */
export function payThrough(
  payer: Payer,
  input: string | URL | Request,
  init: RequestInit | undefined,
  transport: (request: Request) => Promise<Response>,
): Promise<Response> {
  const through = throughs.get(payer);
  if (!through) throw new TypeError('the payer must be made by createPayer');
  return through(input, init, transport);
}

/** The receipt of the payment that bought `response`, when {@link Payer.fetch} paid for it. */
export function receiptOf(response: Response): PaymentReceipt | undefined {
  return receipts.get(response);
}

/**
 * Creates a {@link Payer} (README, "Paying within limits"). A keypair file is read and checked here;
 * the Solana libraries load on the first payment.
 * @throws Error when a keypair file cannot be read or is not 64 bytes; RangeError when a cap is not a USDC amount
 *   (a signer of the wrong shape, or a wallet adapter not connected, is a TypeError of the payer's calls)
 */
export function createPayer(options: PayerOptions): Payer {
  const signer = typeof options.signer === 'string' ? readKeypairFile(options.signer) : options.signer;
  const tracker = new SpendTracker(options.limits);
  const made: PaymentReceipt[] = [];
  let engine: Promise<Engine> | undefined;

  let checker: ReturnType<typeof receiptChecker> | undefined;
  const evidenceOf = async (
    response: Response,
    receipt: Omit<PaymentReceipt, 'paidAt'>,
  ): Promise<ReceiptEvidence | undefined> => {
    if (options.verifyReceipts === false) return undefined;
    try {
      const body = new Uint8Array(await response.clone().arrayBuffer());
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded with the engine, see load()
      checker ??= (require('./evidence') as typeof import('./evidence')).receiptChecker(
        options.fetch ?? fetch,
      );
      const evidence = await checker(response, body, {
        url: receipt.request.url,
        signature: receipt.signature,
        payer: receipt.payer,
        amountAtomic: receipt.amountAtomic,
      });
      if (!evidence || !options.receiptStore) return evidence;
      try {
        await options.receiptStore.save({
          ...evidence,
          request: receipt.request,
          signature: receipt.signature,
          body,
        });
        return { ...evidence, stored: true };
      } catch {
        return { ...evidence, stored: false };
      }
    } catch {
      // A body that cannot be read again is the caller's to read; no evidence is taken of it.
      return undefined;
    }
  };
  const record = async (response: Response, paid: Omit<PaymentReceipt, 'paidAt'>): Promise<Response> => {
    const evidence = await evidenceOf(response, paid);
    const receipt = evidence ? { ...paid, evidence } : paid;
    const full: PaymentReceipt = { ...receipt, paidAt: new Date().toISOString() };
    made.push(full);
    receipts.set(response, full);
    try {
      options.onPayment?.(full);
    } catch {
      // A caller's hook must not turn a paid answer into an error.
    }
    return response;
  };
  const load = (): Promise<Engine> =>
    (engine ??= Promise.resolve()
      .then(() => {
        // Loaded on first use, not at import: the engine brings the Solana libraries (about half a
        // second). A require, which the bundler keeps lazy in both the ESM and CommonJS builds.
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- see above
        const { createEngine } = require('./engine') as typeof import('./engine');
        return createEngine({ ...options, signer }, tracker, record);
      })
      .catch((error: unknown) => {
        // A signer that cannot be resolved yet (a wallet adapter not connected) is tried again next time.
        engine = undefined;
        throw error;
      }));

  const payer: Payer = {
    receipts: made,
    address: async () => (await load()).address,
    spent: (windowMs) => tracker.spent(windowMs),
    quote: async (input, init) => (await load()).quote(input, init),
    fetch: async (input, init) => (await load()).fetch(input, init),
  };
  throughs.set(payer, async (input, init, transport) => (await load()).fetch(input, init, transport));
  return payer;
}

/** The 64 bytes of a Solana CLI keypair file (a JSON array). */
function readKeypairFile(path: string): Uint8Array {
  let bytes: unknown;
  try {
    bytes = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`cannot read the keypair file ${path}`, { cause: error });
  }
  if (
    !Array.isArray(bytes) ||
    bytes.length !== 64 ||
    !bytes.every((b) => Number.isInteger(b) && b >= 0 && b < 256)
  )
    throw new Error(`${path} is not a Solana keypair file (a JSON array of 64 bytes)`);
  return Uint8Array.from(bytes as number[]);
}
