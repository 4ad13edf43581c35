// The one error dialect of the services (docs/architecture.md, "One error dialect"), checked over every
// operation of an OpenAPI document against the running service: deterministic requests, one per rule.
import fc from 'fast-check';
import { sendFuzzRequest } from './fuzz-run';
import type { CredentialSlot, FuzzOperation, FuzzRequest, FuzzResponse, OpenApiDocument } from './fuzz-types';
import { isObject } from './json-schema';
import { envelopeProblems } from './judge';
import { deref } from './openapi-document';

/** The rules {@link errorDialectProblems} checks, each on the operations it applies to. */
export type DialectRule =
  /** Every operation documents a 400; one with a body also 413 and 415. */
  | 'documented'
  /** A query parameter the operation does not know: 400 `invalid_request` naming it, every time (never a 402). */
  | 'unknown-query'
  /** A body field the operation does not know: the validation status, `invalid_request`, naming it. */
  | 'unknown-field'
  /** A required body field left out, or a query parameter of the wrong type: words, not parser wording, and `details.issues`. */
  | 'validation'
  /** A JSON body sent as `text/plain`: 415 `unsupported_media_type`. */
  | 'content-type'
  /** A body over the limit: 413 `payload_too_large` with `details.limit_bytes`. */
  | 'too-large'
  /** Wherever a key is accepted in `x-api-key`, `Authorization: Bearer <key>` is documented and accepted. */
  | 'bearer';

/** A rule an operation is allowed to break for now, with the reason (and who fixes it). */
export interface DialectGap {
  operationId: string;
  rule: DialectRule;
  reason: string;
}

/** Options of {@link errorDialectProblems}. */
export interface DialectOptions {
  baseUrl: string;
  /** Valid credential values by security scheme name (the `http` bearer scheme's too). */
  credentials: Readonly<Record<string, string>>;
  /** The body limit of the service, in bytes (what its 413 must report in `details.limit_bytes`). */
  bodyLimitBytes: number;
  /** Path parameter values that exist (a job id, a skill id), so a request gets past existence checks. */
  pathValues?: Readonly<Record<string, string>>;
  /** The status of a failed body validation per operation id where a spec names one (default 400). */
  bodyStatus?: Readonly<Record<string, number>>;
  /** Headers set on every request, over any drawn header parameter (`x-forwarded-for`, a CSRF token). */
  headers?: Readonly<Record<string, string>>;
  /** Rules that operations may break for now; a gap that no longer shows is reported too. */
  gaps?: readonly DialectGap[];
}

/** zod's own wording, which must never reach a client. */
const PARSER_WORDING =
  /Invalid input|expected [a-z]+, received|Too (small|big):|Unrecognized key|Invalid option/;
/** The unknown names the checks send. */
const UNKNOWN_QUERY = 'zz_unknown_param';
const UNKNOWN_FIELD = 'zz_unknown_field';
const SNAKE = /^[a-z][a-z0-9_]*$/;

type Obj = Record<string, unknown>;

/** The operation object of `op` in the document. */
function operationObject(doc: OpenApiDocument, op: FuzzOperation): Obj {
  const item = deref(doc, (doc.paths as Obj)[op.path]);
  const found = isObject(item) ? item[op.method.toLowerCase()] : undefined;
  return isObject(found) ? found : {};
}

/** The credential slot of a security scheme, as the fuzzer fills one. */
function slotOf(doc: OpenApiDocument, scheme: string): CredentialSlot | undefined {
  const schemes =
    isObject(doc.components) && isObject(doc.components.securitySchemes)
      ? doc.components.securitySchemes
      : {};
  const s = deref(doc, schemes[scheme]);
  if (!isObject(s)) return undefined;
  if (
    s.type === 'apiKey' &&
    typeof s.name === 'string' &&
    (s.in === 'header' || s.in === 'query' || s.in === 'cookie')
  )
    return { scheme, in: s.in, name: s.name, prefix: '' };
  if (s.type === 'http' && String(s.scheme).toLowerCase() === 'bearer')
    return { scheme, in: 'header', name: 'authorization', prefix: 'Bearer ' };
  return undefined;
}

/** The security requirements of an operation, as lists of scheme names. */
function requirements(doc: OpenApiDocument, operation: Obj): string[][] {
  const security = Array.isArray(operation.security)
    ? operation.security
    : Array.isArray(doc.security)
      ? doc.security
      : [];
  return security.filter(isObject).map((r) => Object.keys(r));
}

/** A valid request of `op` (parameters and body drawn from the document, seeded), with the given auth. */
function baseRequest(op: FuzzOperation, auth: FuzzRequest['auth'], options: DialectOptions): FuzzRequest {
  const [sampled] = fc.sample(op.valid, { numRuns: 1, seed: 42 });
  if (!sampled) throw new Error(`${op.operationId}: no valid request could be drawn`);
  let path = sampled.path;
  const names = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] ?? '');
  if (names.length > 0 && names.every((n) => options.pathValues?.[n] !== undefined))
    path = op.path.replace(/\{([^}]+)\}/g, (_m, n: string) =>
      encodeURIComponent(options.pathValues?.[n] ?? ''),
    );
  // The test's headers win over drawn ones (a CSRF token of the session, say).
  return { ...sampled, path, auth, headers: { ...sampled.headers, ...options.headers } };
}

/** The auth of a request with valid credentials: the first requirement the test holds every scheme of. */
function validAuth(
  doc: OpenApiDocument,
  operation: Obj,
  credentials: Readonly<Record<string, string>>,
): FuzzRequest['auth'] {
  const reqs = requirements(doc, operation);
  if (reqs.length === 0 || reqs.some((r) => r.length === 0)) return { mode: 'none' };
  for (const req of reqs) {
    const slots = req.map((s) => slotOf(doc, s));
    if (
      req.every((s) => credentials[s] !== undefined) &&
      slots.every((s): s is CredentialSlot => s !== undefined)
    )
      return { mode: 'valid', slots };
  }
  return { mode: 'none' };
}

/** What keeps `res` from being a validation answer with `status` that names `path`. */
function validationProblems(res: FuzzResponse, status: number, path?: string, code?: string): string[] {
  const problems: string[] = [];
  if (res.status !== status) return [`answered ${res.status}, not ${status}: ${res.text.slice(0, 300)}`];
  problems.push(...envelopeProblems(res.json));
  const body = (isObject(res.json) ? res.json : {}) as { error?: unknown; code?: unknown; details?: unknown };
  if (body.code !== 'invalid_request')
    problems.push(`code ${JSON.stringify(body.code)}, not "invalid_request"`);
  if (typeof body.error === 'string' && PARSER_WORDING.test(body.error))
    problems.push(`the message has the parser's wording: ${JSON.stringify(body.error)}`);
  const issues =
    isObject(body.details) && Array.isArray(body.details.issues) ? body.details.issues : undefined;
  if (!issues || issues.length === 0) return [...problems, `no details.issues: ${res.text.slice(0, 300)}`];
  for (const issue of issues) {
    if (
      !isObject(issue) ||
      typeof issue.path !== 'string' ||
      typeof issue.message !== 'string' ||
      typeof issue.code !== 'string' ||
      !SNAKE.test(issue.code)
    )
      problems.push(`an issue without path, snake_case code and message: ${JSON.stringify(issue)}`);
    else if (PARSER_WORDING.test(issue.message))
      problems.push(`an issue in the parser's wording: ${JSON.stringify(issue)}`);
  }
  if (path !== undefined) {
    const named = issues.some(
      (i) => isObject(i) && i.path === path && (code === undefined || i.code === code),
    );
    if (!named) problems.push(`no issue ${code ?? ''} at ${path}: ${JSON.stringify(issues).slice(0, 300)}`);
    const last = path.split('.').pop() ?? '';
    if (typeof body.error === 'string' && !body.error.includes(last))
      problems.push(`the message does not name \`${last}\`: ${JSON.stringify(body.error)}`);
  }
  return problems;
}

/**
 * Checks the one error dialect (docs/architecture.md, "One error dialect") on every operation of `doc`
 * against the running service, with one deterministic request per rule (see {@link DialectRule}):
 * unknown query parameters (sent twice: a cached answer must not turn into a 402) and body fields
 * refused by name before anything else, validation answered in words with `details.issues`, a JSON
 * body sent as another type answered 415, a body over the limit 413 with `details.limit_bytes`, and
 * `Authorization: Bearer` beside every `x-api-key`. Requests carry valid credentials (the first
 * requirement of the operation whose schemes are all in `options.credentials`) and no payment.
 * @param doc the document as served at `/openapi.json`
 * @param operations `fuzzOperations(doc, ...)` of the same document (their valid requests are the base)
 * @returns one sentence per problem, prefixed with the operation id and rule; empty when all hold
 */
export async function errorDialectProblems(
  doc: OpenApiDocument,
  operations: readonly FuzzOperation[],
  options: DialectOptions,
): Promise<string[]> {
  const found: { operationId: string; rule: DialectRule; problem: string }[] = [];
  const send = (request: FuzzRequest) =>
    sendFuzzRequest(options.baseUrl, request, options.credentials, 30_000, options.headers ?? {});

  for (const op of operations) {
    const operation = operationObject(doc, op);
    const report = (rule: DialectRule, problems: string[]) => {
      for (const problem of problems) found.push({ operationId: op.operationId, rule, problem });
    };
    const responses = isObject(operation.responses) ? operation.responses : {};
    const body = deref(doc, operation.requestBody);
    const bodySchema =
      isObject(body) && isObject(body.content) && isObject(body.content['application/json'])
        ? deref(doc, body.content['application/json'].schema)
        : undefined;
    const hasBody = bodySchema !== undefined;
    const validationStatus = options.bodyStatus?.[op.operationId] ?? 400;

    report('documented', [
      ...(responses['400'] === undefined ? ['400 is not documented'] : []),
      ...(hasBody && responses['413'] === undefined ? ['413 is not documented'] : []),
      ...(hasBody && responses['415'] === undefined ? ['415 is not documented'] : []),
    ]);

    const auth = validAuth(doc, operation, options.credentials);
    const base = baseRequest(op, auth, options);
    const withQuery = (extra: string): FuzzRequest => ({
      ...base,
      query: base.query ? `${base.query}&${extra}` : extra,
    });

    // Unknown query parameter, twice in a row.
    for (let attempt = 1; attempt <= 2; attempt++) {
      const res = await send(withQuery(`${UNKNOWN_QUERY}=1`));
      report(
        'unknown-query',
        validationProblems(res, 400, `query.${UNKNOWN_QUERY}`, 'unknown_parameter').map(
          (p) => `attempt ${attempt}: ${p}`,
        ),
      );
    }

    // A query parameter of the wrong type (an integer one), when there is one.
    const parameters = (Array.isArray(operation.parameters) ? operation.parameters : [])
      .map((p) => deref(doc, p))
      .filter(isObject);
    const integer = parameters.find(
      (p) =>
        p.in === 'query' &&
        isObject(p.schema) &&
        deref(doc, p.schema) !== undefined &&
        (deref(doc, p.schema) as Obj).type === 'integer',
    );
    if (integer && typeof integer.name === 'string') {
      const params = new URLSearchParams(base.query);
      params.set(integer.name, 'not-a-number');
      const res = await send({ ...base, query: params.toString() });
      report('validation', validationProblems(res, 400, `query.${integer.name}`));
    }

    if (hasBody && typeof base.body?.data === 'string') {
      const valid: unknown = JSON.parse(base.body.data);
      if (isObject(valid)) {
        const res = await send({
          ...base,
          body: { contentType: 'application/json', data: JSON.stringify({ ...valid, [UNKNOWN_FIELD]: 1 }) },
        });
        report(
          'unknown-field',
          validationProblems(res, validationStatus, `body.${UNKNOWN_FIELD}`, 'unknown_field'),
        );
        const required =
          isObject(bodySchema) && Array.isArray(bodySchema.required)
            ? bodySchema.required.filter((r): r is string => typeof r === 'string')
            : [];
        const [first] = required;
        if (first !== undefined) {
          const { [first]: _left, ...rest } = valid;
          const missing = await send({
            ...base,
            body: { contentType: 'application/json', data: JSON.stringify(rest) },
          });
          report('validation', validationProblems(missing, validationStatus, `body.${first}`, 'required'));
        }
      }
      const plain = await send({ ...base, body: { contentType: 'text/plain', data: base.body.data } });
      report('content-type', [
        ...(plain.status === 415 ? [] : [`answered ${plain.status}, not 415: ${plain.text.slice(0, 300)}`]),
        ...(plain.status === 415 ? envelopeProblems(plain.json) : []),
        ...(plain.status === 415 && isObject(plain.json) && plain.json.code !== 'unsupported_media_type'
          ? [`code ${JSON.stringify(plain.json.code)}`]
          : []),
      ]);
      const big = JSON.stringify({ [UNKNOWN_FIELD]: 'x'.repeat(options.bodyLimitBytes + 16) });
      const large = await send({ ...base, body: { contentType: 'application/json', data: big } });
      const details = isObject(large.json) && isObject(large.json.details) ? large.json.details : {};
      report('too-large', [
        ...(large.status === 413 ? [] : [`answered ${large.status}, not 413: ${large.text.slice(0, 200)}`]),
        ...(large.status === 413 && details.limit_bytes !== options.bodyLimitBytes
          ? [`details.limit_bytes is ${JSON.stringify(details.limit_bytes)}, not ${options.bodyLimitBytes}`]
          : []),
      ]);
    }

    // Bearer beside x-api-key: documented as an alternative, and accepted.
    const reqs = requirements(doc, operation);
    const headerKey = reqs.flat().find((s) => {
      const slot = slotOf(doc, s);
      return slot?.in === 'header' && slot.name.toLowerCase() === 'x-api-key';
    });
    if (headerKey !== undefined) {
      const bearer = reqs.find((r) => r.length === 1 && slotOf(doc, r[0] ?? '')?.name === 'authorization');
      if (!bearer)
        report('bearer', ['x-api-key is accepted but no Authorization: Bearer alternative is documented']);
      else if (options.credentials[headerKey] !== undefined) {
        const slot = slotOf(doc, bearer[0] ?? '');
        if (slot) {
          const res = await send({ ...base, auth: { mode: 'valid', slots: [slot] } });
          if (res.status === 401)
            report('bearer', [
              `Authorization: Bearer with a valid key answered 401: ${res.text.slice(0, 200)}`,
            ]);
        }
      }
    }
  }

  const gaps = options.gaps ?? [];
  const open = found.filter((f) => !gaps.some((g) => g.operationId === f.operationId && g.rule === f.rule));
  const closed = gaps.filter((g) => !found.some((f) => f.operationId === g.operationId && f.rule === g.rule));
  return [
    ...open.map((f) => `${f.operationId} [${f.rule}]: ${f.problem}`),
    ...closed.map(
      (g) => `${g.operationId} [${g.rule}]: listed as a gap (${g.reason}) but it holds now: remove the gap`,
    ),
  ];
}
