import { randomUUID } from 'node:crypto';
import type { IncomingMessage, OutgoingHttpHeaders, RequestListener, ServerResponse } from 'node:http';
import type { X402Network } from '@repo/schemas';
import { PAYMENT_HEADER, PAYMENT_SIGNATURE_HEADER } from '@repo/x402-core';
import { emitPaymentEvent, type PaymentEventListener } from './events';
import type { AnswerStoredListener } from './gateway';
import { onChallengeSent } from './request';

/** Options of {@link createHotPath}. */
export interface HotPathOptions {
  /**
   * The paid synchronous `GET` routes answered from memory, as request paths without a query, each
   * with its endpoint identity (`"GET /api/v1/scout/gaps"`, as the middleware names it in events).
   * A route that must check something before its 402 (a resource that may not exist) does not belong
   * here.
   */
  routes: Readonly<Record<string, string>>;
  /** Told of every answer from memory: `challenged` for a 402, `replayed` for a stored answer. */
  onPaymentEvent?: PaymentEventListener;
  /** With CORS configured, a request carrying `Origin` takes the full path (the CORS middleware answers it). */
  corsConfigured?: boolean;
  /** Most 402 challenges kept (default 500): one per distinct host, forwarded protocol and URL. */
  maxChallenges?: number;
  /** Most bytes of stored paid answers (bodies and headers) kept for replays (default 4 MiB). */
  maxReplayBytes?: number;
}

/** What {@link createHotPath} returns. */
export interface HotPath {
  /**
   * Wraps the service's request listener: a request the hot path can answer from memory is answered
   * there; any other goes to `listener`, and a 402 challenge or paid answer it sends for a hot route
   * is remembered on the way out.
   */
  wrap(listener: RequestListener): RequestListener;
  /**
   * The `onAnswerStored` option to give `requirePayment` (and `acceptPayment`) of the full path's paid
   * routes: remembers the stored 2xx paid answer of a request this hot path passed on, for the replays
   * of its URL and payment header. Answers of other requests are ignored.
   */
  onAnswerStored: AnswerStoredListener;
  /** Entries held: 402 challenges and stored paid answers. */
  size(): { challenges: number; replays: number; replayBytes: number };
}

/**
 * A 402 as the full path sent it, but for the request id it carries in the body and a header: the
 * body's text around the id (slices of the one string that was sent) and the headers' values as sent.
 */
interface Challenge {
  headers: [string, string | string[]][];
  /** The body up to and including `"requestId":`. */
  prefix: string;
  /** The body after the request id's JSON string. */
  suffix: string;
  network: X402Network;
  endpoint: string;
}

/** A paid answer as the full path sent it (the stored answer the ledger replays). */
interface Replay {
  /** Bytes it holds: body, headers and key, as counted against `maxReplayBytes`. */
  bytes: number;
  status: number;
  headers: [string, string | string[]][];
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

function requestIdOf(req: IncomingMessage): string {
  const header = req.headers['x-request-id'];
  return typeof header === 'string' && header.length > 0 && header.length <= REQUEST_ID_MAX
    ? header
    : randomUUID();
}

function replayableHeaders(headers: OutgoingHttpHeaders): [string, string | string[]][] {
  const out: [string, string | string[]][] = [];
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
function challengeOf(
  status: number,
  headers: OutgoingHttpHeaders,
  body: string,
  endpoint: string,
  network: unknown,
): Challenge | undefined {
  const id = headers['x-request-id'];
  if (status !== 402 || typeof id !== 'string') return undefined;
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
 * The hot paths of x402 answered from memory (docs/architecture.md, "How a paid request flows"): the
 * unpaid 402 challenge of a paid `GET` route and the replay of a used payment on the route it paid
 * for. Both answers are pure functions of the request once the full path has given them: a 402 of
 * its host, forwarded protocol and URL when the request has no body (the body and `PAYMENT-REQUIRED`
 * carry the URL and its request reference, nothing else of the request but its id), a stored paid
 * answer of its URL and payment header (one payment, one answer). So the first request of each takes the full path (validation,
 * security headers, access log, metrics, the ledger) and its answer is remembered as bytes (a 402 as
 * `sendPaymentRequired` sent it, which tells of the challenges it assembles from a route's template
 * when nothing wraps the response's writes: a 402 sent otherwise is not remembered; a paid
 * answer as the full path stored it in the ledger, told through the `onAnswerStored` option of
 * `requirePayment`, which is given {@link HotPath.onAnswerStored}); the next
 * ones are answered with those bytes, a fresh `x-request-id` (the caller's, as the access log would
 * have, or a new one), and a `challenged` or `replayed` payment event, without the middleware stack,
 * the router, the query validation, the reference HMAC or a database query. They are counted in the
 * payment events, not timed in the HTTP histogram, and not access-logged.
 * Memory is bounded: the oldest entries go first.
 */
export function createHotPath(options: HotPathOptions): HotPath {
  const routes = new Map(Object.entries(options.routes));
  const maxChallenges = options.maxChallenges ?? 500;
  const maxReplayBytes = options.maxReplayBytes ?? 4 * 1024 * 1024;
  const challenges = new Map<string, Challenge>();
  const replays = new Map<string, Replay>();
  // The paid requests passed on to the full path, until it tells of their stored answer.
  const awaitingAnswer = new WeakMap<ServerResponse, { key: string; endpoint: string }>();
  let replayBytes = 0;

  const remember402 = (key: string, entry: Challenge): void => {
    if (challenges.size >= maxChallenges) {
      const oldest = challenges.keys().next();
      if (!oldest.done) challenges.delete(oldest.value);
    }
    challenges.set(key, entry);
  };
  const rememberReplay = (key: string, entry: Replay): void => {
    if (entry.bytes > maxReplayBytes || replays.has(key)) return;
    replayBytes += entry.bytes;
    replays.set(key, entry);
    for (const [oldKey, old] of replays) {
      if (replayBytes <= maxReplayBytes) break;
      replays.delete(oldKey);
      replayBytes -= old.bytes;
    }
  };

  const send = (
    res: ServerResponse,
    status: number,
    headers: [string, string | string[]][],
    requestId: string,
    body: Buffer,
  ): void => {
    for (const [name, value] of headers) res.setHeader(name, value);
    res.setHeader('x-request-id', requestId);
    res.setHeader('content-length', body.length);
    res.writeHead(status);
    res.end(body);
  };

  return {
    wrap(listener) {
      return (req, res) => {
        const url = req.url ?? '/';
        const q = url.indexOf('?');
        const path = q === -1 ? url : url.slice(0, q);
        const endpoint = req.method === 'GET' ? routes.get(path) : undefined;
        if (endpoint === undefined || (options.corsConfigured && req.headers.origin !== undefined)) {
          listener(req, res);
          return;
        }
        const v2 = req.headers[PAYMENT_SIGNATURE_HEADER];
        const v1 = req.headers[PAYMENT_HEADER];
        const payment = typeof v2 === 'string' ? `2 ${v2}` : typeof v1 === 'string' ? `1 ${v1}` : undefined;
        // A body would enter the request reference: only body-less requests have a remembered 402.
        const bodyless =
          req.headers['transfer-encoding'] === undefined &&
          (req.headers['content-length'] === undefined || req.headers['content-length'] === '0');
        if (payment === undefined && v2 === undefined && v1 === undefined && bodyless) {
          const proto = req.headers['x-forwarded-proto'];
          const key = `${req.headers.host ?? ''}\n${typeof proto === 'string' ? proto : ''}\n${url}`;
          const hit = challenges.get(key);
          if (hit) {
            const id = requestIdOf(req);
            send(res, 402, hit.headers, id, Buffer.from(hit.prefix + JSON.stringify(id) + hit.suffix));
            emitPaymentEvent(options.onPaymentEvent, { type: 'challenged', network: hit.network, endpoint });
            return;
          }
          // The full path's sendPaymentRequired tells of the challenge it sent (no capture of the
          // response's writes, which cost the first request of every URL more than the rest).
          onChallengeSent(res, (sent) => {
            const challenge = challengeOf(sent.status, sent.headers, sent.body, endpoint, sent.network);
            if (challenge) remember402(key, challenge);
          });
          listener(req, res);
          return;
        }
        if (payment === undefined || !bodyless) {
          // A repeated payment header, or a body (it enters the request a payment is bound to): the
          // full path answers it.
          listener(req, res);
          return;
        }
        // The whole URL: its `network` must agree with the payment's, and its query is part of the
        // request the payment is bound to, as the full path checks.
        const key = `${url}\n${payment}`;
        const hit = replays.get(key);
        if (hit) {
          send(res, hit.status, hit.headers, requestIdOf(req), hit.body);
          emitPaymentEvent(options.onPaymentEvent, { type: 'replayed', network: hit.network, endpoint });
          return;
        }
        // The full path tells of the answer it stored for this payment (one payment, one answer).
        awaitingAnswer.set(res, { key, endpoint });
        listener(req, res);
      };
    },
    onAnswerStored: ({ status, headers, body, network }, res) => {
      const awaited = awaitingAnswer.get(res);
      if (!awaited) return;
      awaitingAnswer.delete(res);
      if (status < 200 || status >= 300) return;
      const kept = replayableHeaders(headers);
      const bytes =
        body.length +
        awaited.key.length +
        kept.reduce((n, [name, value]) => n + name.length + String(value).length, 0);
      rememberReplay(awaited.key, {
        bytes,
        status,
        headers: kept,
        body,
        network,
        endpoint: awaited.endpoint,
      });
    },
    size: () => ({ challenges: challenges.size, replays: replays.size, replayBytes }),
  };
}
