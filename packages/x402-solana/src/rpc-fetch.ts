/**
 * A transport failure of a JSON-RPC call: connection refused, DNS failure, timeout, connection reset.
 * Raised by the payment verifier's RPC client (the platform error is the `cause`; the payment fails
 * with `rpc_unavailable`) and by {@link rpcFetch} in place of the platform's error so that web3.js
 * recognises it as an `Error` (web3.js drops non-`instanceof Error` rejections of its fetch, which
 * hangs the call: this happens when the platform error comes from another realm, e.g. under jest).
 */
export class RpcTransportError extends Error {
  /** The RPC URL. */
  readonly url: string;
  /** The low-level code when known, e.g. `ECONNREFUSED`, `UND_ERR_HEADERS_TIMEOUT`, `TimeoutError`. */
  readonly code: string | undefined;

  /**
   * @param url the RPC URL
   * @param cause the platform error
   */
  constructor(url: string, cause: unknown) {
    const code = lowLevelCode(cause);
    super(`fetch failed${code ? ` (${code})` : ''}`, { cause });
    this.name = 'RpcTransportError';
    this.url = url;
    this.code = code;
  }
}

/**
 * A `fetch` for web3.js `Connection`s: every call times out after `timeoutMs` milliseconds and
 * transport failures reject with {@link RpcTransportError}.
 */
export function rpcFetch(timeoutMs: number): typeof fetch {
  return async (input, init) => {
    try {
      return await fetch(input, { ...init, signal: AbortSignal.timeout(timeoutMs) });
    } catch (error) {
      throw new RpcTransportError(
        typeof input === 'string' ? input : input instanceof URL ? input.href : input.url,
        error,
      );
    }
  };
}

function lowLevelCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && typeof current === 'object' && current !== null; depth++) {
    const { code, name } = current as { code?: unknown; name?: unknown };
    if (typeof code === 'string') return code;
    if (name === 'TimeoutError' || name === 'AbortError') return name;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
