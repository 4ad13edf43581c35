// The paying half of agent-pay, loaded only when an answer is 402: it brings @solana/web3.js, the
// official @x402/svm client and @solana/kit, which a free call never needs.
import {
  decodePaymentRequired,
  fetchWithPayment,
  InsufficientFundsError,
  officialOfferOf,
  PaymentConfirmationError,
  PaymentRefusedError,
  RpcUnreachableError,
  SpendCapExceededError,
  X402ClientError,
  type FetchWithPaymentResult,
} from '@repo/x402-solana/client';
import { describeShortfall, isLocalLedger, type PaymentNetwork, type Shortfall } from './funds';
import { loadKeypair } from './keypair';
import { UsageError, type AgentPayOptions } from './options';
import { EXIT } from './exit-codes';
import { formatUsdc, usdcArgument } from './usdc';

/** A payment that did not happen: the exit code, one line, and for `--json` what is known. */
export interface PaymentFailure {
  /** The exit code ({@link EXIT}). */
  exitCode: number;
  /** One line, without the `agent-pay: ` prefix. */
  message: string;
  /** Added to the `--json` failure object: `funds` (insufficient funds) or `spendCap` (above `--max-amount`). */
  details?: Record<string, unknown>;
}

/**
 * Pays the 402 `challenge` (the answer to the first request, body unread) with `fetchWithPayment` and
 * repeats the request once (packages/agent-client/README.md; docs/payments.md "Paying for data
 * (x402)"): the official x402 scheme when offered, push mode with `--push` or when it is not; a price
 * above `--max-amount` is refused before anything is signed. The 402 is not requested again: the
 * first answer is handed to `fetchWithPayment` as its first response.
 * @param init the request as first sent (method, headers, body)
 * @param fetchImpl the fetch implementation of the run
 * @returns the final answer and the payment made (with `--receipts`, `answer`: an unread copy of the
 *   last answer, whose bytes the receipt covers), or the failure with its exit code
 */
export async function payAndRetry(
  options: AgentPayOptions,
  challenge: Response,
  init: RequestInit,
  fetchImpl: typeof fetch,
): Promise<(FetchWithPaymentResult & { answer?: Response }) | PaymentFailure> {
  let keypair;
  try {
    keypair = loadKeypair(options.keypairPath);
  } catch (error) {
    if (error instanceof UsageError) return { exitCode: EXIT.usage, message: error.message };
    throw error;
  }
  // The 402 is read twice: by fetchWithPayment, and here when funds are short (which network, asset).
  const offer = challenge.clone();
  let pending: Response | undefined = challenge;
  let answer: Response | undefined;
  const replayFirst: typeof fetch = async (input, requestInit) => {
    const first = pending;
    pending = undefined;
    if (first) return first;
    const response = await fetchImpl(input, requestInit);
    // The body as received, for the receipt's responseSha256 (the result's body is parsed).
    if (options.receiptsDir !== undefined) answer = response.clone();
    return response;
  };
  try {
    const result = await fetchWithPayment(options.url, {
      keypair,
      rpcUrls: options.rpcUrls,
      init,
      fetch: replayFirst,
      maxAmountAtomic: options.maxAmountAtomic,
      mode: options.mode,
    });
    return answer ? { ...result, answer } : result;
  } catch (error) {
    if (error instanceof SpendCapExceededError) {
      return {
        exitCode: EXIT.paymentFailed,
        message:
          `payment not completed: ${options.url} asks ${formatUsdc(error.priceAtomic)} USDC, above --max-amount ` +
          `${formatUsdc(error.capAtomic)} USDC; pass --max-amount ${usdcArgument(error.priceAtomic)} to pay it (nothing was paid)`,
        details: {
          spendCap: {
            price: formatUsdc(error.priceAtomic),
            priceAtomic: error.priceAtomic.toString(),
            maxAmount: formatUsdc(error.capAtomic),
            maxAmountAtomic: error.capAtomic.toString(),
          },
        },
      };
    }
    if (error instanceof InsufficientFundsError) {
      const shortfall = await explainShortfall(
        error,
        keypair.publicKey.toBase58(),
        offer,
        options,
        fetchImpl,
      );
      return {
        exitCode: EXIT.insufficientFunds,
        message: shortfall.message,
        details: { funds: shortfall.details },
      };
    }
    if (error instanceof RpcUnreachableError)
      return { exitCode: EXIT.rpcUnreachable, message: error.message };
    if (
      error instanceof PaymentConfirmationError ||
      error instanceof PaymentRefusedError ||
      error instanceof X402ClientError
    ) {
      return { exitCode: EXIT.paymentFailed, message: `payment not completed: ${error.message}` };
    }
    const cause = error instanceof Error ? ((error as Error & { cause?: unknown }).cause ?? error) : error;
    const reason = cause instanceof Error ? cause.message : String(cause);
    return { exitCode: EXIT.urlUnreachable, message: `cannot reach ${options.url}: ${reason}` };
  }
}

/** What the 402 asked, as fetchWithPayment chose it: the official offer when paid with it, else the body's. */
interface Asked {
  network: PaymentNetwork;
  rpcUrl: string | undefined;
  asset: string;
  priceAtomic: bigint;
}

async function askedBy(offer: Response, options: AgentPayOptions): Promise<Asked | undefined> {
  const header = offer.headers.get('payment-required');
  if (options.mode !== 'push' && header) {
    const required = decodePaymentRequired(header);
    const official = required && officialOfferOf(required, options.rpcUrls);
    if (official) {
      return {
        network: official.network,
        rpcUrl: official.rpcUrl,
        asset: official.requirement.asset,
        priceAtomic: BigInt(official.requirement.amount),
      };
    }
  }
  let body: unknown;
  try {
    body = await offer.json();
  } catch {
    return undefined;
  }
  const first = (body as { accepts?: unknown } | null)?.accepts;
  const requirement = Array.isArray(first) ? (first[0] as Record<string, unknown> | undefined) : undefined;
  const network = requirement?.network;
  const asset = requirement?.asset;
  const amount = requirement?.maxAmountRequired;
  if (
    (network !== 'solana' && network !== 'solana-devnet') ||
    typeof asset !== 'string' ||
    typeof amount !== 'string' ||
    !/^[0-9]+$/.test(amount)
  )
    return undefined;
  return { network, rpcUrl: options.rpcUrls[network], asset, priceAtomic: BigInt(amount) };
}

async function explainShortfall(
  error: InsufficientFundsError,
  wallet: string,
  offer: Response,
  options: AgentPayOptions,
  fetchImpl: typeof fetch,
): Promise<Shortfall> {
  const asked = await askedBy(offer, options);
  const tokens = error.kind !== 'sol_for_fees';
  const local = asked?.rpcUrl ? await isLocalLedger(asked.rpcUrl, asked.asset, fetchImpl) : false;
  return describeShortfall(
    {
      kind: error.kind,
      wallet,
      network: asked?.network,
      rpcUrl: asked?.rpcUrl,
      asset: asked?.asset,
      priceAtomic: (tokens ? error.required : undefined) ?? asked?.priceAtomic,
      balanceAtomic: tokens ? error.available : undefined,
      lamports: tokens ? undefined : error.available,
    },
    local,
  );
}
