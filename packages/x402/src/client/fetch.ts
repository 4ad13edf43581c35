import type { Keypair } from '@solana/web3.js';
import { Error402, type PaymentRequirements, type PaymentResponse, type X402Network } from '@repo/schemas';
import { decodePaymentResponse, encodePaymentHeader, PAYMENT_RESPONSE_HEADER } from '../header';
import { PaymentRefusedError } from './errors';
import { payForRequirements } from './pay';

/** Options of {@link fetchWithPayment}. */
export interface FetchWithPaymentOptions {
  /** The paying wallet. */
  keypair: Keypair;
  /** JSON-RPC URL per network, e.g. `{ solana: "http://127.0.0.1:8899", "solana-devnet": "http://127.0.0.1:8899/devnet" }`. */
  rpcUrls: Partial<Record<X402Network, string>>;
  /** The request (method, headers, body). A body must be re-sendable (string, Buffer...): it is sent twice. */
  init?: RequestInit;
  /** The fetch implementation; default the global (undici) fetch. */
  fetch?: typeof fetch;
  /** Refuse to pay more than this many atomic units (a safety limit); default: no limit. */
  maxAmountAtomic?: bigint;
  /** Milliseconds to wait for the payment to confirm; default 30000. */
  confirmTimeoutMs?: number;
}

/** What {@link fetchWithPayment} returns. */
export interface FetchWithPaymentResult {
  /** The final response (its body has been read into `body`). */
  response: Response;
  /** The body: parsed JSON when the response is JSON, else text. */
  body: unknown;
  /** Present when a payment was made. */
  payment?: {
    /** The base58 transaction signature sent in X-PAYMENT. */
    signature: string;
    /** The requirements that were paid (`accepts[0]` of the 402). */
    requirements: PaymentRequirements;
    /** The decoded `X-PAYMENT-RESPONSE` of the paid answer, when present and valid. */
    paymentResponse?: PaymentResponse;
  };
}

/**
 * Requests `url`; on 402 pays `accepts[0]` of the Error402 body exactly (see {@link payForRequirements}),
 * then repeats the request once with `X-PAYMENT` (base64 JSON `{ x402Version: 1, scheme: "exact",
 * network, payload: { txSignature } }`) (market-intel spec, "Authentication", flow steps 1–3).
 *
 * @returns the final response, its body, and the payment made
 * @throws PaymentRefusedError the 402 body is not an Error402, offers nothing, names a network with no
 *   configured RPC URL, or asks more than `maxAmountAtomic`
 * @throws InsufficientFundsError, RpcUnreachableError, PaymentConfirmationError from the payment
 */
export async function fetchWithPayment(
  url: string,
  options: FetchWithPaymentOptions,
): Promise<FetchWithPaymentResult> {
  const doFetch = options.fetch ?? fetch;
  const first = await doFetch(url, options.init);
  if (first.status !== 402) return { response: first, body: await readBody(first) };

  const challengeBody = await readBody(first);
  const challenge = Error402.safeParse(challengeBody);
  if (!challenge.success)
    throw new PaymentRefusedError(`${url} answered 402 without a valid x402 body`, challenge.error);
  const requirements = challenge.data.accepts[0];
  if (!requirements) throw new PaymentRefusedError(`${url} answered 402 but offers no way to pay`);
  const rpcUrl = options.rpcUrls[requirements.network];
  if (!rpcUrl) throw new PaymentRefusedError(`No RPC URL configured for network ${requirements.network}`);
  const amount = BigInt(requirements.maxAmountRequired);
  if (options.maxAmountAtomic !== undefined && amount > options.maxAmountAtomic) {
    throw new PaymentRefusedError(
      `${url} asks ${amount} atomic units, above the limit of ${options.maxAmountAtomic}`,
    );
  }

  const signature = await payForRequirements({
    requirements,
    keypair: options.keypair,
    rpcUrl,
    ...(options.confirmTimeoutMs === undefined ? {} : { confirmTimeoutMs: options.confirmTimeoutMs }),
  });

  const headers = new Headers(options.init?.headers);
  headers.set('X-PAYMENT', encodePaymentHeader(requirements.network, signature));
  const response = await doFetch(url, { ...options.init, headers });
  const body = await readBody(response);
  const header = response.headers.get(PAYMENT_RESPONSE_HEADER);
  let paymentResponse: PaymentResponse | undefined;
  if (header) {
    try {
      paymentResponse = decodePaymentResponse(header);
    } catch {
      paymentResponse = undefined;
    }
  }
  return {
    response,
    body,
    payment: { signature, requirements, ...(paymentResponse ? { paymentResponse } : {}) },
  };
}

async function readBody(response: Response): Promise<unknown> {
  const text = await response.text();
  if (text === '') return undefined;
  if (/json/i.test(response.headers.get('content-type') ?? '')) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}
