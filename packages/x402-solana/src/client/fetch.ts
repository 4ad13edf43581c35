import { Error402, type PaymentRequirements, type PaymentResponse, type X402Network } from '@repo/schemas';
import {
  decodePaymentResponse,
  encodePaymentHeader,
  PAYMENT_RESPONSE_HEADER,
  PAYMENT_REQUIRED_HEADER,
  PAYMENT_SIGNATURE_HEADER,
  PAYMENT_V2_RESPONSE_HEADER,
  type PaymentRequirementsV2,
  type SettleResponseV2,
} from '@repo/x402-core';
import { DEFAULT_MAX_AMOUNT_ATOMIC, formatAtomic } from '../client-core/amounts';
import { readBody } from '../client-core/body';
import { PaymentRefusedError, SpendCapExceededError } from '../client-core/errors';
import {
  createOfficialPayment,
  decodePaymentRequired,
  decodeSettleResponse,
  officialOfferOf,
  type PaymentRequiredHeader,
} from './official';
import { payForRequirements } from './pay';
import { signerOf, type PayingWallet, type PaymentSigner } from './signer';

/**
 * How {@link fetchWithPayment} pays a 402:
 * - `auto` (default): the official x402 exact SVM scheme when the 402 carries a `PAYMENT-REQUIRED`
 *   offer it can pay (the server pays the network fee), else push mode;
 * - `push`: push mode only (the agent sends the `transferChecked` itself and pays the fee in SOL);
 * - `official`: the official scheme only; a 402 without a payable `PAYMENT-REQUIRED` offer is refused.
 */
export type PaymentMode = 'auto' | 'push' | 'official';

/**
 * Options of {@link fetchWithPayment}: the paying wallet, `keypair` (a web3.js `Keypair`) or `signer`
 * (a Keypair, a wallet adapter `{ publicKey, signTransaction }` or a `@solana/kit` signer; README
 * "The client", "Signers"), and {@link FetchWithPaymentSettings}.
 */
export type FetchWithPaymentOptions = FetchWithPaymentSettings & PayingWallet;

/** How {@link fetchWithPayment} requests and pays, besides the wallet. */
export interface FetchWithPaymentSettings {
  /** JSON-RPC URL per network, e.g. `{ solana: "http://127.0.0.1:8899", "solana-devnet": "http://127.0.0.1:8899/devnet" }`. */
  rpcUrls: Partial<Record<X402Network, string>>;
  /** The request (method, headers, body). A body must be re-sendable (string, Buffer...): it is sent twice. */
  init?: RequestInit;
  /** The fetch implementation; default the global (undici) fetch. */
  fetch?: typeof fetch;
  /**
   * Per-payment spend cap in atomic USDC units (atomic units of the 402's `asset`): a 402 asking more
   * is refused with {@link SpendCapExceededError} before anything is signed or sent. Default
   * {@link DEFAULT_MAX_AMOUNT_ATOMIC} (1 USDC), like the official clients; market-intel's compute
   * endpoints (15 and 25 USDC) need it raised, e.g. `25_000_000n`.
   */
  maxAmountAtomic?: bigint;
  /** Which scheme to pay with; default `auto` (see {@link PaymentMode}). */
  mode?: PaymentMode;
  /** Push mode: milliseconds to wait for the transfer to confirm; default 30000. (The server confirms official payments.) */
  confirmTimeoutMs?: number;
}

/** A payment {@link fetchWithPayment} made. */
export interface PaymentMade {
  /** `official`: a transaction the server co-signed as fee payer and sent; `push`: a transfer the agent sent. */
  mode: 'official' | 'push';
  /**
   * Base58 signature of the paying transaction: push mode, the transfer sent (and presented in
   * `X-PAYMENT`); official mode, the settled transaction named by `PAYMENT-RESPONSE`.
   */
  signature: string;
  /** The network, as this project names it (`solana`, `solana-devnet`). */
  network: X402Network;
  /** The price paid, in atomic units of `asset` (atomic USDC units). */
  amountAtomic: bigint;
  /** The mint paid in (base58). */
  asset: string;
  /** The wallet whose tokens paid (the transfer authority), as the server reported it. */
  payer: string;
  /**
   * Who paid the network fee: the agent's wallet (push mode) or the server's fee payer
   * (`extra.feePayer` of the offer, official mode).
   */
  feePayer: string;
  /**
   * The v1 requirements of what was paid: `accepts[0]` of the 402 body (`payTo` is the merchant's token
   * account). In official mode, when the body offers nothing for the same network, mint and amount,
   * they are derived from the v2 offer.
   */
  requirements: PaymentRequirements;
  /** Official mode: the v2 requirement paid (`accepted` of the payload; `payTo` is the merchant wallet). */
  accepted?: PaymentRequirementsV2;
  /** The decoded `X-PAYMENT-RESPONSE` of the paid answer (v1 network name), when present and valid. */
  paymentResponse?: PaymentResponse;
  /** The decoded `PAYMENT-RESPONSE` of the paid answer (CAIP-2 network), when present and valid (both modes). */
  settlement?: SettleResponseV2;
}

/** What {@link fetchWithPayment} returns. */
export interface FetchWithPaymentResult {
  /** The final response (its body has been read into `body`). */
  response: Response;
  /** The body: parsed JSON when the response is JSON, else text. */
  body: unknown;
  /**
   * Present when a payment was made: in push mode once the transfer confirmed; in official mode when
   * the paid answer reports a successful settlement (`PAYMENT-RESPONSE` or `X-PAYMENT-RESPONSE`). An
   * official answer other than 402 without one (e.g. 429 or 503 before settling) comes back without
   * `payment`.
   */
  payment?: PaymentMade;
}

/**
 * Requests `url`; on 402 pays it and repeats the request once (docs/payments.md "Paying for data (x402)" and
 * "Paying with an official x402 client"):
 * - official scheme (mode `auto` when the 402 carries a payable `PAYMENT-REQUIRED` offer, or mode
 *   `official`): the official `@x402/svm` client builds a transaction paying exactly `amount` of `asset`
 *   to `payTo`'s associated token account with the server's `extra.feePayer` as fee payer and signs it
 *   partially; the retry carries `PAYMENT-SIGNATURE: base64({ x402Version: 2, accepted, resource,
 *   payload: { transaction } })`; the server co-signs, sends and confirms it. The agent pays no SOL.
 * - push mode (mode `push`, or `auto` without a v2 offer): pays `accepts[0]` of the Error402 body with
 *   {@link payForRequirements} and retries with `X-PAYMENT: base64({ x402Version: 1, scheme: "exact",
 *   network, payload: { txSignature } })`. The agent pays the fee in SOL.
 * Before anything is signed, a price above `maxAmountAtomic` (default 1 USDC) is refused: the signer
 * is not asked.
 *
 * @returns the final response, its body, and the payment made
 * @throws SpendCapExceededError (a PaymentRefusedError) the price is above `maxAmountAtomic`; nothing was signed or sent
 * @throws PaymentRefusedError the 402 offers nothing payable in the requested mode (no valid Error402
 *   body for push, no `PAYMENT-REQUIRED` exact offer on a network with an RPC URL for official, no RPC
 *   URL), or the server answered the paid retry with 402 again (`reason` = its `details.reason`; push
 *   mode: `signature` = the transfer already made)
 * @throws InsufficientFundsError too few tokens, no token account, or (push mode) no SOL for the fee
 * @throws RpcUnreachableError the RPC of the network cannot be reached
 * @throws PaymentConfirmationError push mode: the transfer failed or did not confirm
 * @throws X402ClientError `payment_build_failed` (official client) or `send_failed` (push)
 * @throws X402ClientError `signature_missing`: the signer answered without its valid signature
 * @throws TypeError when `signer` is not a Keypair, a wallet adapter or a kit signer
 * @throws whatever `fetch` throws when `url` cannot be reached
 */
export async function fetchWithPayment(
  url: string,
  options: FetchWithPaymentOptions,
): Promise<FetchWithPaymentResult> {
  const doFetch = options.fetch ?? fetch;
  // Resolved before the first request, so a signer of the wrong shape fails without a request.
  const signer = signerOf(options);
  const first = await doFetch(url, options.init);
  if (first.status !== 402) return { response: first, body: await readBody(first) };

  const mode = options.mode ?? 'auto';
  const cap = options.maxAmountAtomic ?? DEFAULT_MAX_AMOUNT_ATOMIC;
  const challengeBody = await readBody(first);
  const challenge = Error402.safeParse(challengeBody);
  const v1 = challenge.success ? challenge.data.accepts[0] : undefined;
  const requiredHeader = first.headers.get(PAYMENT_REQUIRED_HEADER);
  const required = requiredHeader ? decodePaymentRequired(requiredHeader) : undefined;

  if (mode !== 'push') {
    const offer = required && officialOfferOf(required, options.rpcUrls);
    if (offer) return payOfficial(url, options, signer, { required, ...offer, v1, cap });
    if (mode === 'official') {
      throw new PaymentRefusedError(
        required
          ? `${url} offers no exact payment on a Solana network with a configured RPC URL in PAYMENT-REQUIRED`
          : `${url} answered 402 without a valid PAYMENT-REQUIRED header (the official x402 scheme is not offered)`,
      );
    }
  }

  if (!challenge.success)
    throw new PaymentRefusedError(`${url} answered 402 without a valid x402 body`, challenge.error);
  if (!v1) throw new PaymentRefusedError(`${url} answered 402 but offers no way to pay`);
  const rpcUrl = options.rpcUrls[v1.network];
  if (!rpcUrl) throw new PaymentRefusedError(`No RPC URL configured for network ${v1.network}`);
  enforceCap(url, BigInt(v1.maxAmountRequired), cap, v1.asset);

  const signature = await payForRequirements({
    requirements: v1,
    signer,
    rpcUrl,
    ...(options.confirmTimeoutMs === undefined ? {} : { confirmTimeoutMs: options.confirmTimeoutMs }),
  });

  const headers = new Headers(options.init?.headers);
  headers.set('X-PAYMENT', encodePaymentHeader(v1.network, signature));
  const response = await doFetch(url, { ...options.init, headers });
  const body = await readBody(response);
  if (response.status === 402)
    throw refused(url, response, body, `the transfer ${signature} was made`, signature);
  const paymentResponse = paymentResponseOf(response);
  const settlement = settlementOf(response);
  const payer = signer.address;
  return {
    response,
    body,
    payment: {
      mode: 'push',
      signature,
      network: v1.network,
      amountAtomic: BigInt(v1.maxAmountRequired),
      asset: v1.asset,
      payer: paymentResponse?.payer ?? payer,
      feePayer: payer,
      requirements: v1,
      ...(paymentResponse ? { paymentResponse } : {}),
      ...(settlement ? { settlement } : {}),
    },
  };
}

/** Pays with the official exact SVM scheme and retries with `PAYMENT-SIGNATURE`. */
async function payOfficial(
  url: string,
  options: FetchWithPaymentOptions,
  signer: PaymentSigner,
  offer: {
    required: PaymentRequiredHeader;
    requirement: PaymentRequirementsV2;
    network: X402Network;
    rpcUrl: string;
    v1: PaymentRequirements | undefined;
    cap: bigint;
  },
): Promise<FetchWithPaymentResult> {
  const { required, requirement, network, rpcUrl, v1, cap } = offer;
  const amountAtomic = BigInt(requirement.amount);
  enforceCap(url, amountAtomic, cap, requirement.asset);
  const payment = await createOfficialPayment({
    requirement,
    ...(required.resource ? { resource: required.resource } : {}),
    ...(required.extensions ? { extensions: required.extensions } : {}),
    signer,
    rpcUrl,
  });

  const headers = new Headers(options.init?.headers);
  headers.set(PAYMENT_SIGNATURE_HEADER, payment.header);
  const response = await (options.fetch ?? fetch)(url, { ...options.init, headers });
  const body = await readBody(response);
  if (response.status === 402) throw refused(url, response, body, 'nothing was settled');
  const settlement = settlementOf(response);
  const paymentResponse = paymentResponseOf(response);
  const signature =
    (settlement?.success ? settlement.transaction : undefined) ??
    (paymentResponse?.success ? paymentResponse.transaction : undefined);
  if (signature === undefined) return { response, body };

  const requirements: PaymentRequirements =
    v1 &&
    v1.network === network &&
    v1.asset === requirement.asset &&
    v1.maxAmountRequired === requirement.amount
      ? v1
      : {
          scheme: 'exact',
          network,
          maxAmountRequired: requirement.amount,
          asset: requirement.asset,
          payTo: payment.destination,
          resource: required.resource?.url ?? url,
          description: required.resource?.description ?? '',
          mimeType: required.resource?.mimeType ?? '',
          maxTimeoutSeconds: Math.max(1, Math.ceil(requirement.maxTimeoutSeconds)),
        };
  return {
    response,
    body,
    payment: {
      mode: 'official',
      signature,
      network,
      amountAtomic,
      asset: requirement.asset,
      payer: settlement?.payer || paymentResponse?.payer || payment.payer,
      feePayer: String(requirement.extra?.feePayer),
      requirements,
      accepted: requirement,
      ...(paymentResponse ? { paymentResponse } : {}),
      ...(settlement ? { settlement } : {}),
    },
  };
}

/** @throws SpendCapExceededError when `price` is above `cap` */
function enforceCap(url: string, price: bigint, cap: bigint, asset: string): void {
  if (price <= cap) return;
  throw new SpendCapExceededError(
    `${url} asks ${formatAtomic(price)} USDC (${price} atomic units), above the per-payment cap of ` +
      `${formatAtomic(cap)} USDC (${cap}); raise maxAmountAtomic (agent-pay: --max-amount ${formatAtomic(price)}) to pay it`,
    { priceAtomic: price, capAtomic: cap, asset },
  );
}

/** The PaymentRefusedError of a paid retry answered with 402, with the server's reason. */
function refused(
  url: string,
  response: Response,
  body: unknown,
  what: string,
  signature?: string,
): PaymentRefusedError {
  const parsed = Error402.safeParse(body);
  const reason = parsed.success ? parsed.data.details?.reason : undefined;
  const message = parsed.success ? parsed.data.error : `HTTP ${response.status}`;
  return new PaymentRefusedError(
    `${url} refused the payment (${what}): ${message}${typeof reason === 'string' && !message.includes(reason) ? ` (${reason})` : ''}`,
    undefined,
    {
      status: response.status,
      ...(typeof reason === 'string' ? { reason } : {}),
      ...(signature ? { signature } : {}),
    },
  );
}

function settlementOf(response: Response): SettleResponseV2 | undefined {
  const header = response.headers.get(PAYMENT_V2_RESPONSE_HEADER);
  return header ? decodeSettleResponse(header) : undefined;
}

function paymentResponseOf(response: Response): PaymentResponse | undefined {
  const header = response.headers.get(PAYMENT_RESPONSE_HEADER);
  if (!header) return undefined;
  try {
    return decodePaymentResponse(header);
  } catch {
    return undefined;
  }
}
