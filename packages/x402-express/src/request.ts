import { ServerResponse, type OutgoingHttpHeaders } from 'node:http';
import type { Request, Response } from 'express';
import { requestIdOf, validationError } from '@repo/errors';
import type { PaymentRequirements, X402Network } from '@repo/schemas';
import { encodeBase64Json, paymentRequiredBody, X402_VERSION, X402_VERSION_HEADER } from '@repo/x402-core';

/**
 * Answers 402 with {@link paymentRequiredBody} and the header `x402-version: 1`. The `accepts` that
 * `requirementsForRequest` built have their body assembled from the route's template (no `details`,
 * and Express's default JSON settings), the very bytes `res.json` would send.
 *
 * @param req the request (for the request id)
 * @param res the response
 * @param accepts the ways to pay
 * @param error human-readable reason
 * @param details optional machine-readable detail, e.g. `{ reason: "stale" }`
 */
export function sendPaymentRequired(
  req: Request,
  res: Response,
  accepts: PaymentRequirements[],
  error: string,
  details?: Record<string, unknown>,
): void {
  res.setHeader(X402_VERSION_HEADER, String(X402_VERSION));
  res.status(402);
  const prepared = details === undefined ? preparedBodies.get(accepts) : undefined;
  const app = res.app as Response['app'] | undefined;
  // Express's own serialisation settings change the bytes: then it serialises, as it always did.
  const plainJson =
    app !== undefined && !app.get('json replacer') && !app.get('json spaces') && !app.get('json escape');
  if (prepared === undefined || !plainJson) {
    res.json(paymentRequiredBody(accepts, error, requestIdOf(req), details));
    return;
  }
  // What res.json does with the JSON it made.
  if (!res.get('Content-Type')) res.set('Content-Type', 'application/json');
  const body = prepared.template.json({ ...prepared.values, error, requestId: requestIdOf(req) });
  res.send(body);
  const listener = challengeListeners.get(res);
  // Only when nothing stands between res.send and the socket (no wrapped write or end that could
  // change the bytes), so that what is told is what was sent.
  if (listener && res.write === ServerResponse.prototype.write && res.end === ServerResponse.prototype.end) {
    try {
      listener({
        status: res.statusCode,
        headers: res.getHeaders(),
        body,
        network: accepts[0]?.network,
        error,
        template: prepared.template,
        values: prepared.values,
      });
    } catch {
      // The listener remembers the answer: its failure leaves the answer as sent.
    }
  }
}

/** A 402 challenge as {@link sendPaymentRequired} sent it: its status, final headers and body. */
export interface SentChallenge {
  status: number;
  headers: OutgoingHttpHeaders;
  body: string;
  /** The network of its first requirement (the request's). */
  network: X402Network | undefined;
  /** The body's `error`. */
  error: string;
  /**
   * The route's template the body was assembled from (every 402 of the route and network, whatever
   * its URL) and this request's values of its `url` (`resource`) and `reference` (`''` without one).
   */
  template: JsonTemplate<BodySlot>;
  values: { url: string; reference: string };
}

const challengeListeners = new WeakMap<ServerResponse, (sent: SentChallenge) => void>();

/**
 * Asks {@link sendPaymentRequired} to tell `listener` of the 402 challenge (no `details`) it sends on
 * `res`, once sent, when it assembled it from the route's template: the hot path remembers it so,
 * without capturing the response's writes.
 */
export function onChallengeSent(res: ServerResponse, listener: (sent: SentChallenge) => void): void {
  challengeListeners.set(res, listener);
}

/** The slots of a 402 body's {@link JsonTemplate}: all that differs between the 402s of one route. */
export type BodySlot = 'requestId' | 'error' | 'url' | 'reference';

/** A 402 body's template and this request's values of the slots it does not know before sending. */
interface PreparedBody {
  template: JsonTemplate<BodySlot>;
  values: { url: string; reference: string };
}

// The `accepts` built by requirementsForRequest, with the template that serialises their 402 body.
const preparedBodies = new WeakMap<PaymentRequirements[], PreparedBody>();

/**
 * Tells {@link sendPaymentRequired} that a 402 with `accepts` (as built, never changed afterwards)
 * and no `details` is `template` filled with `values`, the error and the request id, so that the
 * body is assembled rather than serialised again (the route's requirements and their `outputSchema`
 * are most of its bytes).
 */
export function prepareBody(
  accepts: PaymentRequirements[],
  template: JsonTemplate<BodySlot>,
  values: { url: string; reference: string },
): void {
  preparedBodies.set(accepts, { template, values });
}

/**
 * Resolves the x402 network of a request from its `network` query parameter (docs/payments.md, "Devnet":
 * `devnet` selects the test network, default is the main network). Accepted values:
 * absent or empty, `solana`, `mainnet` → `"solana"`; `devnet`, `solana-devnet` → `"solana-devnet"`.
 * The raw URL is read, so a validation middleware that rewrote `req.query` does not matter.
 *
 * @param req the request
 * @throws AppError `invalid_request` (400, `details.issues`: docs/architecture.md, "One error dialect") for
 *   any other value or a repeated parameter
 */
export function networkOfRequest(req: Request): X402Network {
  return networkOfQuery(new URL(req.originalUrl || req.url, 'http://localhost').searchParams);
}

/**
 * {@link networkOfRequest} of a request's parsed query string.
 * @throws AppError `invalid_request` (400) as {@link networkOfRequest}
 */
export function networkOfQuery(query: URLSearchParams): X402Network {
  const values = query.getAll('network');
  if (values.length > 1)
    throw validationError([
      { path: 'query.network', code: 'invalid_type', message: 'must be given at most once' },
    ]);
  const value = values[0] ?? '';
  if (value === '' || value === 'solana' || value === 'mainnet') return 'solana';
  if (value === 'devnet' || value === 'solana-devnet') return 'solana-devnet';
  throw validationError([
    {
      path: 'query.network',
      code: 'invalid_value',
      message: `must be "devnet" or absent, not "${value.slice(0, 40)}"`,
    },
  ]);
}

/**
 * The absolute URL of a request, for `PaymentRequirements.resource`: `publicBaseUrl` (when the service
 * knows its public origin) or the request's protocol and host (honouring `trust proxy`), followed by
 * the original path and query.
 *
 * @param req the request
 * @param publicBaseUrl optional origin such as `https://api.example.com`
 */
export function resourceUrlOf(req: Request, publicBaseUrl?: string): string {
  return `${publicBaseOf(req, publicBaseUrl)}${req.originalUrl || req.url}`;
}

/**
 * The public origin (and base path) of a request's resource URLs: `publicBaseUrl` without a trailing
 * `/`, else the request's protocol and host.
 */
export function publicBaseOf(req: Request, publicBaseUrl: string | undefined): string {
  return publicBaseUrl
    ? publicBaseUrl.replace(/\/+$/, '')
    : `${req.protocol}://${req.get('host') ?? 'localhost'}`;
}

/**
 * The JSON of every value one builder makes, which differ only in a few string fields (the slots):
 * the builder's JSON is cut once at the slots, so that each call joins the fixed pieces with the
 * JSON strings of the slot values instead of serialising the whole value again. `json(values)` is
 * `JSON.stringify(build(values))` and `base64(values)` is `encodeBase64Json(build(values))`, byte for
 * byte (a 402's body and `PAYMENT-REQUIRED`: docs/architecture.md, "How a paid request
 * flows (market-intel)").
 */
export interface JsonTemplate<S extends string> {
  /** `JSON.stringify(build(values))`. */
  json(values: Readonly<Record<S, string>>): string;
  /** `encodeBase64Json(build(values))`. */
  base64(values: Readonly<Record<S, string>>): string;
}

let templateMarks = 0;

function slotMarks<S extends string>(slots: readonly S[], filler: string): Record<S, string> {
  const tag = `${process.pid.toString(36)}z${(templateMarks++).toString(36)}z${Math.random().toString(36).slice(2)}`;
  const marks = {} as Record<S, string>;
  slots.forEach((slot, i) => (marks[slot] = `x402slot${tag}z${i}${filler}z`));
  return marks;
}

/**
 * Compiles the {@link JsonTemplate} of `build` (a pure function of its slot values that puts each
 * value, whole, as a JSON string anywhere in what it returns, or leaves it out). The builder is
 * called with marker values and cut where their JSON strings are, then checked: the template must
 * give exactly `JSON.stringify(build(values))` for a second set of markers of another length.
 * The fixed part after the last slot is also kept in base64 for each of its 3 byte alignments, so
 * that `base64` encodes only what comes before it.
 *
 * @returns `undefined` when `build` throws, returns no JSON, or does not pass the check (it used a
 *   value other than as a whole string): the caller then serialises the whole value
 */
export function compileJsonTemplate<S extends string>(
  slots: readonly S[],
  build: (values: Readonly<Record<S, string>>) => unknown,
): JsonTemplate<S> | undefined {
  let json: string | undefined;
  const marks = slotMarks(slots, '');
  try {
    json = JSON.stringify(build(marks)) as string | undefined;
  } catch {
    return undefined;
  }
  if (typeof json !== 'string') return undefined;
  const bySlotToken = new Map<string, S>(slots.map((slot) => [JSON.stringify(marks[slot]), slot]));
  // Every slot's token has the same length and shape: one pattern finds them all, in order.
  const pieces: string[] = [];
  const order: S[] = [];
  const pattern = /"x402slot[0-9a-z]+z[0-9a-z]+z[0-9a-z]+z[0-9]+z"/g;
  let from = 0;
  for (let found = pattern.exec(json); found !== null; found = pattern.exec(json)) {
    const slot = bySlotToken.get(found[0]);
    if (slot === undefined) continue;
    pieces.push(json.slice(from, found.index));
    order.push(slot);
    from = found.index + found[0].length;
  }
  const last = json.slice(from);
  const lastBytes = Buffer.from(last, 'utf8');
  // The base64 of the fixed end when the bytes before it leave 0, 2 or 1 bytes of a 3-byte group.
  const lastBase64 = [0, 1, 2].map((skip) => lastBytes.subarray(skip).toString('base64'));
  const head = (values: Readonly<Record<S, string>>): string => {
    let text = '';
    for (let i = 0; i < order.length; i++) text += pieces[i]! + JSON.stringify(values[order[i]!]);
    return text;
  };
  const template: JsonTemplate<S> = {
    json: (values) => head(values) + last,
    base64: (values) => {
      const text = head(values);
      const length = Buffer.byteLength(text, 'utf8');
      const skip = (3 - (length % 3)) % 3;
      if (skip > lastBytes.length) return Buffer.from(text + last, 'utf8').toString('base64');
      const bytes = Buffer.allocUnsafe(length + skip);
      bytes.write(text, 0, 'utf8');
      lastBytes.copy(bytes, length, 0, skip);
      return bytes.toString('base64') + lastBase64[skip]!;
    },
  };
  const check = slotMarks(slots, 'checked');
  let expected: string | undefined;
  try {
    expected = JSON.stringify(build(check)) as string | undefined;
  } catch {
    return undefined;
  }
  if (template.json(check) !== expected || template.base64(check) !== encodeBase64Json(build(check)))
    return undefined;
  return template;
}
