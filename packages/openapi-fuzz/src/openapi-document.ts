// Reading an OpenAPI 3.1 document: `$ref`s, an operation's parameters, JSON body and responses with their ajv validators.
import type { ValidateFunction } from 'ajv';
import { isObject, type JsonSchema } from './json-schema';
import { OpenApiFuzzError, type OpenApiDocument } from './fuzz-types';

/** A JSON object of the document. */
export type Obj = Record<string, unknown>;
/** The operation keys of a path item. */
export const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
/** The id the document is registered under in ajv, for `$ref`s to its places. */
export const DOC_ID = 'urn:fuzz:openapi';

/** A key of `paths` or `responses` as a JSON pointer segment (`~` and `/` escaped, then URI-encoded). */
export const escapePointer = (part: string) =>
  encodeURIComponent(part.replace(/~/g, '~0').replace(/\//g, '~1'));

/** Follows a `$ref` to a document object (parameters, request bodies, responses). */
export function deref(doc: OpenApiDocument, value: unknown): unknown {
  let current = value;
  for (let hops = 0; isObject(current) && typeof current.$ref === 'string'; hops++) {
    if (hops > 16 || !current.$ref.startsWith('#/'))
      throw new OpenApiFuzzError(`cannot follow $ref ${current.$ref}`);
    let node: unknown = doc;
    for (const part of current.$ref.slice(2).split('/'))
      node = isObject(node)
        ? node[decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~')]
        : undefined;
    current = node;
  }
  return current;
}

/** A parameter of an operation, with where its schema sits in the document. */
export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required: boolean;
  schema: JsonSchema;
  /** JSON pointer of its schema in the document. */
  pointer: string;
}

/** The JSON types a parameter schema admits (for turning the wire string back into a value). */
export function scalarTypes(doc: OpenApiDocument, schema: JsonSchema): string[] {
  const resolved = deref(doc, schema);
  if (!isObject(resolved)) return [];
  if (typeof resolved.type === 'string') return [resolved.type];
  if (Array.isArray(resolved.type)) return resolved.type.filter((t): t is string => typeof t === 'string');
  const branches = Array.isArray(resolved.anyOf) ? resolved.anyOf : resolved.oneOf;
  return Array.isArray(branches) ? branches.flatMap((b) => scalarTypes(doc, b as JsonSchema)) : [];
}

/** The value a wire string stands for under a parameter schema (numbers and booleans coerced as zod's coerce does). */
export function fromWire(raw: string, types: readonly string[]): unknown {
  if (
    (types.includes('integer') || types.includes('number')) &&
    raw.trim() !== '' &&
    Number.isFinite(Number(raw))
  )
    return Number(raw);
  if (types.includes('boolean') && (raw === 'true' || raw === 'false')) return raw === 'true';
  return raw;
}

/** An operation's parameters, JSON body and responses, with ajv validators compiled at their places. */
export interface Compiled {
  parameters: Parameter[];
  validateParam: Map<string, ValidateFunction>;
  paramTypes: Map<string, string[]>;
  body?: { schema: JsonSchema; required: boolean; validate: ValidateFunction };
  responses: Map<string, { validate?: ValidateFunction; schemaName?: string }>;
}

/**
 * The parameters (path item's, overridden by the operation's), the JSON request body and the
 * responses of one operation, with ajv validators compiled at their places in the document.
 */
export function compileOperation(
  doc: OpenApiDocument,
  item: Obj,
  op: Obj,
  method: string,
  path: string,
  compileAt: (pointer: string) => ValidateFunction,
): Compiled {
  const base = `/paths/${escapePointer(path)}`;
  // Parameters of the path item, overridden by the operation's (by name and location).
  const parameters = new Map<string, Parameter>();
  const addParameters = (list: unknown, pointer: string) => {
    if (!Array.isArray(list)) return;
    list.forEach((raw, i) => {
      const p = deref(doc, raw);
      if (!isObject(p) || typeof p.name !== 'string') return;
      if (p.in !== 'path' && p.in !== 'query' && p.in !== 'header' && p.in !== 'cookie') return;
      const direct = isObject(raw) && typeof raw.$ref === 'string' ? raw.$ref.slice(1) : `${pointer}/${i}`;
      parameters.set(`${p.in}:${p.name}`, {
        name: p.name,
        in: p.in,
        required: p.in === 'path' || p.required === true,
        schema: (isObject(p.schema) || typeof p.schema === 'boolean' ? p.schema : true) as JsonSchema,
        pointer: `${direct}/schema`,
      });
    });
  };
  addParameters(item.parameters, `${base}/parameters`);
  addParameters(op.parameters, `${base}/${method}/parameters`);
  const params = [...parameters.values()];
  const compiled: Compiled = {
    parameters: params,
    validateParam: new Map(params.map((p) => [`${p.in}:${p.name}`, compileAt(p.pointer)])),
    paramTypes: new Map(params.map((p) => [`${p.in}:${p.name}`, scalarTypes(doc, p.schema)])),
    responses: new Map(),
  };

  const requestBody = deref(doc, op.requestBody);
  if (isObject(requestBody) && isObject(requestBody.content)) {
    const json = requestBody.content['application/json'];
    if (isObject(json)) {
      const direct =
        isObject(op.requestBody) && typeof op.requestBody.$ref === 'string'
          ? op.requestBody.$ref.slice(1)
          : `${base}/${method}/requestBody`;
      compiled.body = {
        schema: (json.schema ?? true) as JsonSchema,
        required: requestBody.required === true,
        validate: compileAt(`${direct}/content/${escapePointer('application/json')}/schema`),
      };
    }
  }

  const responses = isObject(op.responses) ? op.responses : {};
  for (const [status, rawResponse] of Object.entries(responses)) {
    const response = deref(doc, rawResponse);
    const content =
      isObject(response) && isObject(response.content) ? response.content['application/json'] : undefined;
    if (!isObject(content) || content.schema === undefined) {
      compiled.responses.set(status, {});
      continue;
    }
    const direct =
      isObject(rawResponse) && typeof rawResponse.$ref === 'string'
        ? rawResponse.$ref.slice(1)
        : `${base}/${method}/responses/${escapePointer(status)}`;
    const ref =
      isObject(content.schema) && typeof content.schema.$ref === 'string' ? content.schema.$ref : undefined;
    compiled.responses.set(status, {
      validate: compileAt(`${direct}/content/${escapePointer('application/json')}/schema`),
      schemaName: ref?.split('/').pop(),
    });
  }
  return compiled;
}
