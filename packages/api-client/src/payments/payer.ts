// Paying 402s within limits (README, "Paying within limits"): the official x402 exact SVM scheme
// through @x402/fetch's client and @x402/svm when offered, push mode otherwise; every cap and
// allowlist is checked, and the amount reserved, before anything is signed.
import { PublicKey } from '@solana/web3.js';
import { x402Client, x402HTTPClient, type PaymentRequired, type PaymentRequirements } from '@x402/fetch';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import { Error402, type PaymentRequirements as V1Requirements } from '@repo/schemas';
import { encodePaymentHeader, networkOfCaip2 } from '@repo/x402-core';
import {
  checkTokenFunds,
  connectionFor,
  decodeSettleResponse,
  formatAtomic,
  isUnreachable,
  USDC_DECIMALS,
  payForRequirements,
  PaymentRefusedError,
  RpcUnreachableError,
  X402ClientError,
} from '@repo/x402-solana/client';
import { PaymentNotAllowedError, SpendLimitExceededError } from './errors';
import { SpendTracker, type SpendLimits } from './limits';
import { resolveSigner, type Signer } from './signer';

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
}

/** Options of {@link createPayer}. */
export interface PayerOptions {
  /** Who pays: a keypair file path, a `Keypair`, or a wallet adapter. */
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
}

/** A wallet that pays 402s within its limits. */
export interface Payer {
  /** The paying wallet's address (base58). */
  readonly address: string;
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

/** The receipt of the payment that bought `response`, when {@link Payer.fetch} paid for it. */
export function receiptOf(response: Response): PaymentReceipt | undefined {
  return receipts.get(response);
}

/** What a 402 offers that this payer can pay, in the order tried. */
interface Offers {
  official?: {
    offer: PaymentOffer;
    required: PaymentRequired;
    requirement: PaymentRequirements;
    rpcUrl: string;
  };
  push?: { offer: PaymentOffer; requirements: V1Requirements; rpcUrl: string };
  /** Why nothing is payable, when nothing is. */
  reason: string;
}

/**
 * Creates a {@link Payer} (README, "Paying within limits").
 * @throws Error when a keypair file cannot be read; RangeError when a cap is not a USDC amount
 */
export function createPayer(options: PayerOptions): Payer {
  const signer = resolveSigner(options.signer);
  const tracker = new SpendTracker(options.limits);
  const baseFetch =
    options.fetch ?? ((input: string | URL | Request, init?: RequestInit) => fetch(input, init));
  const mode = options.mode ?? 'auto';
  const made: PaymentReceipt[] = [];
  const schemes = new Map<string, Promise<ExactSvmScheme>>();
  const limits = options.limits ?? {};

  const schemeFor = (rpcUrl: string): Promise<ExactSvmScheme> => {
    let scheme = schemes.get(rpcUrl);
    if (!scheme) {
      scheme = signer.kitSigner().then((kit) => new ExactSvmScheme(kit, { rpcUrl }));
      schemes.set(rpcUrl, scheme);
    }
    return scheme;
  };

  async function offersOf(first: Response, request: PaidRequest): Promise<{ offers: Offers; text: string }> {
    const text = await first.text();
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = undefined;
    }
    const offers: Offers = {
      reason: `${request.method} ${request.url} answered 402 with no offer this payer can pay`,
    };
    if (mode !== 'push') {
      let required: PaymentRequired | undefined;
      try {
        required = new x402HTTPClient(new x402Client()).getPaymentRequiredResponse(
          (name) => first.headers.get(name),
          body,
        );
      } catch {
        required = undefined;
      }
      for (const requirement of required?.x402Version === 2 ? required.accepts : []) {
        const network = networkOfCaip2(requirement.network);
        const rpcUrl = network && options.rpcUrls[network];
        if (
          requirement.scheme !== 'exact' ||
          !network ||
          !rpcUrl ||
          typeof requirement.extra?.feePayer !== 'string'
        )
          continue;
        if (!/^(0|[1-9][0-9]*)$/.test(requirement.amount)) continue;
        offers.official = {
          offer: offerFrom(
            'official',
            network,
            BigInt(requirement.amount),
            requirement.asset,
            requirement.payTo,
            request,
          ),
          required: required!,
          requirement,
          rpcUrl,
        };
        break;
      }
      if (!offers.official && mode === 'official')
        offers.reason = `${request.method} ${request.url} offers no exact payment of the official scheme on a network with an RPC URL`;
    }
    if (mode !== 'official') {
      const parsed = Error402.safeParse(body);
      const requirements = parsed.success
        ? parsed.data.accepts.find((r) => r.scheme === 'exact' && options.rpcUrls[r.network])
        : undefined;
      if (requirements) {
        offers.push = {
          offer: offerFrom(
            'push',
            requirements.network,
            BigInt(requirements.maxAmountRequired),
            requirements.asset,
            requirements.payTo,
            request,
          ),
          requirements,
          rpcUrl: options.rpcUrls[requirements.network]!,
        };
      }
    }
    return { offers, text };
  }

  /** Allowlists and caps: throws before anything is signed; returns the reservation. */
  async function admit(offer: PaymentOffer, finalUrl: string): Promise<number> {
    if (
      limits.allowHosts &&
      ![offer.request.url, finalUrl].every((u) => limits.allowHosts!.includes(new URL(u).host))
    )
      throw new PaymentNotAllowedError(offer, 'host');
    if (limits.allowPayTo && !limits.allowPayTo.includes(offer.payTo))
      throw new PaymentNotAllowedError(offer, 'pay_to');
    const reservation = await tracker.reserve(BigInt(offer.amountAtomic));
    if ('breach' in reservation) throw new SpendLimitExceededError(offer, reservation.breach);
    return reservation.id;
  }

  /**
   * The wallet can pay `offer` and its asset is one the caps can count: a 6-decimal mint (USDC's),
   * listed in `allowAssets` when that is set. Checked before anything is signed.
   */
  async function checkAsset(offer: PaymentOffer, rpcUrl: string): Promise<void> {
    if (limits.allowAssets && !limits.allowAssets.includes(offer.asset))
      throw new PaymentNotAllowedError(offer, 'asset');
    const { decimals } = await checkTokenFunds({
      connection: connectionFor(rpcUrl),
      owner: new PublicKey(signer.address),
      mint: new PublicKey(offer.asset),
      amountAtomic: BigInt(offer.amountAtomic),
      call: (run) =>
        run().catch((error: unknown) => {
          throw isUnreachable(error) ? new RpcUnreachableError(rpcUrl, error) : error;
        }),
    });
    if (decimals !== USDC_DECIMALS) throw new PaymentNotAllowedError(offer, 'asset');
  }

  async function payOfficial(
    chosen: NonNullable<Offers['official']>,
    retry: Request,
    reservation: number,
  ): Promise<Response> {
    const { offer, required, requirement, rpcUrl } = chosen;
    // Funds first, so an empty wallet is a typed InsufficientFundsError, not a failed simulation.
    await checkAsset(offer, rpcUrl);
    const client = new x402Client(
      (_version, accepts) => accepts.find((r) => r === requirement) ?? accepts[0]!,
    )
      .register(requirement.network, await schemeFor(rpcUrl))
      // Our caps (in USDC, with rolling windows) replace the official per-asset defaults, which know
      // only the public USDC mints.
      .setSpendControls(false);
    const http = new x402HTTPClient(client);
    let headers: Record<string, string>;
    try {
      headers = http.encodePaymentSignatureHeader(await client.createPaymentPayload(required));
    } catch (error) {
      if (isUnreachable(error)) throw new RpcUnreachableError(rpcUrl, error);
      throw new X402ClientError(
        'payment_build_failed',
        `The official x402 client could not build the payment: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`,
        error,
      );
    }
    for (const [name, value] of Object.entries(headers)) retry.headers.set(name, value);
    // From here the server holds a signed payment it may settle whatever it answers: it counts
    // against the caps even without a reported settlement (else a server could drain the wallet by
    // never reporting one).
    let settled = '';
    let response: Response;
    try {
      response = await baseFetch(retry);
      if (response.status === 402) throw await refused(response, offer, 'the server reports nothing settled');
      const header = response.headers.get('payment-response');
      const settlement = header ? decodeSettleResponse(header) : undefined;
      if (!settlement?.success) return response;
      settled = settlement.transaction;
      return record(response, {
        ...offer,
        signature: settlement.transaction,
        payer: settlement.payer || signer.address,
      });
    } finally {
      await tracker.commit(reservation, settled);
    }
  }

  async function payPush(
    chosen: NonNullable<Offers['push']>,
    retry: Request,
    reservation: number,
  ): Promise<Response> {
    const { offer, requirements, rpcUrl } = chosen;
    if (!signer.keypair)
      throw new PaymentRefusedError(
        `${offer.request.url} offers push mode only, which needs a keypair signer (a wallet adapter pays offers of the official scheme)`,
      );
    await checkAsset(offer, rpcUrl);
    const signature = await payForRequirements({ requirements, keypair: signer.keypair, rpcUrl });
    // The transfer is made: it counts against the caps whatever the server answers.
    await tracker.commit(reservation, signature);
    retry.headers.set('X-PAYMENT', encodePaymentHeader(requirements.network, signature));
    const response = await baseFetch(retry);
    if (response.status === 402)
      throw await refused(response, offer, `the transfer ${signature} was made`, signature);
    return record(response, { ...offer, signature, payer: signer.address });
  }

  function record(response: Response, receipt: Omit<PaymentReceipt, 'paidAt'>): Response {
    const full: PaymentReceipt = { ...receipt, paidAt: new Date().toISOString() };
    made.push(full);
    receipts.set(response, full);
    try {
      options.onPayment?.(full);
    } catch {
      // A caller's hook must not turn a paid answer into an error.
    }
    return response;
  }

  async function probe(input: string | URL | Request, init?: RequestInit) {
    const request = new Request(input, init);
    const retry = request.clone();
    const first = await baseFetch(request);
    const paid: PaidRequest = { method: request.method, url: request.url };
    if (first.status !== 402) return { first, retry, paid, offers: undefined, text: '' };
    const { offers, text } = await offersOf(first, paid);
    return { first, retry, paid, offers, text };
  }

  return {
    address: signer.address,
    receipts: made,
    spent: (windowMs) => tracker.spent(windowMs),
    async quote(input, init) {
      const { offers } = await probe(input, init);
      if (!offers) return undefined;
      const chosen = offers.official ?? offers.push;
      if (!chosen) throw new PaymentRefusedError(offers.reason);
      return chosen.offer;
    },
    async fetch(input, init) {
      const { first, retry, offers, text } = await probe(input, init);
      if (!offers) return first;
      const chosen = offers.official ?? offers.push;
      if (!chosen) throw new PaymentRefusedError(offers.reason);
      // A redirect answered the 402 from another host: both must be allowed.
      const reservation = await admit(chosen.offer, first.url || chosen.offer.request.url);
      try {
        options.onOffer?.(chosen.offer);
      } catch {
        // A caller's hook must not decide the payment.
      }
      if (options.dryRun) {
        tracker.release(reservation);
        return new Response(text, {
          status: first.status,
          statusText: first.statusText,
          headers: first.headers,
        });
      }
      try {
        return offers.official
          ? await payOfficial(offers.official, retry, reservation)
          : await payPush(offers.push!, retry, reservation);
      } catch (error) {
        tracker.release(reservation);
        throw error;
      }
    },
  };
}

function offerFrom(
  scheme: PaymentOffer['scheme'],
  network: X402Network,
  amount: bigint,
  asset: string,
  payTo: string,
  request: PaidRequest,
): PaymentOffer {
  return {
    scheme,
    network,
    amountUsdc: formatAtomic(amount),
    amountAtomic: amount.toString(),
    asset,
    payTo,
    request,
  };
}

async function refused(
  response: Response,
  offer: PaymentOffer,
  what: string,
  signature?: string,
): Promise<PaymentRefusedError> {
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    body = undefined;
  }
  const parsed = Error402.safeParse(body);
  const reason = parsed.success ? parsed.data.details?.reason : undefined;
  const message = parsed.success ? parsed.data.error : `HTTP ${response.status}`;
  return new PaymentRefusedError(
    `${offer.request.url} refused the payment (${what}): ${message}${typeof reason === 'string' && !message.includes(reason) ? ` (${reason})` : ''}`,
    undefined,
    {
      status: response.status,
      ...(typeof reason === 'string' ? { reason } : {}),
      ...(signature ? { signature } : {}),
    },
  );
}
