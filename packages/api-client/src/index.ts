// @repo/api-client — typed clients of the three services (README), generated from their OpenAPI
// documents: openapi-typescript's `paths` with openapi-fetch. market-intel's pays its 402s with
// @repo/x402-solana's client.
import type { Keypair } from '@solana/web3.js';
import createClient, { type Client } from 'openapi-fetch';
import { fetchWithPayment } from '@repo/x402-solana/client';
import type { paths as MarketIntelPaths } from './generated/market-intel';
import type { paths as SignalFeedbackPaths } from './generated/signal-feedback';
import type { paths as SkillRouterPaths } from './generated/skill-router';

export type { MarketIntelPaths, SignalFeedbackPaths, SkillRouterPaths };

/** A Solana network as the services name it in x402 (`solana` is mainnet). */
export type X402Network = 'solana' | 'solana-devnet';

/**
 * How a 402 is paid: `auto` (the official exact scheme when offered, else push), `official` or `push`
 * (the agent sends the transfer itself).
 */
export type PaymentMode = 'auto' | 'push' | 'official';

/** How {@link marketIntelClient} pays: the wallet, its RPC URLs, the spend cap and the scheme. */
export interface PaymentOptions {
  /** The paying wallet. */
  keypair: Keypair;
  /** JSON-RPC URL per network, e.g. `{ solana: "http://127.0.0.1:8899" }`. */
  rpcUrls: Partial<Record<X402Network, string>>;
  /** Most a single call may cost, in atomic USDC units; default 1 USDC (compute jobs cost 15 and 25). */
  maxAmountAtomic?: bigint;
  /** `auto` (default: the official scheme when offered, else push), `official` or `push`. */
  mode?: PaymentMode;
}

/**
 * A `fetch` that pays a 402 with `fetchWithPayment` and answers the final response, its body intact
 * (the x402 client reads it; openapi-fetch reads it again).
 */
function payingFetch(payment: PaymentOptions): (request: Request) => Promise<Response> {
  return async (request) => {
    const hasBody = request.method !== 'GET' && request.method !== 'HEAD';
    const { response, body } = await fetchWithPayment(request.url, {
      keypair: payment.keypair,
      rpcUrls: payment.rpcUrls,
      init: {
        method: request.method,
        headers: request.headers,
        ...(hasBody ? { body: await request.text() } : {}),
      },
      ...(payment.maxAmountAtomic !== undefined ? { maxAmountAtomic: payment.maxAmountAtomic } : {}),
      ...(payment.mode ? { mode: payment.mode } : {}),
    });
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    return new Response(response.status === 204 ? null : text, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

/**
 * market-intel's typed client (services/market-intel/README.md, "Endpoints"). With `payment`, every
 * 402 is paid (market-intel README, "Paying, in three steps") and the call repeated once, so
 * `GET /api/v1/scout/gaps` answers the gaps; the settlement is in the `PAYMENT-RESPONSE` header of
 * `response`. Without it, a paid call answers its 402 as `error`.
 * @param baseUrl e.g. `http://127.0.0.1:3001`
 * @throws (from a call) the x402 client's errors: `SpendCapExceededError` above `maxAmountAtomic`,
 *   `InsufficientFundsError`, `RpcUnreachableError`, `PaymentRefusedError`
 */
export function marketIntelClient(baseUrl: string, payment?: PaymentOptions): Client<MarketIntelPaths> {
  return createClient<MarketIntelPaths>({ baseUrl, ...(payment ? { fetch: payingFetch(payment) } : {}) });
}

/**
 * signal-feedback's typed client (services/signal-feedback/README.md, "Endpoints"), sending the
 * product key (`spk_...`) in `x-api-key` when given.
 * @param baseUrl e.g. `http://127.0.0.1:3002`
 */
export function signalFeedbackClient(baseUrl: string, apiKey?: string): Client<SignalFeedbackPaths> {
  return createClient<SignalFeedbackPaths>({
    baseUrl,
    ...(apiKey ? { headers: { 'x-api-key': apiKey } } : {}),
  });
}

/**
 * skill-router's typed client (services/skill-router/README.md, "Endpoints"), sending the
 * `sk_router_` key in `x-api-key` when given.
 * @param baseUrl e.g. `http://127.0.0.1:3003`
 */
export function skillRouterClient(baseUrl: string, apiKey?: string): Client<SkillRouterPaths> {
  return createClient<SkillRouterPaths>({ baseUrl, ...(apiKey ? { headers: { 'x-api-key': apiKey } } : {}) });
}

export {
  waitForJob,
  parseJobFailure,
  retryAfterOf,
  JobWaitError,
  JobNotFoundError,
  JobWaitTimeoutError,
  JobReadError,
} from './jobs';
export type { AgentJob, JobRefund, JobProgress, JobFailure, JobOutcome, WaitForJobOptions } from './jobs';
export { verifyWebhook, WebhookVerificationError } from './webhooks';
export type { JobWebhookPayload, VerifyWebhookOptions } from './webhooks';
