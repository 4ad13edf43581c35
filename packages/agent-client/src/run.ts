import type { FetchWithPaymentResult, PaymentMade } from '@repo/x402-solana/client';
import { readBody } from '@repo/x402-solana/client-core';
import { EXIT } from './exit-codes';
import { firstRequest } from './http';
import { parseAgentPayArgs, USAGE, UsageError } from './options';
import type { PaymentFailure } from './pay';
import type { KeptReceipt } from './receipts';
import type { WaitResult } from './wait';
import { printable } from './printable';
import { formatUsdc } from './usdc';

export { EXIT };

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
  /**
   * Fetch implementation of every request; default node:http(s) for the first request (see
   * `firstRequest`) and the global fetch for the paid retry.
   */
  fetch?: typeof fetch;
  /** Where `--wait` draws its progress bar when it is a TTY (the CLI passes process.stderr). */
  terminal?: NodeJS.WriteStream;
}

/**
 * Runs `agent-pay` (see {@link USAGE}; packages/agent-client/README.md; docs/payments.md "Paying for
 * data (x402)"): requests the URL; when the answer is 402, loads the paying code (and the keypair)
 * and pays it with `fetchWithPayment` — the official x402 scheme when the server offers it, push mode
 * with `--push` or when it does not — refusing a price above `--max-amount` (default 1 USDC); prints
 * the status, the body (pretty JSON), the amount in USDC, the mode, the transaction signature and the
 * payer (`--json`: one object, amounts in USDC and in atomic units). With `--wait`, a 2xx answer that
 * starts a compute job is followed to its end (`followJob`, with `waitForJob` of `@repo/api-client`):
 * the result (a debate's verdict) is printed, a failed job exits 7 with its refund.
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
    if ('command' in options) {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazy: the receipt check's libraries
      const { runVerifyReceipt } = require('./receipts') as typeof import('./receipts');
      return await runVerifyReceipt(options, io);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr(`agent-pay: ${error.message}\n\n${USAGE}\n`);
      return EXIT.usage;
    }
    throw error;
  }
  const { json, url } = options;
  const fail = (failure: PaymentFailure): number => {
    if (json) {
      io.stdout(
        `${JSON.stringify({ ok: false, error: failure.message, exitCode: failure.exitCode, ...failure.details })}\n`,
      );
    }
    io.stderr(`agent-pay: ${failure.message}\n`);
    return failure.exitCode;
  };

  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.data !== undefined) headers['content-type'] = 'application/json';
  const init: RequestInit = { method: options.method, headers };
  if (options.data !== undefined) init.body = options.data;
  const fetchImpl = io.fetch ?? fetch;

  let first: Response;
  try {
    first = io.fetch
      ? await io.fetch(url, init)
      : await firstRequest(url, { method: options.method, headers, body: options.data });
  } catch (error) {
    return fail({ exitCode: EXIT.urlUnreachable, message: `cannot reach ${url}: ${reasonOf(error)}` });
  }

  let result: FetchWithPaymentResult;
  let answer: Response | undefined;
  if (first.status === 402) {
    // Lazy on purpose: the paying code loads @solana/web3.js and the x402 clients, most of the start
    // time, which a free call must not pay (packages/agent-client/README.md, "Start time").
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { payAndRetry } = require('./pay') as typeof import('./pay');
    const paid = await payAndRetry(options, first, init, fetchImpl);
    if ('exitCode' in paid) return fail(paid);
    ({ answer, ...result } = paid);
  } else {
    try {
      result = { response: first, body: await readBody(first) };
    } catch (error) {
      return fail({
        exitCode: EXIT.urlUnreachable,
        message: `cannot read the answer of ${url}: ${reasonOf(error)}`,
      });
    }
  }

  const { response, body, payment } = result;
  const ok = response.status >= 200 && response.status < 300;
  const paymentView = payment
    ? {
        mode: payment.mode,
        signature: payment.signature,
        network: payment.network,
        amount: formatUsdc(payment.amountAtomic),
        amountAtomic: payment.amountAtomic.toString(),
        asset: payment.asset,
        payTo: payment.requirements.payTo,
        payer: payment.payer,
        feePayer: payment.feePayer,
      }
    : null;
  let kept: KeptReceipt | undefined;
  if (options.receiptsDir !== undefined && payment && answer) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazy: the receipt check's libraries
    const { keepReceipt } = require('./receipts') as typeof import('./receipts');
    kept = await keepReceipt(
      options.receiptsDir,
      { method: options.method, url },
      answer,
      payment,
      fetchImpl,
    );
  }
  if (!json) {
    io.stdout(`HTTP ${response.status} ${response.statusText}\n`);
    io.stdout(`${typeof body === 'string' ? body : JSON.stringify(body, null, 2)}\n`);
    if (payment) {
      io.stdout(
        `paid ${formatUsdc(payment.amountAtomic)} USDC on ${payment.network}, ${describeMode(payment)}\n`,
      );
      io.stdout(`transaction ${payment.signature}\n`);
      io.stdout(`payer ${payment.payer}\n`);
    }
    if (kept) io.stdout(`${describeReceipt(kept)}\n`);
  }
  if (kept && kept.status !== 'verified') io.stderr(`agent-pay: ${describeReceipt(kept)}\n`);

  let waited: WaitResult | undefined;
  if (options.wait && ok) {
    // Lazy: the typed client package and the progress bar, for --wait only.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { followJob } = require('./wait') as typeof import('./wait');
    waited = await followJob(url, body, {
      stderr: io.stderr,
      ...(io.terminal ? { terminal: io.terminal } : {}),
      ...(io.fetch ? { fetch: io.fetch } : {}),
    });
  }

  if (json) {
    io.stdout(
      `${JSON.stringify({
        ok: ok && (waited === undefined || waited.exitCode === EXIT.ok),
        status: response.status,
        body,
        payment: paymentView,
        ...(kept ? { receipt: kept } : {}),
        ...(waited ? { job: waited.job } : {}),
      })}\n`,
    );
  } else if (waited?.job.status === 'completed') {
    const { jobId, result: jobResult, elapsedSeconds } = waited.job;
    io.stdout(`job ${jobId} completed after ${elapsedSeconds} s\n`);
    const verdict = jobResult?.verdict;
    if (typeof verdict === 'string') io.stdout(`verdict ${printable(verdict)}\n`);
    io.stdout(`${JSON.stringify(jobResult ?? {}, null, 2)}\n`);
  }

  if (!ok) {
    const detail =
      body && typeof body === 'object' && 'error' in body
        ? `: ${printable((body as { error: unknown }).error)}`
        : '';
    io.stderr(`agent-pay: ${url} answered HTTP ${response.status}${detail}\n`);
    return EXIT.httpError;
  }
  if (waited?.message !== undefined) io.stderr(`agent-pay: ${waited.message}\n`);
  return waited?.exitCode ?? EXIT.ok;
}

function describeReceipt(kept: KeptReceipt): string {
  switch (kept.status) {
    case 'verified':
      return `receipt verified, saved to ${kept.file}`;
    case 'invalid':
      return `receipt does not verify (${kept.problem}), saved to ${kept.file} as evidence`;
    case 'absent':
      return 'the answer carries no signed receipt';
    default:
      return `receipt not saved: ${kept.problem}`;
  }
}

function describeMode(payment: PaymentMade): string {
  return payment.mode === 'official'
    ? `official x402 scheme (network fee paid by the server's fee payer ${payment.feePayer})`
    : 'push mode (network fee paid by this wallet)';
}

/** The innermost message of a fetch failure (undici puts the reason in `cause`). */
function reasonOf(error: unknown): string {
  const cause = error instanceof Error ? ((error as Error & { cause?: unknown }).cause ?? error) : error;
  return cause instanceof Error ? cause.message : String(cause);
}
