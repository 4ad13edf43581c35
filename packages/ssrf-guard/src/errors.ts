import type { AddressClass } from './classify';

/**
 * Why a URL or connection was refused:
 * - `invalid_url`: not a parseable absolute URL;
 * - `scheme`: not `http:` or `https:`;
 * - `credentials`: carries `user:password@` userinfo;
 * - `address`: the host is, or resolves to, a non-public address or a metadata host name;
 * - `dns`: the host name could not be resolved (or not within the timeout), so its addresses could
 *   not be checked.
 */
export type SsrfBlockReason = 'scheme' | 'credentials' | 'address' | 'dns' | 'invalid_url';

/** Constructor fields of {@link SsrfBlockedError}. */
export interface SsrfBlockedErrorOptions {
  /** Why the request was refused. */
  reason: SsrfBlockReason;
  /** The refused URL (userinfo password masked) or, at connect time, the origin. */
  url: string;
  /** Class of the refused address, when `reason` is `address`. */
  addressClass?: AddressClass;
  /** The refused address (or metadata host name), when `reason` is `address`. */
  address?: string;
  /** Underlying error, e.g. the resolver's `ENOTFOUND`. */
  cause?: unknown;
}

/**
 * Thrown (or returned by `checkUrl`) when an outbound request is refused by the SSRF policy.
 * The message is safe to show to the user who supplied the URL, e.g.
 * "webhook_url resolves to 127.0.0.1 (loopback), which is not allowed".
 * Services map it to a 400 `invalid_request` (registration time) or record it as a delivery
 * failure (send time).
 */
export class SsrfBlockedError extends Error {
  override readonly name = 'SsrfBlockedError';
  /** Why the request was refused. */
  readonly reason: SsrfBlockReason;
  /** Class of the refused address, when `reason` is `address`. */
  readonly addressClass?: AddressClass;
  /** The refused address (or metadata host name), when `reason` is `address`. */
  readonly address?: string;
  /** The refused URL (userinfo password masked) or, at connect time, the origin. */
  readonly url: string;

  /** @param message human-readable, user-facing explanation */
  constructor(message: string, options: SsrfBlockedErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.reason = options.reason;
    this.url = options.url;
    if (options.addressClass !== undefined) this.addressClass = options.addressClass;
    if (options.address !== undefined) this.address = options.address;
  }
}

/**
 * Type guard for {@link SsrfBlockedError}. Also recognises instances from another copy of this
 * package (by `name` and `reason`). Does not look at `cause`; see {@link findSsrfBlockedError}.
 */
export function isSsrfBlockedError(e: unknown): e is SsrfBlockedError {
  if (e instanceof SsrfBlockedError) return true;
  return (
    e instanceof Error &&
    e.name === 'SsrfBlockedError' &&
    typeof (e as { reason?: unknown }).reason === 'string' &&
    typeof (e as { url?: unknown }).url === 'string'
  );
}

/**
 * Finds an {@link SsrfBlockedError} in an error or its `cause` chain (depth-limited), e.g. inside
 * the `TypeError: fetch failed` that `fetch` throws when the guarded dispatcher refuses to connect.
 * @returns the error, or `undefined` when the failure was not an SSRF refusal
 */
export function findSsrfBlockedError(e: unknown): SsrfBlockedError | undefined {
  let current: unknown = e;
  for (let depth = 0; depth < 8 && current !== undefined && current !== null; depth += 1) {
    if (isSsrfBlockedError(current)) return current;
    current = current instanceof Error ? current.cause : undefined;
  }
  return undefined;
}
