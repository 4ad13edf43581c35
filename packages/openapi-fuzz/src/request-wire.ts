// Encoding a generated request: valid parts plus one mutation become a FuzzRequest, with its conformance decided and its printed form.
import { parse as parseQueryString } from 'node:querystring';
import fc from 'fast-check';
import type { FuzzAuth, FuzzRequest } from './fuzz-types';
import { fromWire, type Compiled } from './openapi-document';

/** Printable ASCII: what a header value may hold without fetch refusing it. */
export const HEADER_SAFE = /^[\x20-\x7e]*$/;

/** A scalar value as a parameter's wire string. */
export const toWire = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));

/** Lone surrogates, which no URL can carry (UTF-8): they become U+FFFD, as a browser would send them. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
/** A parameter value percent-encoded for a URL (lone surrogates sent as U+FFFD). */
export const encode = (v: string) => encodeURIComponent(v.replace(LONE_SURROGATE, '\uFFFD'));

/** A percent-encoded path segment; `.` and `..` (which URL parsers collapse) are never produced. */
const encodeSegment = (v: string) =>
  v === '.' || v === '..' ? encode(v).replace(/\./g, '%252E') : encode(v);

/**
 * Longest encoded parameter value sent: URLs stay under Node's 16 KB header limit, whose 431 answer
 * comes from the HTTP parser, before any code of the service runs.
 */
const MAX_ENCODED = 5000;
/** Whether a value, encoded, stays within {@link MAX_ENCODED}. */
export const fitsUrl = (v: string) => encode(v).length <= MAX_ENCODED;

/** The valid parts of a request, before encoding. */
export interface Parts {
  params: Record<string, unknown>;
  /** JSON text of the body (undefined: the operation takes none). */
  body?: string;
  auth: FuzzAuth;
}

/** A mutation applied to valid {@link Parts}. */
export type Mutation =
  | { kind: 'param'; name: string; value: string | null | string[]; raw: boolean; what: string }
  | { kind: 'body'; text: string; what: string }
  | {
      kind: 'transport';
      /** `null`: no content-type header. */
      contentType: string | null;
      /** `valid`: the valid body; `none`: no body at all. */
      data: 'valid' | 'none' | { bytes: Uint8Array } | { text: string };
      what: string;
    }
  | { kind: 'extra-query'; raw: string; what: string }
  | { kind: 'header'; name: string; value: string; what: string };

/** Shortens long strings in a printed counterexample (a 1.2 MB body would drown the report). */
function summarize(request: FuzzRequest): string {
  const cut = (s: string) =>
    s.length > 300 ? `${JSON.stringify(s.slice(0, 200))}…(${s.length} units)` : JSON.stringify(s);
  const body = request.body
    ? `, body: { contentType: ${request.body.contentType === undefined ? 'none' : JSON.stringify(request.body.contentType)}, data: ${
        typeof request.body.data === 'string' ? cut(request.body.data) : `<${request.body.data.length} bytes>`
      } }`
    : '';
  const headers = Object.entries(request.headers)
    .map(([k, v]) => `${k}: ${cut(v)}`)
    .join(', ');
  const auth =
    request.auth.mode === 'garbage'
      ? `garbage ${request.auth.slot.scheme} ${cut(request.auth.value)}`
      : request.auth.mode === 'valid'
        ? `valid ${request.auth.slots.map((s) => s.scheme).join('+')}`
        : 'none';
  return `${request.method} ${cut(request.path + (request.query ? `?${request.query}` : ''))} {${
    request.mutation ? ` mutation: ${JSON.stringify(request.mutation)},` : ''
  } conforms: ${request.conforms}, auth: ${auth}, headers: { ${headers} }${body} }`;
}

/** Builds the encoded request from valid parts and an optional mutation, and decides conformance. */
export function build(
  compiled: Compiled,
  operationId: string,
  method: string,
  template: string,
  parts: Parts,
  mutation?: Mutation,
): FuzzRequest {
  const values = new Map<string, { value: string | string[]; raw: boolean }>();
  for (const [id, v] of Object.entries(parts.params)) values.set(id, { value: v as string, raw: false });
  if (mutation?.kind === 'param') {
    if (mutation.value === null) values.delete(mutation.name);
    else values.set(mutation.name, { value: mutation.value, raw: mutation.raw });
  }
  let path = template;
  const queryParts: string[] = [];
  const headers: Record<string, string> = {};
  for (const p of compiled.parameters) {
    const entry = values.get(`${p.in}:${p.name}`);
    if (!entry) continue;
    const list = Array.isArray(entry.value) ? entry.value : [entry.value];
    const enc = (v: string) => (entry.raw ? v : p.in === 'path' ? encodeSegment(v) : encode(v));
    if (p.in === 'path') path = path.split(`{${p.name}}`).join(enc(list[0] ?? ''));
    else if (p.in === 'query')
      for (const v of list) queryParts.push(`${encodeURIComponent(p.name)}=${enc(v)}`);
    else if (p.in === 'header') headers[p.name] = list[0] ?? '';
    else if (p.in === 'cookie')
      headers.cookie = `${headers.cookie ? `${headers.cookie}; ` : ''}${p.name}=${enc(list[0] ?? '')}`;
  }
  if (mutation?.kind === 'extra-query') queryParts.push(mutation.raw);
  if (mutation?.kind === 'header') headers[mutation.name] = mutation.value;

  let body: FuzzRequest['body'];
  if (parts.body !== undefined) body = { contentType: 'application/json', data: parts.body };
  if (mutation?.kind === 'body') body = { contentType: 'application/json', data: mutation.text };
  if (mutation?.kind === 'transport') {
    const m = mutation;
    const data: string | Uint8Array | undefined =
      m.data === 'none'
        ? undefined
        : m.data === 'valid'
          ? (parts.body ?? '{}')
          : 'bytes' in m.data
            ? m.data.bytes
            : m.data.text;
    if (data === undefined)
      body = m.contentType === null ? undefined : { contentType: m.contentType, data: '' };
    else body = m.contentType === null ? { data } : { contentType: m.contentType, data };
  }

  const query = queryParts.join('&');
  const request: FuzzRequest = {
    operationId,
    method,
    path,
    query,
    headers,
    ...(body ? { body } : {}),
    auth: parts.auth,
    ...(mutation ? { mutation: mutation.what } : {}),
    conforms: conforms(compiled, template, path, query, body),
  };
  Object.defineProperty(request, fc.toStringMethod, { value: () => summarize(request), enumerable: false });
  return request;
}

/** Whether the path and query parameters and the body validate against the document. */
function conforms(
  compiled: Compiled,
  template: string,
  path: string,
  query: string,
  body: FuzzRequest['body'],
): boolean {
  // Path parameters: match the template, decode, validate.
  const names: string[] = [];
  const pattern = new RegExp(
    '^' +
      template
        .replace(/[.*+?^$()|[\]\\]/g, '\\$&')
        .replace(/\{([^}]+)\}/g, (_m, n: string) => (names.push(n), '([^/]*)')) +
      '$',
  );
  const match = pattern.exec(path);
  if (!match) return false;
  const wire = parseQueryString(query);
  for (const p of compiled.parameters) {
    const id = `${p.in}:${p.name}`;
    const validate = compiled.validateParam.get(id);
    const types = compiled.paramTypes.get(id) ?? [];
    let raw: string | undefined;
    if (p.in === 'path') {
      const segment = match[names.indexOf(p.name) + 1] ?? '';
      try {
        raw = decodeURIComponent(segment);
      } catch {
        return false;
      }
      if (raw.length === 0) return false;
    } else if (p.in === 'query') {
      const v = wire[p.name];
      if (Array.isArray(v)) return false;
      raw = v;
    } else continue;
    if (raw === undefined) {
      if (p.required) return false;
      continue;
    }
    if (validate && !validate(fromWire(raw, types))) return false;
  }
  if (!compiled.body) return true;
  if (!body) return !compiled.body.required;
  const type = body.contentType?.split(';');
  if (!type || type[0]?.trim().toLowerCase() !== 'application/json') return false;
  const charset = /charset\s*=\s*"?([^";]+)/i.exec(body.contentType ?? '')?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') return false;
  if (typeof body.data !== 'string') return false;
  let value: unknown;
  try {
    // RFC 8259 lets a parser ignore a leading byte order mark, and body-parser does.
    value = JSON.parse(body.data.replace(/^\uFEFF/, ''));
  } catch {
    return false;
  }
  return compiled.body.validate(value) === true;
}
