import {
  canonicalRequestText,
  PAYMENT_REQUIRED_HEADER,
  requestReference,
  sha256Hex,
  X402_VERSION_HEADER,
} from '@repo/x402-core';
import type { X402Network } from '@repo/schemas';
import type { PaymentGateway } from './gateway';
import { replayableHeaders, setBounded, type HeaderList } from './hot-path-memory';
import { compileJsonTemplate, type BodySlot, type JsonTemplate, type SentChallenge } from './request';

/** The headers the payment middleware adds to a 402 (the rest, helmet's and the type, every answer has). */
const X402_HEADERS = new Set([X402_VERSION_HEADER, PAYMENT_REQUIRED_HEADER]);

/** Most routes' templates (route, network, host, forwarded protocol) and hosts' header lists kept. */
const MAX_ROUTE_TEMPLATES = 64;

/** The body hash of a request without a body, as the request reference's canonical text has it. */
const NO_BODY_SHA256 = sha256Hex(JSON.stringify(null));

type HeaderSlot = 'error' | 'url' | 'reference';

/**
 * What every 402 of one route on one network, host and forwarded protocol shares, learned from the
 * first one the full path sent: its headers (but `PAYMENT-REQUIRED`), its resource URL's origin, and
 * the templates of its body and `PAYMENT-REQUIRED`.
 */
interface RouteChallenge {
  headers: HeaderList;
  /** `resource` is this followed by the request URL. */
  base: string;
  error: string;
  body: JsonTemplate<BodySlot>;
  paymentRequired: PaymentRequiredTemplate | undefined;
  /** Whether its 402s carry a request reference (its gateway has `references`). */
  withReference: boolean;
}

/** A `PAYMENT-REQUIRED` template learned from a header the full path sent, and its `error`. */
interface PaymentRequiredTemplate {
  template: JsonTemplate<HeaderSlot>;
  error: string;
}

/** The URL's reference-bearing values of a sent `PAYMENT-REQUIRED`, decoded. */
interface DecodedPaymentRequired {
  error: string;
  resource: Record<string, unknown>;
  accepts: Record<string, unknown>[];
}

function decodePaymentRequired(header: string): DecodedPaymentRequired | undefined {
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(header, 'base64').toString('utf8'));
  } catch {
    return undefined;
  }
  const d = decoded as Partial<DecodedPaymentRequired> | null;
  if (typeof d !== 'object' || d === null || typeof d.error !== 'string') return undefined;
  if (typeof d.resource !== 'object' || d.resource === null || !Array.isArray(d.accepts)) return undefined;
  if (!d.accepts.every((a) => typeof a === 'object' && a !== null)) return undefined;
  return d as DecodedPaymentRequired;
}

/**
 * The template of a route's `PAYMENT-REQUIRED`, learned from one the full path sent for the URL whose
 * `resource` is `url` and reference `reference` (`''`: none): the error, `resource.url`, and each
 * requirement's `extra` values equal to the reference (`reference`, `memo`) are its slots. `undefined`
 * when the template does not give the sent header back byte for byte.
 */
function learnPaymentRequired(
  header: string,
  url: string,
  reference: string,
): PaymentRequiredTemplate | undefined {
  const decoded = decodePaymentRequired(header);
  if (!decoded || decoded.resource.url !== url) return undefined;
  const withReference = (requirement: Record<string, unknown>, value: string): Record<string, unknown> => {
    const extra = requirement.extra as Record<string, unknown> | undefined;
    if (reference === '' || typeof extra !== 'object' || extra === null) return requirement;
    const filled: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(extra)) filled[key] = v === reference ? value : v;
    return { ...requirement, extra: filled };
  };
  const template = compileJsonTemplate(['error', 'url', 'reference'], (v) => ({
    ...decoded,
    error: v.error,
    resource: { ...decoded.resource, url: v.url },
    accepts: decoded.accepts.map((requirement) => withReference(requirement, v.reference)),
  }));
  if (!template || template.base64({ error: decoded.error, url, reference }) !== header) return undefined;
  return { template, error: decoded.error };
}

/** The 402 of a URL not seen yet, built from its route's template: headers and body (request id filled in). */
export interface BuiltChallenge {
  headers: HeaderList;
  body: string;
}

/**
 * The hot path's knowledge of its routes' 402s (docs/architecture.md, "Fast paths"): learned from the
 * first 402 the full path sent per route, network, host and forwarded protocol (`origin` is the host
 * and the forwarded protocol joined by a newline), at most 64 of each, oldest first out.
 */
export interface RouteTemplates {
  /**
   * Learns what the 402s of the route at `path` share from one the full path sent for `url` (path and
   * query), unless known: only when the URL's reference, the body and `PAYMENT-REQUIRED` are given
   * back byte for byte.
   */
  learn(sent: SentChallenge, path: string, url: string, origin: string): void;
  /**
   * The 402 of `url` (path and query; `parsed` is it as a `URL`) on `network`, with `requestId`, or
   * `undefined` when no 402 of its route, network and origin was learned yet.
   */
  challenge(
    path: string,
    network: X402Network,
    origin: string,
    url: string,
    parsed: URL,
    requestId: string,
  ): BuiltChallenge | undefined;
  /** The headers every answer of the full path to `origin` carries (helmet's, the content type), once learned. */
  originHeaders(origin: string): HeaderList | undefined;
  /** Routes' templates held. */
  size(): number;
}

/**
 * The {@link RouteTemplates} of a hot path whose gateway's request references use `secret` (absent:
 * its 402s carry none, and a route whose 402s carry one is not learned).
 */
export function createRouteTemplates(
  secret: NonNullable<PaymentGateway['references']>['secret'] | undefined,
): RouteTemplates {
  // Per route, network, host and forwarded protocol: what its 402s share.
  const routeChallenges = new Map<string, RouteChallenge>();
  // Per host and forwarded protocol: the headers every answer of the full path carries (helmet's,
  // the content type), for the 400s of refused queries.
  const originHeaders = new Map<string, HeaderList>();
  // Per route and network: the last PAYMENT-REQUIRED template learned, tried first for another host.
  const paymentRequiredTemplates = new Map<string, PaymentRequiredTemplate>();

  // The request reference of a body-less GET of `url`, as requirementsForRequest computes it.
  const referenceOf = (url: URL): string | undefined =>
    secret === undefined
      ? undefined
      : requestReference(
          secret,
          canonicalRequestText({
            method: 'GET',
            path: url.pathname,
            query: url.searchParams,
            bodySha256: NO_BODY_SHA256,
          }),
        );

  return {
    learn(sent, path, url, origin) {
      const network = sent.network;
      if (sent.status !== 402 || (network !== 'solana' && network !== 'solana-devnet')) return;
      const key = `${path}\n${network}\n${origin}`;
      if (routeChallenges.has(key)) return;
      const { template, values } = sent;
      const id = sent.headers['x-request-id'];
      // An ETag is computed from the bytes, which differ with the URL and the request id.
      if (typeof id !== 'string' || sent.headers.etag !== undefined || !values.url.endsWith(url)) return;
      if (template.json({ requestId: id, error: sent.error, ...values }) !== sent.body) return;
      // A route whose gateway has no references offers none; one whose reference the hot path
      // cannot compute (another secret, another canonical request) is not learned.
      const withReference = values.reference !== '';
      if (withReference && referenceOf(new URL(url, 'http://localhost')) !== values.reference) return;
      const header = sent.headers[PAYMENT_REQUIRED_HEADER];
      let paymentRequired: PaymentRequiredTemplate | undefined;
      if (header !== undefined) {
        if (typeof header !== 'string') return;
        const templateKey = `${path}\n${network}`;
        const known = paymentRequiredTemplates.get(templateKey);
        paymentRequired =
          known && known.template.base64({ error: known.error, ...values }) === header
            ? known
            : learnPaymentRequired(header, values.url, values.reference);
        if (!paymentRequired) return;
        paymentRequiredTemplates.set(templateKey, paymentRequired);
      }
      const headers = replayableHeaders(sent.headers).filter(([name]) => name !== PAYMENT_REQUIRED_HEADER);
      setBounded(
        routeChallenges,
        key,
        {
          headers,
          base: values.url.slice(0, values.url.length - url.length),
          error: sent.error,
          body: template,
          paymentRequired,
          withReference,
        },
        MAX_ROUTE_TEMPLATES,
      );
      setBounded(
        originHeaders,
        origin,
        headers.filter(([name]) => !X402_HEADERS.has(name)),
        MAX_ROUTE_TEMPLATES,
      );
    },
    challenge(path, network, origin, url, parsed, requestId) {
      const learned = routeChallenges.get(`${path}\n${network}\n${origin}`);
      if (!learned) return undefined;
      const values = {
        url: learned.base + url,
        reference: learned.withReference ? (referenceOf(parsed) ?? '') : '',
      };
      const body = learned.body.json({ requestId, error: learned.error, ...values });
      const headers: HeaderList = learned.paymentRequired
        ? [
            ...learned.headers,
            [
              PAYMENT_REQUIRED_HEADER,
              learned.paymentRequired.template.base64({ error: learned.paymentRequired.error, ...values }),
            ],
          ]
        : learned.headers;
      return { headers, body };
    },
    originHeaders: (origin) => originHeaders.get(origin),
    size: () => routeChallenges.size,
  };
}
