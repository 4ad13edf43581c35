import {
  fetchWithPayment,
  formatAtomic,
  InsufficientFundsError,
  PaymentConfirmationError,
  PaymentRefusedError,
  RpcUnreachableError,
  SpendCapExceededError,
  X402ClientError,
  type PaymentMade,
} from '@repo/x402-solana/client';
import { loadKeypair, parseAgentPayArgs, USAGE, UsageError } from './options';

/** Exit codes of `agent-pay`. */
export const EXIT = {
  ok: 0,
  httpError: 1,
  usage: 2,
  insufficientFunds: 3,
  rpcUnreachable: 4,
  paymentFailed: 5,
  urlUnreachable: 6,
} as const;

/** Where `agent-pay` writes and what it reads. */
export interface AgentPayIo {
  /** Standard output. */
  stdout: (text: string) => void;
  /** Standard error. */
  stderr: (text: string) => void;
  /** Environment variables. */
  env: NodeJS.ProcessEnv;
  /** Working directory (for the default keypair). */
  cwd: string;
  /** Fetch implementation; default the global fetch. */
  fetch?: typeof fetch;
}

/**
 * Runs `agent-pay` (see {@link USAGE}; docs/payments.md "Paying for data (x402)"): calls the URL, pays a 402 with
 * `fetchWithPayment` — the official x402 scheme when the server offers it, push mode with `--push` or
 * when it does not — refusing a price above `--max-amount` (default 1 USDC), and prints the status,
 * the body (pretty JSON), the amount, the mode, the transaction signature and the payer.
 *
 * @param argv arguments after the program name
 * @returns the exit code ({@link EXIT}); failures print one clear line on stderr
 */
export async function runAgentPay(argv: string[], io: AgentPayIo): Promise<number> {
  let options;
  try {
    options = parseAgentPayArgs(argv, io.env, io.cwd);
    if (options === 'help') {
      io.stdout(`${USAGE}\n`);
      return EXIT.ok;
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`agent-pay: ${error.message}\n\n${USAGE}\n`);
      return EXIT.usage;
    }
    throw error;
  }
  const fail = (code: number, message: string): number => {
    if (options.json) io.stdout(`${JSON.stringify({ ok: false, error: message, exitCode: code })}\n`);
    io.stderr(`agent-pay: ${message}\n`);
    return code;
  };

  let keypair;
  try {
    keypair = loadKeypair(options.keypairPath);
  } catch (error) {
    return fail(EXIT.usage, error instanceof Error ? error.message : String(error));
  }

  const init: RequestInit = { method: options.method, headers: { accept: 'application/json' } };
  if (options.data !== undefined) init.body = options.data;
  if (options.data !== undefined)
    init.headers = { accept: 'application/json', 'content-type': 'application/json' };

  let result;
  try {
    result = await fetchWithPayment(options.url, {
      keypair,
      rpcUrls: options.rpcUrls,
      init,
      ...(io.fetch ? { fetch: io.fetch } : {}),
      maxAmountAtomic: options.maxAmountAtomic,
      mode: options.mode,
    });
  } catch (error) {
    if (error instanceof SpendCapExceededError) {
      return fail(
        EXIT.paymentFailed,
        `payment not completed: ${options.url} asks ${formatAtomic(error.priceAtomic)} USDC, above --max-amount ` +
          `${formatAtomic(error.capAtomic)} USDC; pass --max-amount ${formatAtomic(error.priceAtomic)} to pay it (nothing was paid)`,
      );
    }
    if (error instanceof InsufficientFundsError)
      return fail(EXIT.insufficientFunds, `insufficient funds: ${error.message}`);
    if (error instanceof RpcUnreachableError) return fail(EXIT.rpcUnreachable, error.message);
    if (
      error instanceof PaymentConfirmationError ||
      error instanceof PaymentRefusedError ||
      error instanceof X402ClientError
    ) {
      return fail(EXIT.paymentFailed, `payment not completed: ${error.message}`);
    }
    const cause = error instanceof Error ? ((error as Error & { cause?: unknown }).cause ?? error) : error;
    const reason = cause instanceof Error ? cause.message : String(cause);
    return fail(EXIT.urlUnreachable, `cannot reach ${options.url}: ${reason}`);
  }

  const { response, body, payment } = result;
  const ok = response.status >= 200 && response.status < 300;
  if (options.json) {
    io.stdout(
      `${JSON.stringify({
        ok,
        status: response.status,
        body,
        payment: payment
          ? {
              mode: payment.mode,
              signature: payment.signature,
              network: payment.network,
              amountAtomic: payment.amountAtomic.toString(),
              asset: payment.asset,
              payTo: payment.requirements.payTo,
              payer: payment.payer,
              feePayer: payment.feePayer,
            }
          : null,
      })}\n`,
    );
  } else {
    io.stdout(`HTTP ${response.status} ${response.statusText}\n`);
    io.stdout(`${typeof body === 'string' ? body : JSON.stringify(body, null, 2)}\n`);
    if (payment) {
      io.stdout(
        `paid ${formatAtomic(payment.amountAtomic)} USDC (${payment.amountAtomic} atomic units) on ${payment.network}, ${describeMode(payment)}\n`,
      );
      io.stdout(`transaction ${payment.signature}\n`);
      io.stdout(`payer ${payment.payer}\n`);
    }
  }
  if (!ok) {
    const detail =
      body && typeof body === 'object' && 'error' in body
        ? `: ${String((body as { error: unknown }).error)}`
        : '';
    io.stderr(`agent-pay: ${options.url} answered HTTP ${response.status}${detail}\n`);
    return EXIT.httpError;
  }
  return EXIT.ok;
}

function describeMode(payment: PaymentMade): string {
  return payment.mode === 'official'
    ? `official x402 scheme (network fee paid by the server's fee payer ${payment.feePayer})`
    : 'push mode (network fee paid by this wallet)';
}
