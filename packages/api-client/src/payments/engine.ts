// The payment engine behind a Payer (README, "Paying within limits"), loaded on the first payment:
// the official x402 exact SVM scheme through @x402/fetch's client and @x402/svm when offered, push
// mode otherwise; every cap and allowlist is checked, and the amount reserved, before anything is
// signed. Any signer pays either scheme (resolvePaymentSigner of the internal client); its errors are
// the package's own (the same classes, from @repo/x402-solana/client-core).
import { randomUUID } from 'node:crypto';
import { PublicKey } from '@solana/web3.js';
import { ExponentialBackoff } from 'cockatiel';
import { x402Client, x402HTTPClient, type PaymentRequired, type PaymentRequirements } from '@x402/fetch';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import { Error402, type PaymentRequirements as V1Requirements } from '@repo/schemas';
import { encodePaymentHeader, networkOfCaip2 } from '@repo/x402-core';
import {
  checkTokenFunds,
  connectionFor,
  decodeSettleResponse,
  isUnreachable,
  payForRequirements,
  paymentBuildError,
  resolvePaymentSigner,
} from '@repo/x402-solana/client';
import {
  PaymentNotAllowedError,
  PaymentRefusedError,
  RpcUnreachableError,
  SpendLimitExceededError,
  X402ClientError,
} from './errors';
import { retryAfterOf } from '../jobs';
import type { SpendTracker } from './limits';
import type { PaidRequest, PayerOptions, PaymentOffer, PaymentReceipt, X402Network } from './payer';
import { formatAtomic, USDC_DECIMALS } from './usdc';

/** What a payer does once loaded. */
export interface Engine {
  /** The paying wallet's address (base58). */
  address: string;
  /**
   * See {@link Payer.fetch}. `transport`, when given, carries this request and its paid repeat instead
   * of the payer's fetch (the MCP helper's bridge, src/mcp.ts), under the same controls and records.
   */
  fetch(input: string | URL | Request, init?: RequestInit, transport?: Send): Promise<Response>;
  /** See {@link Payer.quote}. */
  quote(input: string | URL | Request, init?: RequestInit): Promise<PaymentOffer | undefined>;
}

/** How a request is sent: the payer's fetch, or a caller's transport. */
type Send = (request: Request) => Promise<Response>;

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
 * Makes the engine of a payer: `options.signer` is already read (a keypair file's bytes), `tracker`
 * and `record` belong to the payer.
 */
export function createEngine(
  options: Omit<PayerOptions, 'signer'> & { signer: Uint8Array | Exclude<PayerOptions['signer'], string> },
  tracker: SpendTracker,
  record: (response: Response, receipt: Omit<PaymentReceipt, 'paidAt'>) => Promise<Response>,
): Engine {
  const signer = resolvePaymentSigner(options.signer);
  const baseFetch =
    options.fetch ?? ((input: string | URL | Request, init?: RequestInit) => fetch(input, init));
  const mode = options.mode ?? 'auto';
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
    send: Send,
  ): Promise<Response> {
    const { offer, required, requirement, rpcUrl } = chosen;
    const client = new x402Client(
      (_version, accepts) => accepts.find((r) => r === requirement) ?? accepts[0]!,
    )
      .register(requirement.network, await schemeFor(rpcUrl))
      // Our caps (in USDC, with rolling windows) replace the official per-asset defaults, which know
      // only the public USDC mints.
      .setSpendControls(false);
    const http = new x402HTTPClient(client);
    let headers: Record<string, string>;
    let paymentId: string | undefined;
    try {
      const payload = await client.createPaymentPayload(required);
      paymentId = identify(payload.extensions);
      headers = http.encodePaymentSignatureHeader(payload);
    } catch (error) {
      throw paymentBuildError(error, rpcUrl);
    }
    for (const [name, value] of Object.entries(headers)) retry.headers.set(name, value);
    // From here the server holds a signed payment it may settle whatever it answers: it counts
    // against the caps even without a reported settlement (else a server could drain the wallet by
    // never reporting one).
    let settled = '';
    let response: Response;
    try {
      response = await sendPaid(retry, paymentId, send);
      if (response.status === 402) throw await refused(response, offer, 'the server reports nothing settled');
      const header = response.headers.get('payment-response');
      const settlement = header ? decodeSettleResponse(header) : undefined;
      if (!settlement?.success) return response;
      settled = settlement.transaction;
      return await record(response, {
        ...offer,
        signature: settlement.transaction,
        payer: settlement.payer || signer.address,
        ...(paymentId ? { paymentId } : {}),
      });
    } finally {
      await tracker.commit(reservation, settled);
    }
  }

  /**
   * Sends the paid request; with a payment identifier, sends it again (the same payment and id) after
   * a network error or a `503 settlement_pending`, waiting `Retry-After` or a backoff: the server
   * settles one payment per id, so a retry never pays twice. The caller's abort is not retried.
   */
  async function sendPaid(request: Request, paymentId: string | undefined, send: Send): Promise<Response> {
    const retries = paymentId ? Math.max(0, Math.floor(options.paymentRetries ?? 2)) : 0;
    let backoff = new ExponentialBackoff({ initialDelay: 500, maxDelay: MAX_RETRY_DELAY_MS }).next();
    for (let attempt = 0; ; attempt++) {
      let delay = backoff.duration;
      backoff = backoff.next(undefined);
      try {
        const response = await send(request.clone());
        if (attempt >= retries || response.status !== 503 || !settlementPending(response)) return response;
        delay = Math.min(retryAfterOf(response.headers.get('retry-after')) ?? delay, MAX_RETRY_DELAY_MS);
        await response.body?.cancel();
      } catch (error) {
        request.signal.throwIfAborted();
        if (attempt >= retries || error instanceof X402ClientError) throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, delay));
      request.signal.throwIfAborted();
    }
  }

  async function payPush(
    chosen: NonNullable<Offers['push']>,
    retry: Request,
    reservation: number,
    send: Send,
  ): Promise<Response> {
    const { offer, requirements, rpcUrl } = chosen;
    const signature = await payForRequirements({ requirements, signer, rpcUrl });
    // The transfer is made: it counts against the caps whatever the server answers.
    await tracker.commit(reservation, signature);
    retry.headers.set('X-PAYMENT', encodePaymentHeader(requirements.network, signature));
    const response = await send(retry);
    if (response.status === 402)
      throw await refused(response, offer, `the transfer ${signature} was made`, signature);
    return await record(response, { ...offer, signature, payer: signer.address });
  }

  async function probe(input: string | URL | Request, init: RequestInit | undefined, send: Send) {
    const request = new Request(input, init);
    const retry = request.clone();
    const first = await send(request);
    const paid: PaidRequest = { method: request.method, url: request.url };
    if (first.status !== 402) return { first, retry, paid, offers: undefined, text: '' };
    const { offers, text } = await offersOf(first, paid);
    return { first, retry, paid, offers, text };
  }

  return {
    address: signer.address,
    quote: (input, init) => quote(input, init),
    fetch: (input, init, transport) => pay(input, init, transport ?? baseFetch),
  };

  async function quote(input: string | URL | Request, init?: RequestInit): Promise<PaymentOffer | undefined> {
    const { offers } = await probe(input, init, baseFetch);
    if (!offers) return undefined;
    const chosen = offers.official ?? offers.push;
    if (!chosen) throw new PaymentRefusedError(offers.reason);
    return chosen.offer;
  }

  async function pay(
    input: string | URL | Request,
    init: RequestInit | undefined,
    send: Send,
  ): Promise<Response> {
    const { first, retry, offers, text } = await probe(input, init, send);
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
      // The body was read (and decoded) to find the offers: answer it again as text.
      const headers = new Headers(first.headers);
      headers.delete('content-encoding');
      headers.delete('content-length');
      return new Response(text, { status: first.status, statusText: first.statusText, headers });
    }
    try {
      // Funds first, so an empty wallet is a typed InsufficientFundsError, not a failed simulation.
      await checkAsset(chosen.offer, chosen.rpcUrl);
      return offers.official
        ? await payOfficial(offers.official, retry, reservation, send)
        : await payPush(offers.push!, retry, reservation, send);
    } catch (error) {
      tracker.release(reservation);
      throw error;
    }
  }
}

/** The longest wait before a paid request is sent again, in milliseconds. */
const MAX_RETRY_DELAY_MS = 30_000;

/**
 * Gives the payload's x402 `payment-identifier` extension (copied from the 402 by the official client)
 * a new id, as `@x402/extensions`' `appendPaymentIdentifierToExtensions` does (`pay_` and 32 hex
 * digits, within the extension's 16–128 characters of `[A-Za-z0-9_-]`); that package is not a
 * dependency because it brings EVM sign-in libraries a Solana client does not need.
 * @returns the id, or undefined when the server did not declare the extension
 */
function identify(extensions: Record<string, unknown> | undefined): string | undefined {
  const declared = extensions?.['payment-identifier'];
  if (typeof declared !== 'object' || declared === null) return undefined;
  const info = (declared as { info?: unknown }).info;
  if (typeof info !== 'object' || info === null) return undefined;
  const id = `pay_${randomUUID().replace(/-/g, '')}`;
  (info as { id?: string }).id = id;
  return id;
}

/** Whether a 503 is the server still settling this payment (`PAYMENT-RESPONSE` `settlement_pending`). */
function settlementPending(response: Response): boolean {
  const header = response.headers.get('payment-response');
  return header ? decodeSettleResponse(header)?.errorReason === 'settlement_pending' : false;
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
