// Hostile requests: one hostile change (parameter, body, transport, extra query, header) to a valid request.
import fc from 'fast-check';
import { hostileJsonArbitrary } from './hostile-json';
import { hostileStringArbitrary } from './hostile-values';
import { isObject, type SchemaArbitraryOptions } from './json-schema';
import type { OpenApiDocument } from './fuzz-types';
import { deref, scalarTypes, type Compiled, type Parameter } from './openapi-document';
import { encode, fitsUrl, HEADER_SAFE, type Mutation } from './request-wire';

/** Hostile strings that fetch can carry in a header (printable ASCII). */
function headerSafeHostile(): fc.Arbitrary<string> {
  return fc.oneof(
    hostileStringArbitrary().filter((v) => HEADER_SAFE.test(v) && v.length <= 8000),
    fc.constantFrom('', ' ', '%00', 'a'.repeat(8000), '../..', '; DROP TABLE x'),
  );
}

/** Raw (already encoded) path segments and query values that decoders choke on. */
const RAW_ENCODED = ['%', '%zz', '%E0%A4%A', '%C0%AF', '%00', '%FF%FE', '%u0041', '%2F..%2F', '%252E'];

/** One hostile change to a valid request: see {@link fuzzOperations}. */
export function mutationArbitrary(
  doc: OpenApiDocument,
  compiled: Compiled,
  schemaOptions: SchemaArbitraryOptions,
): fc.Arbitrary<Mutation> {
  const extraQuery = fc
    .oneof(
      fc.constantFrom(
        '__proto__',
        'constructor',
        'toString',
        'x[]',
        'x[__proto__][polluted]',
        '%',
        'key&key',
      ),
      fc.string({ maxLength: 12 }),
    )
    .chain((name) =>
      hostileStringArbitrary()
        .filter(fitsUrl)
        .map((value): Mutation => ({
          kind: 'extra-query',
          raw: `${encode(name).replace(/%5B/g, '[').replace(/%5D/g, ']')}=${encode(value)}`,
          what: `extra query parameter "${name}"`,
        })),
    );
  const requestId = headerSafeHostile().map((value): Mutation => ({
    kind: 'header',
    name: 'x-request-id',
    value,
    what: 'hostile x-request-id',
  }));
  const mutations: fc.MaybeWeightedArbitrary<Mutation>[] = [extraQuery, requestId];
  for (const p of compiled.parameters) mutations.push(parameterMutation(doc, p));
  if (compiled.body) {
    const body = hostileJsonArbitrary(compiled.body.schema, schemaOptions).map((h): Mutation => ({
      kind: 'body',
      text: h.text,
      what: `body: ${h.mutation}`,
    }));
    mutations.push({ weight: 2, arbitrary: body }, transportMutation());
  }
  return fc.oneof(...mutations);
}

function parameterMutation(doc: OpenApiDocument, p: Parameter): fc.Arbitrary<Mutation> {
  const id = `${p.in}:${p.name}`;
  const resolved = deref(doc, p.schema);
  const types = scalarTypes(doc, p.schema);
  const s = isObject(resolved) ? resolved : {};
  const set = (value: string | null | string[], what: string, raw = false): Mutation => ({
    kind: 'param',
    name: id,
    value,
    raw,
    what: `${p.in} parameter "${p.name}": ${what}`,
  });
  const choices: fc.Arbitrary<Mutation>[] = [];
  if (p.in === 'header') {
    choices.push(headerSafeHostile().map((v) => set(v, 'hostile value')));
    choices.push(fc.constant(set(null, 'missing')));
    return fc.oneof(...choices);
  }
  choices.push(
    hostileStringArbitrary()
      .filter((v) => !(p.in === 'path' && v.length === 0) && fitsUrl(v))
      .map((v) => set(v, 'hostile value')),
    fc.constantFrom(...RAW_ENCODED).map((v) => set(v, `malformed percent-encoding ${v}`, true)),
    fc.constantFrom(3000).map((n) => set('a'.repeat(n), `${n} characters`)),
  );
  if (types.includes('integer') || types.includes('number')) {
    const bounds: string[] = [];
    if (typeof s.minimum === 'number') bounds.push(String(s.minimum - 1), String(s.minimum - 0.5));
    if (typeof s.maximum === 'number') bounds.push(String(s.maximum + 1), String(s.maximum + 0.5));
    choices.push(
      fc
        .constantFrom(
          'abc',
          '',
          ' ',
          '1.5',
          '-1',
          '0',
          '1e999',
          'NaN',
          'Infinity',
          '-Infinity',
          '0x10',
          '٣',
          '9'.repeat(30),
          '1,2',
          '[1]',
          ...bounds,
        )
        .map((v) => set(v, `number ${JSON.stringify(v)}`)),
    );
  }
  if (Array.isArray(s.enum)) {
    const values = s.enum.map(String);
    choices.push(
      fc
        .constantFrom(...values.map((v) => v.toUpperCase()), ...values.map((v) => ` ${v}`), 'other')
        .map((v) => set(v, `not in the enum: ${JSON.stringify(v)}`)),
    );
  }
  if (p.in === 'query') {
    choices.push(
      fc
        .tuple(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 }))
        .map(([a, b]) => set([a, b], 'repeated')),
    );
    if (p.required) choices.push(fc.constant(set(null, 'missing')));
  }
  return fc.oneof(...choices);
}

function transportMutation(): fc.Arbitrary<Mutation> {
  const transport = (
    contentType: string | null,
    data: Extract<Mutation, { kind: 'transport' }>['data'],
    what: string,
  ): Mutation => ({
    kind: 'transport',
    contentType,
    data,
    what,
  });
  return fc.oneof(
    fc
      .uint8Array({ maxLength: 512 })
      .map((bytes) => transport('application/json', { bytes }, 'random bytes')),
    fc.constant(transport(null, 'none', 'no body')),
    fc.constant(transport('application/json', { text: '' }, 'empty body')),
    fc.constant(transport(null, 'valid', 'valid JSON without content-type')),
    fc
      .constantFrom(
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/json; charset=utf-16',
        'application/json; charset=latin1',
        'application/xml',
        'application/json, text/plain',
        '*/*',
        '',
      )
      .map((contentType) => transport(contentType, 'valid', `content-type ${JSON.stringify(contentType)}`)),
  );
}
