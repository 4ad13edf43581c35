// The first request of agent-pay, over node:http(s) rather than the global fetch: fetch's first call
// compiles undici's HTTP parser (WebAssembly), about 100 ms of CPU that a free call would spend on
// nothing else. A 402 goes on to fetchWithPayment, which uses fetch (the paying path loads far more).
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';

/** How many redirects are followed, as fetch does. */
const MAX_REDIRECTS = 20;

/** The request agent-pay sends: method, headers and a JSON body text. */
export interface FirstRequest {
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body: string | undefined;
}

/**
 * Sends `init` to `url` and answers a `Response` with the whole body, following redirects as fetch's
 * `redirect: "follow"` does (a 303, or a 301/302 of a POST, turns into a GET without body; at most 20).
 * @throws Error (with `cause`, like fetch's `TypeError: fetch failed`) when the URL cannot be reached,
 *   the protocol is not http or https, or there are too many redirects
 */
export async function firstRequest(url: string, init: FirstRequest): Promise<Response> {
  let target = new URL(url);
  let { method, body } = init;
  const headers = { ...init.headers };
  for (let redirects = 0; ; redirects++) {
    const answer = await send(target, method, headers, body);
    const location = answer.headers.location;
    const status = answer.statusCode ?? 0;
    if (![301, 302, 303, 307, 308].includes(status) || location === undefined) return toResponse(answer);
    answer.resume();
    if (redirects >= MAX_REDIRECTS)
      throw new Error('fetch failed', { cause: new Error('too many redirects') });
    target = new URL(location, target);
    if (status === 303 || ((status === 301 || status === 302) && method === 'POST')) {
      method = 'GET';
      body = undefined;
      delete headers['content-type'];
    }
  }
}

function send(
  target: URL,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const requestFn =
      target.protocol === 'https:' ? httpsRequest : target.protocol === 'http:' ? httpRequest : undefined;
    if (!requestFn) {
      reject(new Error('fetch failed', { cause: new Error(`unsupported protocol ${target.protocol}`) }));
      return;
    }
    const req = requestFn(target, { method, headers }, resolve);
    req.on('error', (error) => reject(new Error('fetch failed', { cause: error })));
    req.end(body);
  });
}

async function toResponse(answer: IncomingMessage): Promise<Response> {
  const chunks: Buffer[] = [];
  for await (const chunk of answer) chunks.push(chunk as Buffer);
  const headers = new Headers();
  for (const [name, value] of Object.entries(answer.headers)) {
    if (Array.isArray(value)) for (const one of value) headers.append(name, one);
    else if (value !== undefined) headers.set(name, value);
  }
  const status = answer.statusCode ?? 0;
  const empty = status === 204 || status === 205 || status === 304;
  return new Response(empty ? null : Buffer.concat(chunks), {
    status,
    statusText: answer.statusMessage ?? '',
    headers,
  });
}
