import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { parse as parseQueryString, type ParsedUrlQuery } from 'node:querystring';
import { errorEnvelope, isAppError } from '@repo/errors';
import type { X402Network } from '@repo/schemas';
import { PAYMENT_HEADER, PAYMENT_REQUIRED_HEADER, PAYMENT_SIGNATURE_HEADER } from '@repo/x402-core';
import { emitPaymentEvent, type PaymentEventListener } from './events';
import type { AnswerStoredListener, PaymentGateway } from './gateway';
import {
  challengeOf,
  createReplayMemory,
  replayableHeaders,
  requestIdOf,
  sendFromMemory,
  setBounded,
  type Challenge,
} from './hot-path-memory';
import { createRouteTemplates } from './hot-path-routes';
import { networkOfQuery, onChallengeSent } from './request';
import { SIGN_IN_HEADER } from './sign-in';

/**
 * A paid synchronous `GET` route of {@link HotPathOptions.routes} whose 402 the hot path may answer for
 * a URL it has not seen (docs/architecture.md, "Fast paths").
 */
export interface HotRoute {
  /** Endpoint identity, as the middleware names it in events (`"GET /api/v1/scout/gaps"`). */
  endpoint: string;
  /**
   * The route's own query validation, the one its full path runs before the payment middleware
   * (market-intel: `parseInput` of `@repo/service-kit` with the route's declared query schema, as its
   * `validate` middleware does): given the query as Express's `req.query` holds it
   * (`querystring.parse` of the raw query string), it returns when the full path accepts the query
   * and throws the AppError of the full path's 400 when it refuses it. Any other throw, or an
   * AppError with another status or with headers, leaves the request to the full path.
   */
  validateQuery(query: ParsedUrlQuery): void;
}

/** Options of {@link createHotPath}. */
export interface HotPathOptions {
  /**
   * The paid synchronous `GET` routes answered from memory, as request paths without a query, each
   * with its endpoint identity (`"GET /api/v1/scout/gaps"`, as the middleware names it in events), or
   * a {@link HotRoute} with the route's query validation, whose new URLs are answered too. A route
   * that must check something before its 402 (a resource that may not exist) does not belong here.
   */
  routes: Readonly<Record<string, string | HotRoute>>;
  /**
   * The payment gateway's `references` (the very object its routes use): a 402 the hot path builds
   * for a new URL carries that URL's request reference. A route whose 402s carry references the hot
   * path cannot compute is never answered for a new URL.
   */
  references?: PaymentGateway['references'];
  /** Told of every answer from memory: `challenged` for a 402, `replayed` for a stored answer. */
  onPaymentEvent?: PaymentEventListener;
  /** With CORS configured, a request carrying `Origin` takes the full path (the CORS middleware answers it). */
  corsConfigured?: boolean;
  /**
   * Most 402 challenges kept (default 500): one per distinct host, forwarded protocol and URL of up
   * to 512 characters.
   */
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
  /**
   * Entries held: 402 challenges of URLs, stored paid answers, and the routes' 402 templates learned
   * (one per route, network, host and forwarded protocol).
   */
  size(): { challenges: number; replays: number; replayBytes: number; routes: number };
}

/** Longest URL whose 402 is remembered whole: longer ones are built from the route's template each time. */
const MAX_REMEMBERED_URL = 512;

/**
 * A query string as Express's query parser and `new URL` read it alike and the hot path may answer:
 * printable ASCII without `#` (raw Unicode, spaces or a fragment take the full path).
 */
const PLAIN_QUERY = /^[\x21\x22\x24-\x7e]*$/;

/**
 * The hot paths of x402 answered before Express (docs/architecture.md, "How a paid request flows (market-intel)"
 * and "Fast paths"): the unpaid 402 challenge of a paid `GET` route and the replay of a used payment
 * on the route it paid for.
 *
 * - **A 402 of a URL already answered** (the same host, forwarded protocol and URL, no body): its
 *   bytes as the full path sent them (`sendPaymentRequired` tells of the 402s it assembles from a
 *   route's template when nothing wraps the response's writes; a 402 sent otherwise is not
 *   remembered), with a fresh `x-request-id` (the caller's, as the access log would have, or a new
 *   one).
 * - **A 402 of a URL not seen yet**, for a {@link HotRoute} (one with `validateQuery`): the query is
 *   validated with the route's own validation; a query it refuses is the full path's 400 envelope,
 *   one it accepts is the 402 built from what the first 402 of the route, network, host and
 *   forwarded protocol taught (its headers, the origin of its `resource`, the templates of its body
 *   and `PAYMENT-REQUIRED`, each checked to give that 402 back byte for byte) with this URL's
 *   `resource` and request reference. Until that first 402 has been sent, or when the URL's query is
 *   not plain printable ASCII, the full path answers.
 * - **A replay**: the stored paid answer of its URL and payment header (one payment, one answer), as
 *   the ledger stored it, told through the `onAnswerStored` option of `requirePayment`, which is
 *   given {@link HotPath.onAnswerStored}.
 *
 * Anything else (another method or path, a payment header that was not answered before, a body, a
 * CORS request when CORS is configured, a network the full path refuses) goes to the full path
 * unchanged. Answers from here skip the middleware stack, the router, the access log and the HTTP
 * histogram: 402s and replays are counted in the payment events (`challenged`, `replayed`), 400s
 * not at all. Memory is bounded: at most `maxChallenges` URLs' 402s (URLs of up to 512 characters),
 * `maxReplayBytes` of paid answers and 64 routes' templates, the oldest going first; a flood of new
 * URLs costs a validation and a template fill each, and remembers no more than that.
 */
export function createHotPath(options: HotPathOptions): HotPath {
  const routes = new Map(
    Object.entries(options.routes).map(
      ([path, route]): [string, Partial<HotRoute> & { endpoint: string }] => [
        path,
        typeof route === 'string' ? { endpoint: route } : route,
      ],
    ),
  );
  const maxChallenges = options.maxChallenges ?? 500;
  const challenges = new Map<string, Challenge>();
  const replays = createReplayMemory(options.maxReplayBytes ?? 4 * 1024 * 1024);
  const templates = createRouteTemplates(options.references?.secret);
  // The paid requests passed on to the full path, until it tells of their stored answer.
  const awaitingAnswer = new WeakMap<ServerResponse, { key: string; endpoint: string }>();

  const remember402 = (key: string, entry: Challenge): void => {
    setBounded(challenges, key, entry, maxChallenges);
  };

  /**
   * Answers the unpaid `GET` of a URL not remembered from the route's template, or its 400; `false`
   * when the full path must answer it.
   */
  const answerNewUrl = (
    req: IncomingMessage,
    res: ServerResponse,
    route: HotRoute,
    path: string,
    url: string,
    query: number,
    origin: string,
    urlKey: string,
  ): boolean => {
    const raw = query === -1 ? '' : url.slice(query + 1);
    if (!PLAIN_QUERY.test(raw)) return false;
    try {
      route.validateQuery(parseQueryString(raw));
    } catch (error) {
      const headers = templates.originHeaders(origin);
      if (!headers || !isAppError(error) || error.status !== 400 || Object.keys(error.headers).length > 0)
        return false;
      const id = requestIdOf(req);
      const body = JSON.stringify(errorEnvelope(error.code, error.message, id, error.details));
      sendFromMemory(res, 400, headers, id, Buffer.from(body));
      return true;
    }
    const parsed = new URL(url, 'http://localhost');
    let network: X402Network;
    try {
      network = networkOfQuery(parsed.searchParams);
    } catch {
      return false;
    }
    const id = requestIdOf(req);
    const built = templates.challenge(path, network, origin, url, parsed, id);
    if (!built) return false;
    const { headers, body, paymentRequired } = built;
    sendFromMemory(res, 402, headers, id, Buffer.from(body), paymentRequired?.());
    emitPaymentEvent(options.onPaymentEvent, { type: 'challenged', network, endpoint: route.endpoint });
    if (url.length <= MAX_REMEMBERED_URL) {
      const challenge = challengeOf(402, { 'x-request-id': id }, body, route.endpoint, network);
      if (challenge)
        remember402(urlKey, { ...challenge, headers, ...(paymentRequired ? { paymentRequired } : {}) });
    }
    return true;
  };

  return {
    wrap(listener) {
      return (req, res) => {
        const url = req.url ?? '/';
        const q = url.indexOf('?');
        const path = q === -1 ? url : url.slice(0, q);
        const route = req.method === 'GET' ? routes.get(path) : undefined;
        // A sign-in proof is checked against the database (re-access, or a replay's payer): full path.
        if (
          route === undefined ||
          (options.corsConfigured && req.headers.origin !== undefined) ||
          req.headers[SIGN_IN_HEADER] !== undefined
        ) {
          listener(req, res);
          return;
        }
        const { endpoint } = route;
        const v2 = req.headers[PAYMENT_SIGNATURE_HEADER];
        const v1 = req.headers[PAYMENT_HEADER];
        const payment = typeof v2 === 'string' ? `2 ${v2}` : typeof v1 === 'string' ? `1 ${v1}` : undefined;
        // A body would enter the request reference: only body-less requests have a remembered 402.
        const bodyless =
          req.headers['transfer-encoding'] === undefined &&
          (req.headers['content-length'] === undefined || req.headers['content-length'] === '0');
        if (payment === undefined && v2 === undefined && v1 === undefined && bodyless) {
          const proto = req.headers['x-forwarded-proto'];
          const origin = `${req.headers.host ?? ''}\n${typeof proto === 'string' ? proto : ''}`;
          const key = `${origin}\n${url}`;
          const hit = challenges.get(key);
          if (hit) {
            const id = requestIdOf(req);
            sendFromMemory(
              res,
              402,
              hit.headers,
              id,
              Buffer.from(hit.prefix + JSON.stringify(id) + hit.suffix),
              hit.paymentRequired?.(),
            );
            emitPaymentEvent(options.onPaymentEvent, { type: 'challenged', network: hit.network, endpoint });
            return;
          }
          const { validateQuery } = route;
          if (validateQuery && answerNewUrl(req, res, route as HotRoute, path, url, q, origin, key)) return;
          // The full path's sendPaymentRequired tells of the challenge it sent (no capture of the
          // response's writes, which cost the first request of every URL more than the rest).
          onChallengeSent(res, (sent) => {
            // Every route learns its template: a 402 with a sign-in challenge is answered again only
            // with a fresh one, which the template builds.
            templates.learn(sent, path, url, origin);
            if (url.length > MAX_REMEMBERED_URL) return;
            const challenge = challengeOf(sent.status, sent.headers, sent.body, endpoint, sent.network);
            const paymentRequired = challenge && templates.freshPaymentRequired(sent, path, url, origin);
            if (!challenge || paymentRequired === undefined) return;
            remember402(
              key,
              paymentRequired === null
                ? challenge
                : {
                    ...challenge,
                    headers: challenge.headers.filter(([name]) => name !== PAYMENT_REQUIRED_HEADER),
                    paymentRequired,
                  },
            );
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
          sendFromMemory(res, hit.status, hit.headers, requestIdOf(req), hit.body);
          emitPaymentEvent(options.onPaymentEvent, { type: 'replayed', network: hit.network, endpoint });
          return;
        }
        // The full path tells of the answer it stored for this payment (one payment, one answer).
        awaitingAnswer.set(res, { key, endpoint });
        listener(req, res);
      };
    },
    onAnswerStored: ({ status, headers, body, network, payerOnly }, res) => {
      const awaited = awaitingAnswer.get(res);
      if (!awaited) return;
      awaitingAnswer.delete(res);
      // Answered again only to its payer signed in: the full path checks the proof every time.
      if (status < 200 || status >= 300 || payerOnly) return;
      const kept = replayableHeaders(headers);
      const bytes =
        body.length +
        awaited.key.length +
        kept.reduce((n, [name, value]) => n + name.length + String(value).length, 0);
      replays.remember(awaited.key, {
        bytes,
        status,
        headers: kept,
        body,
        network,
        endpoint: awaited.endpoint,
      });
    },
    size: () => ({
      challenges: challenges.size,
      ...replays.size(),
      routes: templates.size(),
    }),
  };
}
