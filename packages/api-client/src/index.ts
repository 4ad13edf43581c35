// The package entry (README): typed clients of the three services, generated from their OpenAPI
// documents (openapi-typescript's `paths` with openapi-fetch); market-intel's pays its 402s within
// spend limits; jobs followed to their end; webhooks verified.
import type { Keypair } from '@solana/web3.js';
import createClient, { type Client } from 'openapi-fetch';
import { createPayer, type Payer, type PayerOptions } from './payments/payer';
import type { paths as MarketIntelPaths } from './generated/market-intel';
import type { paths as SignalFeedbackPaths } from './generated/signal-feedback';
import type { paths as SkillRouterPaths } from './generated/skill-router';

export type { MarketIntelPaths, SignalFeedbackPaths, SkillRouterPaths };

/**
 * How {@link marketIntelClient} pays: {@link PayerOptions} (`signer`, `rpcUrls`, `limits`, `mode`,
 * `dryRun`...), or the older shape with `keypair` and `maxAmountAtomic`.
 */
export type PaymentOptions =
  | PayerOptions
  | (Omit<PayerOptions, 'signer'> & {
      /** The paying wallet (same as `signer`). */
      keypair: Keypair;
      /** Per-payment cap in atomic USDC units (same as `limits.maxPerPayment`); default 1 USDC. */
      maxAmountAtomic?: bigint;
    });

/** The {@link Payer} of `payment`, made once. */
function payerOf(payment: PaymentOptions | Payer): Payer {
  if ('fetch' in payment && typeof payment.fetch === 'function' && 'receipts' in payment) return payment;
  const options = payment as PaymentOptions;
  if ('signer' in options) return createPayer(options);
  const { keypair, maxAmountAtomic, ...rest } = options;
  return createPayer({
    ...rest,
    signer: keypair,
    limits: { ...rest.limits, ...(maxAmountAtomic === undefined ? {} : { maxPerPayment: maxAmountAtomic }) },
  });
}

/**
 * market-intel's typed client (services/market-intel/README.md, "Endpoints"). With `payment` (a
 * {@link Payer} or its options), every 402 is paid within the payer's spend controls (README, "Paying
 * within limits") and the call repeated once, so `GET /api/v1/scout/gaps` answers the gaps and
 * `receiptOf(response)` is the payment's receipt. Without it, a paid call answers its 402 as `error`.
 * @param baseUrl e.g. `http://127.0.0.1:3001`
 * @throws (from a call) the payer's errors: `SpendLimitExceededError`, `PaymentNotAllowedError`,
 *   `InsufficientFundsError`, `RpcUnreachableError`, `PaymentRefusedError`
 */
export function marketIntelClient(
  baseUrl: string,
  payment?: PaymentOptions | Payer,
): Client<MarketIntelPaths> {
  if (!payment) return createClient<MarketIntelPaths>({ baseUrl });
  const payer = payerOf(payment);
  return createClient<MarketIntelPaths>({ baseUrl, fetch: (request: Request) => payer.fetch(request) });
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

export { createPayer, receiptOf } from './payments/payer';
export type {
  Payer,
  PayerOptions,
  PaymentOffer,
  PaymentReceipt,
  PaidRequest,
  PaymentMode,
  X402Network,
} from './payments/payer';
export { MemorySpendStore, DEFAULT_MAX_PER_PAYMENT_ATOMIC } from './payments/limits';
export type { SpendLimits, SpendStore, SpendRecord, UsdcAmount, SpendLimitKind } from './payments/limits';
export type { Signer, WalletAdapterSigner, KitPaymentSigner } from './payments/signer';
export {
  X402ClientError,
  PaymentRefusedError,
  SpendLimitExceededError,
  PaymentNotAllowedError,
  InsufficientFundsError,
  RpcUnreachableError,
  PaymentConfirmationError,
} from './payments/errors';
export type { InsufficientFundsKind } from './payments/errors';
export { formatAtomic, parseUsdc, USDC_DECIMALS } from './payments/usdc';

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
export { directoryReceiptStore, verifyPaidAnswer, verifyReceiptFile, ReceiptCheckError } from './receipts';
export type {
  ReceiptEvidence,
  ReceiptClaims,
  ReceiptKey,
  ReceiptProblem,
  ReceiptStore,
  StoredReceipt,
  ReceiptFile,
  ReceiptFileCheck,
  PaidAnswerFacts,
} from './receipts';
export { verifyWebhook, WebhookVerificationError } from './webhooks';
export type { JobWebhookPayload, VerifyWebhookOptions } from './webhooks';
export {
  payingMcpClient,
  toolPrice,
  MCP_PAYMENT_META,
  MCP_PAYMENT_RESPONSE_META,
  MCP_PUSH_PAYMENT_REQUIRED_META,
  MCP_PRICE_META,
} from './mcp';
export type {
  PayingMcpClient,
  PayingMcpOptions,
  PaidToolResult,
  McpCallToolParams,
  McpToolClient,
  McpSettlement,
  McpToolPrice,
} from './mcp';
