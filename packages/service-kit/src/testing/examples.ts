import { writeFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

/** What {@link exampleCheck} found in an OpenAPI document. */
export interface ExampleCheck {
  /**
   * `METHOD path status` (or `METHOD path request`, `METHOD path status header Name`, `METHOD path
   * request header Name`) of each example that its schema refuses, with why.
   */
  invalid: string[];
  /** `METHOD path status` (or `METHOD path request`) of each JSON body documented without an example. */
  missing: string[];
  /**
   * `METHOD path status header Name` (a response header) or `METHOD path request header Name` (a header
   * parameter) of each header documented without an example.
   */
  missingHeaders: string[];
  /** How many examples were checked (bodies, parameters and headers). */
  checked: number;
}

type Media = { schema?: unknown; example?: unknown };
type Header = { schema?: unknown; example?: unknown };
type Parameter = { name?: unknown; in?: unknown; schema?: unknown; example?: unknown };
type Operation = {
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, Media> };
  responses?: Record<string, { content?: Record<string, Media>; headers?: Record<string, Header> }>;
};

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The JSON a string example carries when its schema says so with the content keywords
 * (`contentMediaType: application/json`, optionally `contentEncoding: base64`), or why it does not.
 */
function contentOf(schema: Record<string, unknown>, example: string): { json: unknown } | { error: string } {
  let text = example;
  if (schema.contentEncoding === 'base64') {
    if (!BASE64.test(example)) return { error: 'the example is not base64' };
    text = Buffer.from(example, 'base64').toString('utf8');
  }
  try {
    return { json: JSON.parse(text) as unknown };
  } catch {
    return { error: 'the decoded example is not JSON' };
  }
}

/**
 * Checks every example of a served OpenAPI 3.1 document against the schema it illustrates (JSON Schema
 * 2020-12, `$ref`s into `components` resolved, formats checked), so an example cannot drift from the
 * contract, and lists the JSON bodies and the headers that have none (docs/architecture.md, "Routes
 * own their contracts"). Bodies, parameters and response headers are checked. A string example whose
 * schema has `contentMediaType: 'application/json'` (and `contentEncoding: 'base64'`) must also
 * decode to JSON, valid against the schema's `contentSchema` when it has one: a base64 x402 header
 * carries a payload that must match its protocol schema.
 * @param doc the document as served at `/openapi.json`
 */
export function exampleCheck(doc: {
  paths?: Record<string, Record<string, unknown>>;
  components?: unknown;
}): ExampleCheck {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  const result: ExampleCheck = { invalid: [], missing: [], missingHeaders: [], checked: 0 };
  const validate = (where: string, schema: unknown, value: unknown): boolean => {
    const check = ajv.compile({ ...(schema as object), components: doc.components });
    if (check(value)) return true;
    result.invalid.push(`${where}: ${ajv.errorsText(check.errors, { separator: '; ' })}`);
    return false;
  };
  const checkBody = (where: string, media: Media | undefined) => {
    if (!media?.schema) return;
    if (media.example === undefined) {
      result.missing.push(where);
      return;
    }
    result.checked++;
    validate(where, media.schema, media.example);
  };
  const checkValue = (where: string, schema: unknown, example: unknown) => {
    if (example === undefined) {
      result.missingHeaders.push(where);
      return;
    }
    result.checked++;
    if (typeof schema !== 'object' || schema === null) return;
    if (!validate(where, schema, example)) return;
    const keywords = schema as Record<string, unknown>;
    if (keywords.contentMediaType !== 'application/json' || typeof example !== 'string') return;
    const content = contentOf(keywords, example);
    if ('error' in content) result.invalid.push(`${where}: ${content.error}`);
    else if (keywords.contentSchema !== undefined)
      validate(`${where} (decoded)`, keywords.contentSchema, content.json);
  };
  for (const [path, methods] of Object.entries(doc.paths ?? {})) {
    for (const [method, value] of Object.entries(methods)) {
      const op = value as Operation;
      const name = `${method.toUpperCase()} ${path}`;
      checkBody(`${name} request`, op.requestBody?.content?.['application/json']);
      for (const p of op.parameters ?? []) {
        if (p.in === 'header') checkValue(`${name} request header ${String(p.name)}`, p.schema, p.example);
        else if (p.example !== undefined) {
          result.checked++;
          validate(`${name} ${String(p.in)} ${String(p.name)}`, p.schema, p.example);
        }
      }
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        checkBody(`${name} ${status}`, response.content?.['application/json']);
        for (const [header, h] of Object.entries(response.headers ?? {}))
          checkValue(`${name} ${status} header ${header}`, h.schema, h.example);
      }
    }
  }
  return result;
}

/**
 * A header's value as its schema types it (OpenAPI's `simple` style): a number for an `integer` or
 * `number` schema, a boolean for a `boolean` one, else the string as received.
 */
function typedHeaderValue(schema: unknown, value: string): unknown {
  const type = (schema as { type?: unknown } | undefined)?.type;
  if ((type === 'integer' || type === 'number') && value.trim() !== '' && Number.isFinite(Number(value)))
    return Number(value);
  if (type === 'boolean' && (value === 'true' || value === 'false')) return value === 'true';
  return value;
}

/**
 * The examples of the headers an operation documents, read from a real exchange with the running
 * service and keyed as `withExamples` reads them (docs/architecture.md, "Routes own their contracts"):
 * for `at = 'request'` the operation's header parameters found among the headers sent
 * (`"<operationId> request header <Name>"`), else the response headers the document lists for that
 * status found in the answer (`"<operationId> <status> header <Name>"`). Names are matched without
 * regard to case and keyed as the document spells them; a documented header the exchange lacks is
 * left out. A value is typed as its schema says (`Retry-After: 30` of an integer header is `30`).
 * @param doc the document as served at `/openapi.json`
 * @param operationId the operation the exchange called
 * @param at `'request'`, or the status of the answer (e.g. `'402'`)
 * @param headers the headers sent (`'request'`) or received
 * @throws Error when the document has no such operation, or the operation documents no such status
 */
export function headerExamples(
  doc: { paths?: Record<string, Record<string, unknown>> },
  operationId: string,
  at: string,
  headers: Headers | Readonly<Record<string, string>>,
): Record<string, unknown> {
  const op = Object.values(doc.paths ?? {})
    .flatMap((methods) => Object.values(methods) as (Operation & { operationId?: unknown })[])
    .find((o) => o.operationId === operationId);
  if (!op) throw new Error(`the document has no operation ${operationId}`);
  let documented: [string, unknown][];
  if (at === 'request') {
    documented = (op.parameters ?? [])
      .filter((p) => p.in === 'header')
      .map((p) => [String(p.name), p.schema]);
  } else {
    const response = op.responses?.[at];
    if (!response) throw new Error(`${operationId} documents no ${at} answer`);
    documented = Object.entries(response.headers ?? {}).map(([name, h]) => [name, h.schema]);
  }
  const received = new Headers(headers as ConstructorParameters<typeof Headers>[0]);
  const out: Record<string, unknown> = {};
  for (const [name, schema] of documented) {
    const value = received.get(name);
    if (value !== null) out[`${operationId} ${at} header ${name}`] = typedHeaderValue(schema, value);
  }
  return out;
}

/**
 * Whether a service's example generator runs (`UPDATE_OPENAPI_EXAMPLES=1`): it calls every operation
 * for real and rewrites the captured examples, so it is skipped otherwise.
 */
export const CAPTURE_EXAMPLES = process.env.UPDATE_OPENAPI_EXAMPLES === '1';

/** `value` with every array cut to its first two items (an example shows the shape, not the bulk). */
function trim(value: unknown): unknown {
  if (Array.isArray(value)) return value.slice(0, 2).map(trim);
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, trim(v)]));
  return value;
}

/**
 * Writes captured examples, by `"<operationId> <status>"`, `"<operationId> request"` and the header
 * keys of {@link headerExamples}, to `file` as `withExamples` reads them: JSON, arrays cut to two items.
 */
export function writeExamples(file: string, examples: Record<string, unknown>): void {
  writeFileSync(file, `${JSON.stringify(trim(examples), null, 2)}\n`);
}
