import { createHash } from 'node:crypto';
import type { Request } from 'express';
import { AppError } from '@repo/errors';
import type { PaymentRequirements, X402Network } from '@repo/schemas';
import {
  buildPaymentRequirements,
  canonicalRequestText,
  DEFAULT_MAX_TIMEOUT_SECONDS,
  encodeBase64Json,
  paymentRequiredBody,
  requestReference,
  v1OutputSchema,
  type PaymentRequiredV2,
  type PaymentRequirementsV2,
  type BuildPaymentRequirementsInput,
  type PaymentVerifier,
  type ResourceDiscovery,
} from '@repo/x402-core';
import type { ExactSvmSettler } from '@repo/x402-solana';
import { SIGN_IN_WITH_X, type SIWxExtension } from '@x402/extensions/sign-in-with-x';
import { bazaarExtensions } from './discovery';
import type { PaidRoute, PaymentGateway } from './gateway';
import { PAYMENT_IDENTIFIER_EXTENSIONS } from './identifier';
import { extensionsWithOffer } from './receipts';
import {
  compileJsonTemplate,
  networkOfQuery,
  prepareBody,
  publicBaseOf,
  type BodySlot,
  type JsonTemplate,
} from './request';

/**
 * The endpoint identity of a request: `"<METHOD> <baseUrl><route path>"`, e.g. `"GET /api/v1/scout/gaps"`.
 */
export function endpointOf(req: Request): string {
  const route = (req as Request & { route?: { path?: unknown } }).route;
  const path = typeof route?.path === 'string' ? `${req.baseUrl}${route.path}` : `${req.baseUrl}${req.path}`;
  return `${req.method} ${path}`;
}

/** The v2 offer of a request, when its network has an {@link ExactSvmSettler}. */
export interface OfferV2 {
  settler: ExactSvmSettler;
  requirements: PaymentRequirementsV2;
  /** What is paid for (`resource` of the `PAYMENT-REQUIRED` header). */
  resource: { url: string; description: string; mimeType: string };
  /**
   * `extensions` of the `PAYMENT-REQUIRED` header: the `bazaar` discovery extension, if any, and
   * `payment-identifier` when the gateway keeps identifiers.
   */
  extensions: Record<string, unknown>;
  /**
   * This request's Solana Pay reference, advertised in the offer's `extra.reference` and as its
   * `extra.memo`: the official client writes the memo into the transaction, and the settlement
   * refuses a transaction whose memo is not this request's, so an official-scheme payment
   * is bound to its request on chain too.
   */
  reference?: string;
  /**
   * This 402's `sign-in-with-x` challenge (fresh for each 402), added to `extensions` of the
   * `PAYMENT-REQUIRED` header, which is then serialised whole (docs/payments.md, "Signing in instead of
   * paying again").
   */
  signIn?: SIWxExtension;
}

/**
 * The one requirement of a request's v2 offer, as `PAYMENT-REQUIRED` advertises it, the payer's
 * `accepted` must equal and the settlement checks against: the route's offer with this request's
 * `extra.reference` and `extra.memo` (when references are configured).
 */
export function offeredRequirements(offer: OfferV2): PaymentRequirementsV2 {
  return offer.reference === undefined
    ? offer.requirements
    : {
        ...offer.requirements,
        extra: { ...offer.requirements.extra, reference: offer.reference, memo: offer.reference },
      };
}

/**
 * The requirements of a paid route for this request: the network from `?network=`, its verifier's
 * mint and merchant account, the price, `resource` = the absolute request URL and, with references
 * configured, `extra.reference` = this request's reference; plus the v2 offer of the official exact
 * scheme when the network has a settler.
 *
 * @throws AppError `invalid_request` (400) for an unknown `network` value or a network not offered
 */
export function requirementsForRequest(
  req: Request,
  gateway: PaymentGateway,
  route: PaidRoute,
): {
  network: X402Network;
  verifier: PaymentVerifier;
  /** The push requirement (the spec's: `payTo` is the merchant's token account). */
  requirements: PaymentRequirements;
  /**
   * The body's `accepts`: the push requirement, then, when the network has a settler, the official
   * exact scheme in v1 form (`payTo` the merchant wallet, `extra.feePayer`), which a v1 `exact` SVM
   * client pays with `payload.transaction`.
   */
  accepts: PaymentRequirements[];
  offer: OfferV2 | undefined;
  reference: string | undefined;
  /** The request's canonical text (`canonicalRequestText`), built now only when a reference needed it. */
  canonical: string | undefined;
  /** The request URL, parsed once. */
  url: URL;
  /** The public origin (and base path) of its resource URLs. */
  base: string;
  /** `resource`: the absolute request URL. */
  resource: string;
} {
  const url = new URL(req.originalUrl || req.url, 'http://localhost');
  const network = networkOfQuery(url.searchParams);
  const verifier = gateway.verifiers[network];
  if (!verifier) throw new AppError('invalid_request', `Payments on ${network} are not offered here`);
  const template = requirementsTemplate(verifier, route);
  const canonical = gateway.references ? canonicalTextOf(req, url) : undefined;
  const reference =
    gateway.references && canonical !== undefined
      ? requestReference(gateway.references.secret, canonical)
      : undefined;
  const base = publicBaseOf(req, gateway.publicBaseUrl);
  const resource = `${base}${req.originalUrl || req.url}`;
  const settler = gateway.settlers?.[network];
  const official = settler && {
    v1: officialV1Template(settler, route),
    v2: offerTemplate(settler, route),
  };
  const accepts = acceptsOf(template, official, resource, reference);
  const requirements = accepts[0]!;
  const offer: OfferV2 | undefined = settler && {
    settler,
    requirements: official!.v2,
    resource: { url: resource, description: template.description, mimeType: template.mimeType },
    extensions: gateway.receipts
      ? extensionsWithOffer(
          gateway.receipts,
          extensionsOf(route, gateway.identifiers !== undefined),
          official!.v2,
          base,
          url.pathname,
        )
      : extensionsOf(route, gateway.identifiers !== undefined),
    ...(reference === undefined ? {} : { reference }),
  };
  const body = bodyTemplateOf(template, official, reference !== undefined);
  if (body) prepareBody(accepts, body, { url: resource, reference: reference ?? '' });
  return { network, verifier, requirements, accepts, offer, reference, canonical, url, base, resource };
}

/** The official scheme's requirements of a route on one network: in the v1 body, and the v2 offer. */
interface OfficialTemplates {
  v1: PaymentRequirements;
  v2: PaymentRequirementsV2;
}

/**
 * The body's `accepts` of a request: the push requirement (`push` with the request's `resource` and,
 * when it has one, its `extra.reference`), then, when the network has a settler, the official
 * scheme's v1 requirement with the v2 offer's `extra` (and the request's `reference` and `memo`).
 */
function acceptsOf(
  push: PaymentRequirements,
  official: OfficialTemplates | undefined,
  resource: string,
  reference: string | undefined,
): PaymentRequirements[] {
  const requirements: PaymentRequirements = {
    ...push,
    resource,
    ...(reference === undefined ? {} : { extra: { ...push.extra, reference } }),
  };
  if (!official) return [requirements];
  const extra =
    reference === undefined ? official.v2.extra : { ...official.v2.extra, reference, memo: reference };
  return [requirements, { ...official.v1, resource, extra: extra ?? {} }];
}

// Per push template, then per official v1 template (or none): the body's template without and
// with a reference; null when it could not be compiled (the body is then serialised whole).
const bodyTemplates = new WeakMap<PaymentRequirements, WeakMap<object, (JsonTemplate<BodySlot> | null)[]>>();
const NO_OFFICIAL = {};

/**
 * The template of the 402 body (no `details`) of a route on one network, compiled on its first 402:
 * {@link acceptsOf} and {@link paymentRequiredBody} with the request id, error, URL and reference as
 * slots.
 */
function bodyTemplateOf(
  push: PaymentRequirements,
  official: OfficialTemplates | undefined,
  withReference: boolean,
): JsonTemplate<BodySlot> | undefined {
  const byOfficial = cached(bodyTemplates, push, () => new WeakMap());
  const compiled = cached(byOfficial, official?.v1 ?? NO_OFFICIAL, () => []);
  const at = withReference ? 1 : 0;
  let template = compiled[at];
  if (template === undefined) {
    template =
      compileJsonTemplate(['requestId', 'error', 'url', 'reference'], (v) =>
        paymentRequiredBody(
          acceptsOf(push, official, v.url, withReference ? v.reference : undefined),
          v.error,
          v.requestId,
        ),
      ) ?? null;
    compiled[at] = template;
  }
  return template ?? undefined;
}

const officialV1Templates = new WeakMap<ExactSvmSettler, WeakMap<PaidRoute, PaymentRequirements>>();

/**
 * The official scheme's requirement in the v1 body, all but `resource` and `extra` (built once per
 * settler and route): the v2 offer's price, mint, merchant wallet and timeout in v1 field names.
 */
function officialV1Template(settler: ExactSvmSettler, route: PaidRoute): PaymentRequirements {
  return perRoute(officialV1Templates, settler, route, () =>
    v1Template(settler, route, { maxTimeoutSeconds: route.maxTimeoutSeconds ?? DEFAULT_MAX_TIMEOUT_SECONDS }),
  );
}

/**
 * A route's v1 requirement on `owner`'s network, mint and merchant account, validated, all but
 * `resource` (a placeholder) and `extra`.
 * @throws Error when the route's price or fields do not make valid requirements
 */
function v1Template(
  owner: { network: X402Network; asset: string; payTo: string },
  route: PaidRoute,
  more: Pick<BuildPaymentRequirementsInput, 'maxTimeoutSeconds' | 'outputSchema'>,
): PaymentRequirements {
  return buildPaymentRequirements({
    network: owner.network,
    asset: owner.asset,
    payTo: owner.payTo,
    amountAtomic: route.amountAtomic,
    resource: 'http://localhost/',
    description: route.description,
    mimeType: route.mimeType ?? 'application/json',
    ...more,
  });
}

/**
 * The canonical text of a request (method, path, sorted query, body hash): its reference is the HMAC
 * of it, and the hash its payment is bound to in the ledger is the SHA-256 of it.
 */
export function canonicalTextOf(req: Request, url: URL): string {
  return canonicalRequestText({
    method: req.method,
    path: url.pathname,
    query: url.searchParams,
    bodySha256: bodyHash(req),
  });
}

const offers = new WeakMap<ExactSvmSettler, WeakMap<PaidRoute, PaymentRequirementsV2>>();
// Keyed by the discovery object, which routes declare once (options objects may be per request);
// without and with the payment-identifier declaration.
const discoveryExtensions = new WeakMap<ResourceDiscovery, Record<string, unknown>>();
const identifiedExtensions = new WeakMap<ResourceDiscovery, Record<string, unknown>>();

function extensionsOf(route: PaidRoute, identified: boolean): Record<string, unknown> {
  const { discovery } = route;
  if (!discovery) return identified ? PAYMENT_IDENTIFIER_EXTENSIONS : {};
  return cached(identified ? identifiedExtensions : discoveryExtensions, discovery, () =>
    identified
      ? { ...bazaarExtensions(discovery), ...PAYMENT_IDENTIFIER_EXTENSIONS }
      : bazaarExtensions(discovery),
  );
}

/**
 * What `build` makes for `owner` (a verifier or settler) and `route`, built once: requirements are
 * validated on their first request, then every 402 reuses them.
 */
function perRoute<K extends object, V>(
  cache: WeakMap<K, WeakMap<PaidRoute, V>>,
  owner: K,
  route: PaidRoute,
  build: () => V,
): V {
  const byRoute = cached(cache, owner, () => new WeakMap<PaidRoute, V>());
  return cached(byRoute, route, build);
}

/** The value of `key` in `map`, built by `build` and kept there the first time it is asked for. */
function cached<K, V>(
  map: { get(key: K): V | undefined; set(key: K, value: V): unknown },
  key: K,
  build: () => V,
): V {
  let value = map.get(key);
  if (value === undefined) map.set(key, (value = build()));
  return value;
}

function offerTemplate(settler: ExactSvmSettler, route: PaidRoute): PaymentRequirementsV2 {
  return perRoute(offers, settler, route, () =>
    settler.requirements(route.amountAtomic, route.maxTimeoutSeconds ?? DEFAULT_MAX_TIMEOUT_SECONDS),
  );
}

/**
 * The `PAYMENT-REQUIRED` header value of a 402: base64 JSON of a v2 `PaymentRequired` with the one
 * official-scheme offer (docs/payments.md, "Paying with an official x402 client").
 */
export function paymentRequiredHeader(offer: OfferV2, error: string): string {
  const template = offer.signIn ? undefined : headerTemplateOf(offer);
  return template
    ? template.base64({ error, url: offer.resource.url, reference: offer.reference ?? '' })
    : encodeBase64Json(paymentRequiredOf(offer, error));
}

/**
 * The v2 `PaymentRequired` of a 402 (the decoded `PAYMENT-REQUIRED`): `error`, the offer's resource,
 * its one requirement ({@link offeredRequirements}) and its extensions. {@link paymentRequiredHeader}
 * assembles the base64 of its JSON from a template; this is the plain build it must equal.
 */
export function paymentRequiredOf(offer: OfferV2, error: string): PaymentRequiredV2 {
  return {
    x402Version: 2,
    error,
    resource: offer.resource,
    accepts: [offeredRequirements(offer)],
    extensions: offer.signIn ? { ...offer.extensions, [SIGN_IN_WITH_X]: offer.signIn } : offer.extensions,
  };
}

type HeaderSlot = 'error' | 'url' | 'reference';

/** A compiled `PAYMENT-REQUIRED` template and the fixed parts of the offers it serves. */
interface HeaderTemplate {
  extensions: Record<string, unknown>;
  description: string;
  mimeType: string;
  withReference: boolean;
  template: JsonTemplate<HeaderSlot> | null;
}

// Per offer requirements (one object per settler and route): the templates of the routes using it.
const headerTemplates = new WeakMap<PaymentRequirementsV2, HeaderTemplate[]>();
// Offers are built per route: more shapes per requirements object than routes means offers built
// elsewhere, which are serialised whole.
const MAX_HEADER_TEMPLATES = 32;
const RESOURCE_KEYS = ['url', 'description', 'mimeType'];

/**
 * The template of `offer`'s `PAYMENT-REQUIRED`, compiled on the first 402 of its route: the error,
 * the resource URL and the reference are its slots; the requirements and extensions (never changed
 * once built) are found by identity. `undefined` for a resource of another shape.
 */
function headerTemplateOf(offer: OfferV2): JsonTemplate<HeaderSlot> | undefined {
  const { resource } = offer;
  let keys = 0;
  for (const key in resource) if (key !== RESOURCE_KEYS[keys++]) return undefined;
  if (keys !== 3 || typeof resource.url !== 'string') return undefined;
  const { description, mimeType } = resource;
  const withReference = offer.reference !== undefined;
  const entries = cached(headerTemplates, offer.requirements, () => []);
  for (const entry of entries)
    if (
      entry.extensions === offer.extensions &&
      entry.description === description &&
      entry.mimeType === mimeType &&
      entry.withReference === withReference
    )
      return entry.template ?? undefined;
  if (entries.length >= MAX_HEADER_TEMPLATES) return undefined;
  const fixed = { settler: offer.settler, requirements: offer.requirements, extensions: offer.extensions };
  const template =
    compileJsonTemplate(['error', 'url', 'reference'], (v) =>
      paymentRequiredOf(
        {
          ...fixed,
          resource: { url: v.url, description, mimeType },
          ...(withReference ? { reference: v.reference } : {}),
        },
        v.error,
      ),
    ) ?? null;
  entries.push({ extensions: offer.extensions, description, mimeType, withReference, template });
  return template ?? undefined;
}

/** Validated requirements per verifier and route, all but `resource` (built once: this is every 402's hot path). */
const templates = new WeakMap<PaymentVerifier, WeakMap<PaidRoute, PaymentRequirements>>();

function requirementsTemplate(verifier: PaymentVerifier, route: PaidRoute): PaymentRequirements {
  return perRoute(templates, verifier, route, () =>
    v1Template(verifier, route, {
      // What is advertised is what is enforced: the verifier's own window when it has one.
      ...((verifier.maxTimeoutSeconds ?? route.maxTimeoutSeconds) === undefined
        ? {}
        : { maxTimeoutSeconds: verifier.maxTimeoutSeconds ?? route.maxTimeoutSeconds }),
      ...(route.discovery ? { outputSchema: v1OutputSchema(route.discovery) } : {}),
    }),
  );
}

/** Hex SHA-256 of the parsed request body (as JSON): a genuine retry sends the same body. */
function bodyHash(req: Request): string {
  return createHash('sha256')
    .update(JSON.stringify(req.body ?? null))
    .digest('hex');
}
