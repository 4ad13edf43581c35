import type { ServerResponse } from 'node:http';
import type { X402Network } from '@repo/schemas';

/**
 * A paid answer as the ledger holds it (the one answer of its payment): what
 * `requirePayment`'s capture stored, or what the ledger replayed.
 */
export interface PaidAnswer {
  /** The network the payment was made on. */
  network: X402Network;
  /** HTTP status. */
  status: number;
  /** Response headers as stored (lower-case names, without per-connection ones such as `date`). */
  headers: Record<string, string | string[]>;
  /** The body as sent. */
  body: Buffer;
}

/** Told of the paid answer of one response. */
export type PaidAnswerListener = (answer: PaidAnswer) => void;

const listeners = new WeakMap<ServerResponse, PaidAnswerListener>();

/**
 * Asks to be told of the paid answer `res` will send (the hot path remembers it for replays), so that
 * nobody captures and parses the answer a second time. At most one listener per response; it is told
 * at most once, before the answer is sent.
 */
export function onPaidAnswer(res: ServerResponse, listener: PaidAnswerListener): void {
  listeners.set(res, listener);
}

/**
 * Tells the listener of `res` (if any) that `answer` is its paid answer, stored in the ledger and
 * about to be sent. A listener's failure is swallowed: remembering an answer is an optimisation.
 */
export function paidAnswerSent(res: ServerResponse, answer: PaidAnswer): void {
  const listener = listeners.get(res);
  if (!listener) return;
  listeners.delete(res);
  try {
    listener(answer);
  } catch {
    // The answer is sent as stored whatever the listener did.
  }
}
