import { checkUrl, createGuardedDispatcher, findSsrfBlockedError, type SsrfPolicy } from '@repo/ssrf-guard';
import { request, type Dispatcher } from 'undici';
import type { HttpOutcome, SkillHttp } from '../domain/verification';

/** Options of {@link createSkillHttp}. */
export interface SkillHttpOptions {
  /** Addresses and hosts allowed although not public (development, tests). */
  policy: SsrfPolicy;
  /** Whole-request timeout in ms (connect, headers and body). */
  timeoutMs: number;
  /** Largest response body read, in bytes; larger answers fail with `too_large`. */
  maxResponseBytes: number;
}

/** {@link SkillHttp} plus the SSRF pre-check and shutdown. */
export interface GuardedSkillHttp extends SkillHttp {
  /**
   * Checks an endpoint against the SSRF policy (scheme, credentials, resolved addresses).
   * @returns `null` when allowed, else the user-facing refusal
   */
  refusal(url: string): Promise<string | null>;
  /** Closes the pooled connections. */
  close(): Promise<void>;
}

/**
 * The undici dispatcher of every outbound request to a skill or MCP server: `@repo/ssrf-guard`'s
 * guarded dispatcher (each connection's addresses checked against `policy` when it is made), with
 * connect, headers and body timeouts of `timeoutMs` milliseconds.
 */
export function createSkillDispatcher(policy: SsrfPolicy, timeoutMs: number): Dispatcher {
  return createGuardedDispatcher(policy, {
    connectTimeoutMs: timeoutMs,
    agentOptions: { headersTimeout: timeoutMs, bodyTimeout: timeoutMs, keepAliveTimeout: 4000 },
  });
}

/**
 * Outbound HTTP to skill endpoints through `@repo/ssrf-guard`'s guarded undici dispatcher (every
 * connection's addresses are re-checked when it is made, so DNS rebinding and redirects to internal
 * addresses are refused). Redirects are not followed. Responses are read up to `maxResponseBytes`.
 */
export function createSkillHttp(options: SkillHttpOptions): GuardedSkillHttp {
  const dispatcher = createSkillDispatcher(options.policy, options.timeoutMs);

  async function send(url: string, init: { method: 'GET' | 'POST'; body?: string }): Promise<HttpOutcome> {
    const t0 = performance.now();
    const elapsed = () => Math.round(performance.now() - t0);
    const signal = AbortSignal.timeout(options.timeoutMs);
    try {
      const res = await request(url, {
        method: init.method,
        dispatcher,
        signal,
        headers: {
          accept: 'application/json',
          'user-agent': 'skill-router-verifier/0.1',
          ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(init.body !== undefined ? { body: init.body } : {}),
      });
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body) {
        const buf = chunk as Buffer;
        size += buf.length;
        if (size > options.maxResponseBytes) {
          res.body.destroy();
          return {
            ok: false,
            latencyMs: elapsed(),
            error: `response larger than ${options.maxResponseBytes} bytes`,
            kind: 'too_large',
          };
        }
        chunks.push(buf);
      }
      const ct = res.headers['content-type'];
      return {
        ok: true,
        status: res.statusCode,
        latencyMs: elapsed(),
        contentType: typeof ct === 'string' ? ct : null,
        body: Buffer.concat(chunks).toString('utf8'),
      };
    } catch (err) {
      const blocked = findSsrfBlockedError(err);
      if (blocked)
        return {
          ok: false,
          latencyMs: elapsed(),
          error: `endpoint refused: ${blocked.message}`,
          kind: 'refused',
        };
      if (signal.aborted || isTimeout(err)) {
        return {
          ok: false,
          latencyMs: elapsed(),
          error: `no answer within ${options.timeoutMs} ms`,
          kind: 'timeout',
        };
      }
      const code = (err as { code?: unknown }).code;
      const message = err instanceof Error ? err.message : String(err);
      return {
        ok: false,
        latencyMs: elapsed(),
        error: `unreachable: ${typeof code === 'string' ? `${code} ` : ''}${message}`.trim(),
        kind: 'network',
      };
    }
  }

  return {
    get: (url) => send(url, { method: 'GET' }),
    postJson: (url, body) => send(url, { method: 'POST', body: JSON.stringify(body) }),
    async refusal(url) {
      const result = await checkUrl(url, options.policy, { label: 'endpoint' });
      return result.ok ? null : result.error.message;
    },
    close: () => dispatcher.close(),
  };
}

function isTimeout(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  const name = (err as { name?: unknown } | null)?.name;
  return (
    code === 'UND_ERR_CONNECT_TIMEOUT' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    name === 'TimeoutError' ||
    name === 'AbortError'
  );
}
