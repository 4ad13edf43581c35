import { Ajv2020 } from 'ajv/dist/2020';
import fc from 'fast-check';
import { authArbitrary } from './credentials';
import {
  OpenApiFuzzError,
  type CredentialSlot,
  type FuzzOperation,
  type FuzzOptions,
  type FuzzRequest,
  type OpenApiDocument,
} from './fuzz-types';
import { mutationArbitrary } from './hostile-requests';
import { judgeResponse } from './judge';
import { validValueArbitrary } from './json-schema-arbitrary';
import { isObject, type SchemaArbitraryOptions } from './json-schema';
import { compileOperation, deref, DOC_ID, METHODS, type Obj } from './openapi-document';
import { build, HEADER_SAFE, toWire, type Mutation, type Parts } from './request-wire';

// Property-based fuzzing of an HTTP service from its own OpenAPI 3.1 document: per operation, an
// arbitrary of valid requests and one of hostile requests (fast-check, so failures print a seed and
// shrink), a sender, and a judge of the answer against the document and the error-envelope rule
// (README, "What it judges": the error envelope on every error, `Error402`
// on a 402). Conformance of requests and answers is decided by ajv against
// the document's own schemas, not by the generator's intent.
// The shapes are in fuzz-types.ts; reading the document in openapi-document.ts; encoding in
// request-wire.ts; credentials and hostile mutations in credentials.ts and hostile-requests.ts;
// judging in judge.ts; sending and running in fuzz-run.ts.

/**
 * Arbitraries of valid and hostile requests for every operation of an OpenAPI 3.1 document, and a
 * judge of the answers. Parameters (path, query, header; `$ref`s followed) and JSON request bodies are
 * drawn from their schemas with {@link validValueArbitrary}; hostile requests change exactly one part:
 * a parameter (wrong type, out of range, not in the enum, hostile or oversized string, malformed
 * percent-encoding, repeated, missing), the body ({@link hostileJsonArbitrary}), the transport (random
 * bytes, no body, empty body, wrong or missing content type, an unsupported charset), an extra query
 * parameter (`__proto__`, bracket syntax) or a hostile `x-request-id`. Credentials: for operations
 * with `security`, valid (a requirement whose schemes are all in `options.credentialSchemes`), none, or
 * garbage in one scheme's slot (`apiKey` in header, query or cookie; `http` bearer).
 * @param doc the document as served at `/openapi.json`
 * @param options size caps, known values, credential schemes and garbage
 * @returns one entry per operation, in document order
 * @throws OpenApiFuzzError when the document has no `paths` or a `$ref` cannot be followed
 * @throws UnsupportedSchemaError when a schema uses a keyword outside the supported subset
 */
export function fuzzOperations(doc: OpenApiDocument, options: FuzzOptions = {}): FuzzOperation[] {
  if (!isObject(doc.paths)) throw new OpenApiFuzzError('the document has no paths');
  // String lengths are counted in code points, as JSON Schema and zod 4 count them. Formats are not
  // checked: zod's and ajv-formats' notions of `uri` or `email` differ, and the patterns zod emits
  // beside them are checked.
  const ajv = new Ajv2020({ strict: false, validateFormats: false, validateSchema: false });
  ajv.addSchema(doc as Obj, DOC_ID);
  const compileAt = (pointer: string) => ajv.compile({ $ref: `${DOC_ID}#${pointer}` });
  const schemes =
    isObject(doc.components) && isObject(doc.components.securitySchemes)
      ? doc.components.securitySchemes
      : {};
  const slotOf = (scheme: string): CredentialSlot => {
    const s = deref(doc, schemes[scheme]);
    if (
      isObject(s) &&
      s.type === 'apiKey' &&
      typeof s.name === 'string' &&
      (s.in === 'header' || s.in === 'query' || s.in === 'cookie')
    )
      return { scheme, in: s.in, name: s.name, prefix: '' };
    if (isObject(s) && s.type === 'http' && String(s.scheme).toLowerCase() === 'bearer')
      return { scheme, in: 'header', name: 'authorization', prefix: 'Bearer ' };
    throw new OpenApiFuzzError(`unsupported security scheme "${scheme}"`);
  };
  const held = new Set(options.credentialSchemes ?? []);
  const schemaOptions: SchemaArbitraryOptions = { ...options, root: doc };
  const operations: FuzzOperation[] = [];

  for (const [path, rawItem] of Object.entries(doc.paths)) {
    const item = deref(doc, rawItem);
    if (!isObject(item)) continue;
    for (const method of METHODS) {
      const op = item[method];
      if (!isObject(op)) continue;
      const operationId = typeof op.operationId === 'string' ? op.operationId : `${method} ${path}`;

      const compiled = compileOperation(doc, item, op, method, path, compileAt);
      const params = compiled.parameters;
      const responses = isObject(op.responses) ? op.responses : {};

      const security = (
        Array.isArray(op.security) ? op.security : Array.isArray(doc.security) ? doc.security : []
      ).filter(isObject);
      const secured = security.length > 0 && security.every((req) => Object.keys(req).length > 0);
      const auth = authArbitrary(security, held, slotOf, options.garbageCredentials);

      const paramModel: Record<string, fc.Arbitrary<unknown>> = {};
      for (const p of params) {
        let value = validValueArbitrary(p.schema, schemaOptions, p.name).map(toWire);
        if (p.in === 'path') value = value.filter((v) => v.length > 0);
        if (p.in === 'header') value = value.filter((v) => HEADER_SAFE.test(v));
        paramModel[`${p.in}:${p.name}`] = value;
      }
      const paramsArb = fc.record(paramModel, {
        requiredKeys: params.filter((p) => p.required).map((p) => `${p.in}:${p.name}`),
      });
      const bodyArb: fc.Arbitrary<string | undefined> = compiled.body
        ? validValueArbitrary(compiled.body.schema, schemaOptions).map((v) => JSON.stringify(v) ?? 'null')
        : fc.constant(undefined);
      const parts: fc.Arbitrary<Parts> = fc.record({ params: paramsArb, body: bodyArb, auth }).map((p) => ({
        params: p.params as Record<string, unknown>,
        auth: p.auth,
        ...(p.body === undefined ? {} : { body: p.body }),
      }));

      const upper = method.toUpperCase();
      const assemble = (p: Parts, mutation?: Mutation): FuzzRequest =>
        build(compiled, operationId, upper, path, p, mutation);

      const hostile = fc
        .tuple(parts, mutationArbitrary(doc, compiled, schemaOptions))
        .map(([p, m]) => assemble(p, m));

      operations.push({
        operationId,
        method: upper,
        path,
        documentedStatuses: Object.keys(responses),
        secured,
        valid: parts.map((p) => assemble(p)),
        hostile,
        problems: (request, response, judge) =>
          judgeResponse(compiled, secured, operationId, request, response, judge),
      });
    }
  }
  return operations;
}
