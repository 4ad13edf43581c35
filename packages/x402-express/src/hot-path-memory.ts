import { randomUUID } from 'node:crypto';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { X402Network } from '@repo/schemas';
import { PAYMENT_REQUIRED_HEADER } from '@repo/x402-core';

/** A header list as the hot path sets it again: `[name, value]` pairs, names lower case. */
export type HeaderList = [string, string | string[]][];

/**
 * A 402 as the full path sent it, but for the request id it carries in the body and a header: the
 * body's text around the id (slices of the one string that was sent) and the headers' values as sent.
 */
export interface Challenge {
  /** Its headers; with a sign-in challenge, all but `PAYMENT-REQUIRED` ({@link Challenge.paymentRequired}). */
  headers: HeaderList;
  /**
   * With sign-in-with-x: its `PAYMENT-REQUIRED` with a fresh challenge, built for every 402 sent
   * (a challenge is never sent twice).
   */
  paymentRequired?: () => string;
  /** The body up to and including `"requestId":`. */
  prefix: string;
  /** The body after the request id's JSON string. */
  suffix: string;
  network: X402Network;
  endpoint: string;
}

/** A paid answer as the full path sent it (the stored answer the ledger replays). */
export interface Replay {
  /** Bytes it holds: body, headers and key, as counted against `maxReplayBytes`. */
  bytes: number;
  status: number;
  headers: HeaderList;
  body: Buffer;
  network: X402Network;
  endpoint: string;
}

// Set per request by node or by us, never replayed from a remembered answer.
const PER_REQUEST_HEADERS = new Set([
  'x-request-id',
  'content-length',
  'date',
  'connection',
  'keep-alive',
  'transfer-encoding',
]);

const REQUEST_ID_MAX = 200;

/** Adds `value` under `key`, forgetting the oldest entry when `map` holds `max`. */
export function setBounded<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  if (!map.has(key) && map.size >= max) {
    const oldest = map.keys().next();
    if (!oldest.done) map.delete(oldest.value);
  }
  map.set(key, value);
}

/** The caller's `x-request-id` (1 to 200 characters), as the access log would take it, else a new UUID. */
export function requestIdOf(req: IncomingMessage): string {
  const header = req.headers['x-request-id'];
  return typeof header === 'string' && header.length > 0 && header.length <= REQUEST_ID_MAX
    ? header
    : randomUUID();
}

/** The headers of a sent answer that an answer from memory sets again (not those set per request). */
export function replayableHeaders(headers: OutgoingHttpHeaders): HeaderList {
  const out: HeaderList = [];
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || PER_REQUEST_HEADERS.has(name)) continue;
    out.push([name, Array.isArray(value) ? value.map(String) : String(value)]);
  }
  return out;
}

/**
 * The challenge a 402 of the full path makes: its bytes around the request id it names once in its
 * body, or `undefined` when it is no 402 or cannot be answered again with another request id.
 */
export function challengeOf(
  status: number,
  headers: OutgoingHttpHeaders,
  body: string,
  endpoint: string,
  network: unknown,
): Challenge | undefined {
  const id = headers['x-request-id'];
  // An ETag is computed from the bytes, which differ with the request id.
  if (status !== 402 || typeof id !== 'string' || headers.etag !== undefined) return undefined;
  if (network !== 'solana' && network !== 'solana-devnet') return undefined;
  const marker = `"requestId":${JSON.stringify(id)}`;
  const at = body.indexOf(marker);
  if (at === -1 || body.indexOf(marker, at + 1) !== -1) return undefined;
  return {
    headers: replayableHeaders(headers),
    prefix: body.slice(0, at + '"requestId":'.length),
    suffix: body.slice(at + marker.length),
    network,
    endpoint,
  };
}

/**
 * Sends an answer from memory: its headers (and `PAYMENT-REQUIRED` when `paymentRequired` is given),
 * the request's id, its length, then the body.
 */
export function sendFromMemory(
  res: ServerResponse,
  status: number,
  headers: HeaderList,
  requestId: string,
  body: Buffer,
  paymentRequired?: string,
): void {
  for (const [name, value] of headers) res.setHeader(name, value);
  if (paymentRequired !== undefined) res.setHeader(PAYMENT_REQUIRED_HEADER, paymentRequired);
  res.setHeader('x-request-id', requestId);
  res.setHeader('content-length', body.length);
  res.writeHead(status);
  res.end(body);
}

/** The stored paid answers kept for replays, within a budget of bytes, oldest first out. */
export interface ReplayMemory {
  get(key: string): Replay | undefined;
  /** Keeps `entry` under `key` unless one is kept there already or it alone exceeds the budget. */
  remember(key: string, entry: Replay): void;
  size(): { replays: number; replayBytes: number };
}

/** A {@link ReplayMemory} of at most `maxBytes` bytes (as each entry counts its own). */
export function createReplayMemory(maxBytes: number): ReplayMemory {
  const replays = new Map<string, Replay>();
  let replayBytes = 0;
  return {
    get: (key) => replays.get(key),
    remember(key, entry) {
      if (entry.bytes > maxBytes || replays.has(key)) return;
      replayBytes += entry.bytes;
      replays.set(key, entry);
      for (const [oldKey, old] of replays) {
        if (replayBytes <= maxBytes) break;
        replays.delete(oldKey);
        replayBytes -= old.bytes;
      }
    },
    size: () => ({ replays: replays.size, replayBytes }),
  };
}
