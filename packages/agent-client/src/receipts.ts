// Receipts in agent-pay (packages/agent-client/README.md, "Receipts"): `--receipts DIR` keeps the paid
// answer's signed receipt, checked; `verify-receipt FILE [BODY]` checks a kept one offline. Loaded only
// when either is used: it brings the x402 offer-receipt extension.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  directoryReceiptStore,
  ReceiptCheckError,
  verifyPaidAnswer,
  verifyReceiptFile,
  type ReceiptKey,
} from '@repo/api-client';
import type { PaymentMade } from '@repo/x402-solana/client';
import { EXIT } from './exit-codes';
import type { VerifyReceiptOptions } from './options';

/** What became of a paid answer's receipt with `--receipts`. */
export interface KeptReceipt {
  /** `verified`, `invalid` (kept anyway), `absent` (the answer carried none) or `unsaved` (writing failed). */
  status: 'verified' | 'invalid' | 'absent' | 'unsaved';
  /** Why an `invalid` receipt does not check, or why it was not saved. */
  problem?: string;
  /** The receipt file written. */
  file?: string;
}

/**
 * Checks the receipt of the paid answer `answer` (unread: its bytes are what the receipt covers)
 * against the service's published keys and this payment, and writes it with the body to `dir`
 * (`<signature>.json`, `<signature>.body`: `directoryReceiptStore` of `@repo/api-client`).
 */
export async function keepReceipt(
  dir: string,
  request: { method: string; url: string },
  answer: Response,
  payment: PaymentMade,
  fetchImpl: typeof fetch,
): Promise<KeptReceipt> {
  const body = new Uint8Array(await answer.arrayBuffer());
  const evidence = await verifyPaidAnswer(
    answer,
    body,
    {
      url: request.url,
      signature: payment.signature,
      payer: payment.payer,
      amountAtomic: payment.amountAtomic.toString(),
    },
    { fetch: fetchImpl },
  );
  if (!evidence) return { status: 'absent' };
  try {
    await directoryReceiptStore(dir).save({
      ...evidence,
      request,
      signature: payment.signature,
      body,
    });
  } catch (error) {
    return { status: 'unsaved', problem: error instanceof Error ? error.message : String(error) };
  }
  return {
    status: evidence.status,
    ...(evidence.problem ? { problem: evidence.problem } : {}),
    file: path.join(dir, `${payment.signature}.json`),
  };
}

/**
 * `agent-pay verify-receipt FILE [BODY] [--jwks FILE] [--json]`: checks a kept receipt offline and
 * prints its claims (packages/agent-client/README.md, "Receipts").
 * @returns {@link EXIT} `ok` when it checks, `receiptInvalid` when it does not, `usage` when a file
 *   cannot be read
 */
export async function runVerifyReceipt(
  options: VerifyReceiptOptions,
  io: { stdout: (text: string) => void; stderr: (text: string) => void },
): Promise<number> {
  const fail = (code: number, reason: string, message: string): number => {
    if (options.json) io.stdout(`${JSON.stringify({ ok: false, reason, error: message })}\n`);
    io.stderr(`agent-pay: ${message}\n`);
    return code;
  };
  let body: Uint8Array | undefined;
  let keys: { keys: ReceiptKey[] } | undefined;
  try {
    if (options.body !== undefined) body = new Uint8Array(await readFile(options.body));
    if (options.jwks !== undefined)
      keys = JSON.parse(await readFile(options.jwks, 'utf8')) as { keys: ReceiptKey[] };
  } catch (error) {
    return fail(
      EXIT.usage,
      'unreadable',
      `cannot read ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  try {
    const checked = await verifyReceiptFile(options.file, {
      ...(body ? { body } : {}),
      ...(keys ? { keys } : {}),
    });
    if (options.json)
      io.stdout(
        `${JSON.stringify({ ok: true, kid: checked.kid, bodyChecked: checked.bodyChecked, claims: checked.claims })}\n`,
      );
    else {
      const c = checked.claims;
      io.stdout(`receipt verified: signed by ${checked.kid}\n`);
      io.stdout(`transaction ${c.transaction} on ${c.network}\n`);
      io.stdout(`payer ${c.payer}, amount ${c.amount} (atomic units of ${c.asset})\n`);
      io.stdout(`resource ${c.resourceUrl}\n`);
      io.stdout(`issued ${new Date(c.issuedAt * 1000).toISOString()}\n`);
      io.stdout(
        checked.bodyChecked
          ? `body matches responseSha256 ${c.responseSha256}\n`
          : `body not checked (pass it to check responseSha256 ${c.responseSha256})\n`,
      );
    }
    return EXIT.ok;
  } catch (error) {
    if (error instanceof ReceiptCheckError)
      return error.code === 'unreadable'
        ? fail(EXIT.usage, error.code, error.message)
        : fail(EXIT.receiptInvalid, error.code, `receipt does not verify (${error.code}): ${error.message}`);
    throw error;
  }
}
