import {
  canonicalRequestText,
  PAYMENT_REQUIRED_HEADER,
  requestReference,
  sha256Hex,
  X402_VERSION_HEADER,
} from '@repo/x402-core';
import type { X402Network } from '@repo/schemas';
import { SIGN_IN_WITH_X } from '@x402/extensions/sign-in-with-x';
import type { PaymentGateway } from './gateway';
import { replayableHeaders, setBounded, type HeaderList } from './hot-path-memory';
import { compileJsonTemplate, type BodySlot, type JsonTemplate, type SentChallenge } from './request';
import { freshSignIn, signInUri, type FreshSignIn } from './sign-in';

/** The headers the payment middleware adds to a 402 (the rest, helmet's and the type, every answer has). */
const X402_HEADERS = new Set([X402_VERSION_HEADER, PAYMENT_REQUIRED_HEADER]);

/** Most routes' templates (route, network, host, forwarded protocol) and hosts' header lists kept. */
const MAX_ROUTE_TEMPLATES = 64;

/** The body hash of a request without a body, as the request reference's canonical text has it. */
const NO_BODY_SHA256 = sha256Hex(JSON.stringify(null));

type HeaderSlot = 'error' | 'url' | 'reference' | 'uri' | keyof FreshSignIn;

/** The sign-in slots' values of a `PAYMENT-REQUIRED` without a sign-in challenge (its template has none). */
const NO_SIGN_IN = { uri: '', nonce: '', issuedAt: '', expirationTime: '' } as const;

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
  /**
   * With sign-in-with-x: the origin its challenges' `uri` is on, and the milliseconds from `issuedAt`
   * to `expirationTime`.
   */
  signIn: { origin: URL; challengeMs: number } | undefined;
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
  extensions?: Record<string, unknown>;
}

/** The values of a sent sign-in challenge that differ per 402: its `uri` and its {@link FreshSignIn}. */
type SentSignIn = Pick<Record<HeaderSlot, string>, 'uri' | keyof FreshSignIn>;

/**
 * The per-402 values of the `sign-in-with-x` declaration of a decoded `PAYMENT-REQUIRED`: `null`
 * when it has none, `undefined` when it is not of the shape the full path builds (`info` with
 * string `uri`, `nonce`, `issuedAt` and `expirationTime`, and `resources` the one `uri`).
 */
function sentSignInOf(decoded: DecodedPaymentRequired): SentSignIn | null | undefined {
  const extensions = decoded.extensions;
  if (typeof extensions !== 'object' || extensions === null || !(SIGN_IN_WITH_X in extensions)) return null;
  const declared = extensions[SIGN_IN_WITH_X] as { info?: Record<string, unknown> } | null;
  const info = typeof declared === 'object' && declared !== null ? declared.info : undefined;
  if (typeof info !== 'object' || info === null) return undefined;
  const { uri, nonce, issuedAt, expirationTime, resources } = info;
  if (typeof uri !== 'string' || typeof nonce !== 'string' || typeof issuedAt !== 'string') return undefined;
  if (typeof expirationTime !== 'string' || !Array.isArray(resources)) return undefined;
  if (resources.length !== 1 || resources[0] !== uri) return undefined;
  return { uri, nonce, issuedAt, expirationTime };
}

/**
 * Where the challenges of a route are issued, learned from one sent for `url` (path and query): the
 * origin of its `uri`, which must give that `uri` back for `url`, and its lifetime (positive, whole
 * milliseconds between two ISO 8601 times). `undefined` when they do not.
 */
function signInSettingsOf(sent: SentSignIn, url: string): { origin: URL; challengeMs: number } | undefined {
  let origin: URL;
  try {
    origin = new URL(new URL(sent.uri).origin);
  } catch {
    return undefined;
  }
  if (signInUri(origin, url) !== sent.uri) return undefined;
  const issued = Date.parse(sent.issuedAt);
  const challengeMs = Date.parse(sent.expirationTime) - issued;
  if (!Number.isFinite(challengeMs) || challengeMs <= 0) return undefined;
  if (new Date(issued).toISOString() !== sent.issuedAt) return undefined;
  return { origin, challengeMs };
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
 * The template of a route's `PAYMENT-REQUIRED`, learned from one the full path sent (`header`,
 * `decoded`) for the URL whose `resource` is `url` and reference `reference` (`''`: none): the error,
 * `resource.url`, each requirement's `extra` values equal to the reference (`reference`, `memo`) and,
 * with a sign-in challenge (`signIn`), its `uri` (also its one `resources` entry), nonce, `issuedAt`
 * and `expirationTime` are its slots. `undefined` when the template does not give the sent header
 * back byte for byte.
 */
function learnPaymentRequired(
  header: string,
  decoded: DecodedPaymentRequired,
  url: string,
  reference: string,
  signIn: SentSignIn | null,
): PaymentRequiredTemplate | undefined {
  if (decoded.resource.url !== url) return undefined;
  const withReference = (requirement: Record<string, unknown>, value: string): Record<string, unknown> => {
    const extra = requirement.extra as Record<string, unknown> | undefined;
    if (reference === '' || typeof extra !== 'object' || extra === null) return requirement;
    const filled: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(extra)) filled[key] = v === reference ? value : v;
    return { ...requirement, extra: filled };
  };
  const declared = decoded.extensions?.[SIGN_IN_WITH_X] as { info: Record<string, unknown> } | undefined;
  const slots: HeaderSlot[] = ['error', 'url', 'reference', 'uri', 'nonce', 'issuedAt', 'expirationTime'];
  const template = compileJsonTemplate(slots, (v) => ({
    ...decoded,
    error: v.error,
    resource: { ...decoded.resource, url: v.url },
    accepts: decoded.accepts.map((requirement) => withReference(requirement, v.reference)),
    // The challenge's fields stay where they were (same order), with this 402's values.
    ...(signIn && declared
      ? {
          extensions: {
            ...decoded.extensions,
            [SIGN_IN_WITH_X]: {
              ...declared,
              info: {
                ...declared.info,
                uri: v.uri,
                nonce: v.nonce,
                issuedAt: v.issuedAt,
                expirationTime: v.expirationTime,
                resources: [v.uri],
              },
            },
          },
        }
      : {}),
  }));
  const sent = { error: decoded.error, url, reference, ...(signIn ?? NO_SIGN_IN) };
  if (!template || template.base64(sent) !== header) return undefined;
  return { template, error: decoded.error };
}

/**
 * The builder of the `PAYMENT-REQUIRED` of `url` (path and query) with `values` (its resource and
 * reference) and, at each call, a fresh sign-in challenge as signInChallenge makes it: its `uri` on
 * the route's origin, a new nonce, `issuedAt` now and `expirationTime` the route's lifetime later.
 */
function fresh(
  { template, error }: PaymentRequiredTemplate,
  { origin, challengeMs }: NonNullable<RouteChallenge['signIn']>,
  url: string,
  values: { url: string; reference: string },
): () => string {
  const fixed = { error, ...values, uri: signInUri(origin, url) };
  return () => template.base64({ ...fixed, ...freshSignIn(challengeMs) });
}

/** A decoded `PAYMENT-REQUIRED` and the per-402 values of its sign-in challenge ({@link sentSignInOf}). */
function decodeWithSignIn(
  header: string,
): { decoded: DecodedPaymentRequired; signIn: SentSignIn | null | undefined } | undefined {
  const decoded = decodePaymentRequired(header);
  return decoded && { decoded, signIn: sentSignInOf(decoded) };
}

/** The 402 of a URL not seen yet, built from its route's template: headers and body (request id filled in). */
export interface BuiltChallenge {
  /** Its headers; with a sign-in challenge, all but `PAYMENT-REQUIRED`, which `paymentRequired` builds. */
  headers: HeaderList;
  body: string;
  /**
   * With sign-in-with-x: this URL's `PAYMENT-REQUIRED` with a fresh challenge (nonce, `issuedAt`,
   * `expirationTime`), to call for every 402 sent.
   */
  paymentRequired: (() => string) | undefined;
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
   * How a 402 the full path sent for `url` (path and query) is answered again: `null` when its
   * `PAYMENT-REQUIRED` (if any) has no sign-in challenge (as sent, whole); with one, the builder of
   * the header with a fresh challenge, from the route's template learned for `origin`, checked to
   * give the sent header back for the sent challenge's values; `undefined` when there is no such
   * template (then it is not answered again from memory).
   */
  freshPaymentRequired(
    sent: SentChallenge,
    path: string,
    url: string,
    origin: string,
  ): (() => string) | null | undefined;
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
      let signIn: RouteChallenge['signIn'];
      if (header !== undefined) {
        if (typeof header !== 'string') return;
        const read = decodeWithSignIn(header);
        if (!read || read.signIn === undefined) return;
        if (read.signIn) {
          signIn = signInSettingsOf(read.signIn, url);
          if (!signIn) return;
        }
        const templateKey = `${path}\n${network}`;
        const known = paymentRequiredTemplates.get(templateKey);
        const sentValues = { ...values, ...(read.signIn ?? NO_SIGN_IN) };
        paymentRequired =
          known && known.template.base64({ error: known.error, ...sentValues }) === header
            ? known
            : learnPaymentRequired(header, read.decoded, values.url, values.reference, read.signIn);
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
          signIn,
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
      const { paymentRequired, signIn } = learned;
      if (!paymentRequired) return { headers: learned.headers, body, paymentRequired: undefined };
      if (signIn)
        return {
          headers: learned.headers,
          body,
          paymentRequired: fresh(paymentRequired, signIn, url, values),
        };
      const header = paymentRequired.template.base64({
        error: paymentRequired.error,
        ...values,
        ...NO_SIGN_IN,
      });
      return {
        headers: [...learned.headers, [PAYMENT_REQUIRED_HEADER, header]],
        body,
        paymentRequired: undefined,
      };
    },
    freshPaymentRequired(sent, path, url, origin) {
      const header = sent.headers[PAYMENT_REQUIRED_HEADER];
      if (header === undefined) return null;
      const read = typeof header === 'string' ? decodeWithSignIn(header) : undefined;
      if (read?.signIn === null) return null;
      const learned = routeChallenges.get(`${path}\n${String(sent.network)}\n${origin}`);
      const signIn = learned?.signIn;
      const paymentRequired = learned?.paymentRequired;
      if (!read?.signIn || !signIn || !paymentRequired) return undefined;
      const { template, error } = paymentRequired;
      if (
        signInUri(signIn.origin, url) !== read.signIn.uri ||
        template.base64({ error, ...sent.values, ...read.signIn }) !== header
      )
        return undefined;
      return fresh(paymentRequired, signIn, url, sent.values);
    },
    originHeaders: (origin) => originHeaders.get(origin),
    size: () => routeChallenges.size,
  };
}
