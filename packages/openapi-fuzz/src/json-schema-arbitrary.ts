import fc from 'fast-check';
import {
  anyJson,
  checkSupported,
  codePoints,
  isObject,
  num,
  resolve,
  settingsOf,
  typesOf,
  UnsupportedSchemaError,
  type JsonSchema,
  type Keywords,
  type SchemaArbitraryOptions,
  type Settings,
} from './json-schema';

// JSON Schema -> fast-check arbitraries, for the subset of draft 2020-12 that our OpenAPI 3.1
// documents use (zod's `z.toJSONSchema` output). No npm package fits: json-schema-fast-check (one
// 0.0.x release) depends on fast-check 1.x, faker 4 and io-ts; zod-fast-check takes zod schemas, not a
// document; openapi-fuzzer-core and json-schema-faker draw from their own (global) randomness, so
// fast-check could neither replay a seed nor shrink. fast-check itself supplies the hard parts:
// strings matching a `pattern` (`fc.stringMatching`), uuids, e-mail addresses, URLs and JSON values.
// This file draws the valid values; json-schema.ts walks the schema, hostile-values.ts and
// hostile-json.ts draw the hostile ones.

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** Strings whose length in code points is within the schema's bounds. */
function stringArbitrary(schema: Keywords, s: Settings): fc.Arbitrary<string> {
  const min = num(schema.minLength) ?? 0;
  const max = num(schema.maxLength) ?? Number.POSITIVE_INFINITY;
  const fits = (v: string) => {
    const n = codePoints(v);
    return n >= min && n <= max;
  };
  const format = typeof schema.format === 'string' ? schema.format : undefined;
  let base: fc.Arbitrary<string>;
  if (typeof schema.pattern === 'string') base = fc.stringMatching(new RegExp(schema.pattern, 'u'));
  else if (format === 'uuid') base = fc.uuid();
  else if (format === 'email') base = fc.emailAddress();
  else if (format === 'uri' || format === 'url') base = fc.webUrl({ withQueryParameters: true });
  else if (format === 'date-time' || format === 'date') {
    const date = fc
      .date({
        min: new Date('1970-01-01T00:00:00Z'),
        max: new Date('2199-12-31T23:59:59Z'),
        noInvalidDate: true,
      })
      .map((d) => d.toISOString());
    base = format === 'date' ? date.map((d) => d.slice(0, 10)) : date;
  } else {
    const maxLength = Math.min(max, min + s.maxString);
    return fc
      .oneof(
        { weight: 4, arbitrary: fc.string({ minLength: min, maxLength }) },
        { weight: 1, arbitrary: fc.string({ minLength: min, maxLength, unit: 'binary' }) },
        { weight: 1, arbitrary: fc.string({ minLength: min, maxLength, unit: 'grapheme' }) },
      )
      .filter(fits);
  }
  return base.filter(fits);
}

function integerArbitrary(schema: Keywords): fc.Arbitrary<number> {
  const exMin = num(schema.exclusiveMinimum);
  const exMax = num(schema.exclusiveMaximum);
  let min = Math.max(-MAX_SAFE, Math.ceil(num(schema.minimum) ?? -MAX_SAFE));
  let max = Math.min(MAX_SAFE, Math.floor(num(schema.maximum) ?? MAX_SAFE));
  if (exMin !== undefined) min = Math.max(min, Math.floor(exMin) + 1);
  if (exMax !== undefined) max = Math.min(max, Math.ceil(exMax) - 1);
  if (min > max) throw new UnsupportedSchemaError(`no integer in [${min}, ${max}]`);
  const int32 = 2 ** 31 - 1;
  if (min >= -int32 - 1 && max <= int32) return fc.integer({ min, max });
  return fc.bigInt({ min: BigInt(min), max: BigInt(max) }).map(Number);
}

function numberArbitrary(schema: Keywords): fc.Arbitrary<number> {
  const exMin = num(schema.exclusiveMinimum);
  const exMax = num(schema.exclusiveMaximum);
  return fc.double({
    min: exMin ?? num(schema.minimum) ?? -Number.MAX_VALUE,
    max: exMax ?? num(schema.maximum) ?? Number.MAX_VALUE,
    minExcluded: exMin !== undefined,
    maxExcluded: exMax !== undefined,
    noNaN: true,
    noDefaultInfinity: true,
  });
}

function objectArbitrary(schema: Keywords, s: Settings, depth: number): fc.Arbitrary<unknown> {
  const properties = isObject(schema.properties) ? (schema.properties as Record<string, JsonSchema>) : {};
  const required = Array.isArray(schema.required)
    ? schema.required.filter((r): r is string => typeof r === 'string')
    : [];
  const names = Object.keys(properties);
  const additional = schema.additionalProperties as JsonSchema | undefined;
  if (names.length === 0 && required.length === 0 && additional !== false) {
    // A map: keys from propertyNames, values from additionalProperties (free-form JSON when absent).
    const keySchema = isObject(schema.propertyNames) ? schema.propertyNames : { type: 'string' };
    const keys = stringArbitrary({ maxLength: 16, ...resolveKeywords(keySchema, s) }, s);
    const values = additional === undefined ? anyJson(s.maxDepth) : build(additional, s, depth + 1);
    return fc.dictionary(keys, values, { maxKeys: s.maxItems });
  }
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const name of names) model[name] = build(properties[name] ?? true, s, depth + 1, name);
  for (const name of required) model[name] ??= named(name, anyJson(s.maxDepth), s);
  return fc.record(model, { requiredKeys: required });
}

function resolveKeywords(schema: JsonSchema, s: Settings): Keywords {
  const resolved = resolve(schema, s.root);
  return typeof resolved === 'boolean' ? {} : resolved;
}

/** Mixes in the known values for `name`, read when a value is generated. */
function named<T>(
  name: string | undefined,
  arbitrary: fc.Arbitrary<T>,
  s: Settings,
): fc.Arbitrary<T | unknown> {
  const pool = name === undefined ? undefined : s.examples[name];
  if (!pool) return arbitrary;
  // Read at generation time; while the pool is empty the schema's own values are used.
  const known = fc
    .nat()
    .chain((i): fc.Arbitrary<unknown> => (pool.length > 0 ? fc.constant(pool[i % pool.length]) : arbitrary));
  return fc.oneof(arbitrary, known);
}

function build(schema: JsonSchema, s: Settings, depth: number, name?: string): fc.Arbitrary<unknown> {
  if (depth > 64) throw new UnsupportedSchemaError('schema nested deeper than 64 levels (recursive $ref?)');
  const resolved = resolve(schema, s.root);
  if (resolved === false) throw new UnsupportedSchemaError('schema `false` admits no value');
  if (resolved === true) return named(name, anyJson(s.maxDepth), s);
  checkSupported(resolved);
  if ('const' in resolved) return named(name, fc.constant(resolved.const), s);
  if (Array.isArray(resolved.enum)) {
    if (resolved.enum.length === 0) throw new UnsupportedSchemaError('empty enum');
    return named(name, fc.constantFrom(...(resolved.enum as unknown[])), s);
  }
  const branches = Array.isArray(resolved.anyOf) ? resolved.anyOf : resolved.oneOf;
  if (Array.isArray(branches)) {
    const { anyOf: _a, oneOf: _o, ...rest } = resolved;
    // Keywords beside anyOf apply to every branch.
    return named(
      name,
      fc.oneof(...branches.map((b) => build(mergeInto(b as JsonSchema, rest, s), s, depth + 1))),
      s,
    );
  }
  const types = typesOf(resolved);
  if (types.length === 0) return named(name, anyJson(s.maxDepth), s);
  const arbitraries = types.map((type): fc.Arbitrary<unknown> => {
    switch (type) {
      case 'string':
        return stringArbitrary(resolved, s);
      case 'integer':
        return integerArbitrary(resolved);
      case 'number':
        return numberArbitrary(resolved);
      case 'boolean':
        return fc.boolean();
      case 'null':
        return fc.constant(null);
      case 'array': {
        const items = (resolved.items as JsonSchema | undefined) ?? true;
        const minLength = num(resolved.minItems) ?? 0;
        const maxLength = Math.min(
          num(resolved.maxItems) ?? Number.POSITIVE_INFINITY,
          minLength + s.maxItems,
        );
        return fc.array(build(items, s, depth + 1), { minLength, maxLength });
      }
      case 'object':
        return objectArbitrary(resolved, s, depth);
      default:
        throw new UnsupportedSchemaError(`unknown type "${type}"`);
    }
  });
  const [only] = arbitraries;
  return named(name, arbitraries.length === 1 && only ? only : fc.oneof(...arbitraries), s);
}

function mergeInto(branch: JsonSchema, outer: Keywords, s: Settings): JsonSchema {
  if (Object.keys(outer).length === 0) return branch;
  const resolved = resolve(branch, s.root);
  return typeof resolved === 'boolean' ? resolved : { ...outer, ...resolved };
}

/**
 * Values that satisfy `schema`: strings within `minLength`/`maxLength` (counted in code points, as
 * JSON Schema and zod 4 count) matching `pattern` or `format` (`uuid`, `email`, `uri`, `date-time`,
 * `date`), integers and numbers within `minimum`/`maximum` (exclusive bounds too), `enum`, `const`,
 * arrays within `minItems`/`maxItems`, objects with every `required` property and some optional ones,
 * maps from `propertyNames` to `additionalProperties`, `anyOf`/`oneOf` branches, type lists, and
 * free-form JSON for `{}`/`true`. Strings are mostly printable ASCII, sometimes any code point
 * (NUL included) or multi-code-point graphemes. Sizes are kept small (see the options).
 * @param schema the JSON Schema
 * @param options where `$ref`s point, size caps and known values
 * @param name the property or parameter name the values are for: its known values
 *   (`options.examples[name]`) are mixed in
 * @returns an arbitrary of JSON values (plain objects, arrays, strings, numbers, booleans, null)
 * @throws UnsupportedSchemaError when the schema uses a keyword outside that subset (`allOf`, `not`,
 *   `if`, `multipleOf`, `uniqueItems`, ...), a non-local or dangling `$ref`, or admits no value
 */
export function validValueArbitrary(
  schema: JsonSchema,
  options: SchemaArbitraryOptions = {},
  name?: string,
): fc.Arbitrary<unknown> {
  return build(schema, settingsOf(schema, options), 0, name);
}
