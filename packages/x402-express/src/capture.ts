import type { ServerResponse } from 'node:http';
import type { Request, Response } from 'express';
import { requestIdOf } from '@repo/errors';
import type { VerifiedPayment } from '@repo/x402-core';
import { PAYMENT_RESPONSE_HEADER, PAYMENT_V2_RESPONSE_HEADER } from '@repo/x402-core';
import type { PaymentClaim, PaymentLedger } from '@repo/x402-ledger';
import type { AnswerStoredListener } from './gateway';
import { tellAnswerStored } from './responses';
import { holdClaim } from './sightings';

/** A response's answer as its handler ended it, handed to {@link interceptAnswer}'s `onEnd`. */
export interface EndedAnswer {
  /** The status code when `end` was called. */
  status: number;
  /** Every chunk written, then the one `end` carried, as bytes. */
  body: Buffer;
  /** Ends the response as the handler asked (its last chunk, encoding and callback). */
  send(): void;
  /** Ends the response with `body` in place of the handler's last chunk. */
  sendInstead(body: string): void;
}

type EndFn = (chunk?: unknown, encoding?: unknown, callback?: unknown) => ServerResponse;
type WriteFn = (chunk: unknown, encoding?: unknown, callback?: unknown) => boolean;

function toBuffer(chunk: unknown, encoding: unknown): Buffer | undefined {
  if (chunk === undefined || chunk === null || typeof chunk === 'function') return undefined;
  if (Buffer.isBuffer(chunk)) return chunk;
  if (chunk instanceof Uint8Array) return Buffer.from(chunk);
  return Buffer.from(String(chunk), typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
}

/**
 * The package's one response capture, used by `requirePayment` (the paid answer it stores): wraps `res.write`/`res.end` so that the bytes are
 * collected as they are written (writes go through at once) and, at the first `end`, restores both and
 * hands the answer to `onEnd`, which ends the response, at once or later, with `send` or `sendInstead`
 * (or destroys it). `end` returns `res`, as node's does.
 */
export function interceptAnswer(res: ServerResponse, onEnd: (answer: EndedAnswer) => void): void {
  const chunks: Buffer[] = [];
  const target = res as unknown as { write: WriteFn; end: EndFn };
  const originalWrite = target.write;
  const originalEnd = target.end;
  let ended = false;
  target.write = function write(chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
    const buffer = toBuffer(chunk, encoding);
    if (buffer) chunks.push(buffer);
    return originalWrite.call(res, chunk, encoding, callback);
  };
  target.end = function end(chunk?: unknown, encoding?: unknown, callback?: unknown): ServerResponse {
    if (ended) return originalEnd.call(res, chunk, encoding, callback);
    ended = true;
    target.write = originalWrite;
    target.end = originalEnd;
    const buffer = toBuffer(chunk, encoding);
    if (buffer) chunks.push(buffer);
    onEnd({
      status: res.statusCode,
      body: Buffer.concat(chunks),
      send: () => void originalEnd.call(res, chunk, encoding, callback),
      sendInstead: (body) => void originalEnd.call(res, body),
    });
    return res;
  };
}

/** Headers that belong to one connection or one request and are not stored for replay. */
const UNSTORED_HEADERS = new Set([
  'date',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'x-request-id',
  'set-cookie',
]);

/** Headers of the answer that must not survive when it is replaced by a 503. */
const ANSWER_HEADERS = [
  'content-type',
  'content-length',
  'etag',
  'last-modified',
  'cache-control',
  PAYMENT_RESPONSE_HEADER,
  PAYMENT_V2_RESPONSE_HEADER,
];

/**
 * Captures the paid answer ({@link interceptAnswer}) so that it is sent only once it is stored in the ledger
 * (one payment, one answer): while the handler runs the claim's lease is renewed every third of the
 * lease; when storing fails or the claim was taken over, the answer is replaced by a `503
 * service_unavailable` with `Retry-After: 1` (a retry replays the stored answer or, if none was
 * stored, runs the handler once more). A handler that already streamed part of its answer is cut off
 * instead. A response closed without `end` releases the lease.
 *
 * `unrecorded` is a verification the ledger does not hold yet: the stored answer (or, after a 5xx, a
 * failed store or a closed response, the released lease) records it in the same statement, or the
 * verified mark does once the handler has run for {@link VERIFIED_MARK_DELAY_MS}.
 *
 * `onAnswerStored` is told of the stored answer before it is sent. `beforeStore` (the receipt's
 * signature, `receiptSigner`) runs on a sub-500 answer before it is stored and may set its headers;
 * its failure leaves the answer as it was.
 */
export function captureAnswer(
  req: Request,
  res: Response,
  ledger: PaymentLedger,
  claim: PaymentClaim,
  unrecorded: VerifiedPayment | undefined,
  onAnswerStored: AnswerStoredListener | undefined,
  beforeStore?: (status: number, body: Buffer) => Promise<void>,
): void {
  const held = holdClaim(ledger, claim, unrecorded);
  let finished = false;
  interceptAnswer(res, (ended) => {
    // Closed before its end: the lease is already being released.
    if (finished) return ended.send();
    finished = true;
    held.stop();
    const { status } = ended;
    let answer: { status: number; headers: Record<string, string | string[]>; body: Buffer } | undefined;
    let stored: Promise<boolean>;
    if (status >= 500) {
      stored = held.release().then(
        () => true,
        () => true, // the lease expires on its own; a 5xx is no answer to keep
      );
    } else {
      const store = () => {
        answer = { status, headers: storedHeaders(res), body: ended.body };
        return held.store({ status, headers: answer.headers, body: answer.body.toString('utf8') });
      };
      stored = beforeStore ? beforeStore(status, ended.body).then(store, store) : store();
    }
    stored
      .catch(() => false)
      .then((ok) => {
        if (ok) {
          if (answer) tellAnswerStored(onAnswerStored, res, { network: claim.network, ...answer });
          ended.send();
          return;
        }
        if (res.headersSent) {
          res.destroy();
          return;
        }
        for (const name of ANSWER_HEADERS) res.removeHeader(name);
        res.statusCode = 503;
        res.setHeader('content-type', 'application/json; charset=utf-8');
        res.setHeader('retry-after', '1');
        ended.sendInstead(
          JSON.stringify({
            error:
              'The paid answer could not be recorded; retry with the same payment (it is not charged twice)',
            code: 'service_unavailable',
            requestId: requestIdOf(req),
          }),
        );
      });
  });
  res.on('close', () => {
    held.stop();
    if (!finished) {
      finished = true;
      held.release().catch(() => undefined);
    }
  });
}

function storedHeaders(res: Response): Record<string, string | string[]> {
  const stored: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(res.getHeaders())) {
    if (value === undefined || UNSTORED_HEADERS.has(name.toLowerCase())) continue;
    stored[name.toLowerCase()] = Array.isArray(value) ? value.map(String) : String(value);
  }
  return stored;
}
