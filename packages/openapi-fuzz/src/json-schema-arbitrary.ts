import fc from 'fast-check';

// JSON Schema -> fast-check arbitraries, for the subset of draft 2020-12 that our OpenAPI 3.1
// documents use (zod's `z.toJSONSchema` output). No npm package fits: json-schema-fast-check (one
// 0.0.x release) depends on fast-check 1.x, faker 4 and io-ts; zod-fast-check takes zod schemas, not a
// document; openapi-fuzzer-core and json-schema-faker draw from their own (global) randomness, so
// fast-check could neither replay a seed nor shrink. fast-check itself supplies the hard parts:
// strings matching a `pattern` (`fc.stringMatching`), uuids, e-mail addresses, URLs and JSON values.

/** A JSON Schema (draft 2020-12, the dialect OpenAPI 3.1 embeds): an object of keywords, or a boolean. */
export type JsonSchema = boolean | { readonly [keyword: string]: unknown };

/** Options of {@link validValueArbitrary} and {@link hostileJsonArbitrary}. */
export interface SchemaArbitraryOptions {
  /**
   * The document local `$ref`s (`#/components/schemas/Name`, `#/$defs/Name`) point into; default:
   * the schema itself.
   */
  root?: unknown;
  /** Most characters a generated string gets beyond its `minLength` (default 24). */
  maxStringLength?: number;
  /** Most items of a generated array or entries of a generated map beyond `minItems` (default 3). */
  maxItems?: number;
  /** Deepest nesting of the free-form JSON generated for `{}` schemas (default 2). */
  maxDepth?: number;
  /**
   * Known values by property (or parameter) name, e.g. `{ id: [existingId] }`: wherever a property
   * of that name is generated, one of them is sometimes used instead of a value drawn from the schema
   * (so requests can reach records that exist). The arrays are read at generation time, so a test may
   * push values into them later; they need not conform to the schema.
   */
  examples?: Readonly<Record<string, readonly unknown[]>>;
}

/** Thrown for a schema that uses a keyword the converters do not support, or a broken `$ref`. */
export class UnsupportedSchemaError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsupportedSchemaError';
  }
}

/** Keywords that constrain values and that the converters do not implement: refused loudly. */
const UNSUPPORTED = [
  'allOf',
  'not',
  'if',
  'then',
  'else',
  'dependentSchemas',
  'dependentRequired',
  'patternProperties',
  'prefixItems',
  'contains',
  'uniqueItems',
  'multipleOf',
  'minProperties',
  'maxProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  '$dynamicRef',
] as const;

type Keywords = { readonly [keyword: string]: unknown };
type Path = readonly (string | number)[];

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

/**
 * Follows `$ref` chains to a schema with keywords (`true` and `{}` stay as they are).
 * @throws UnsupportedSchemaError for a non-local or dangling `$ref`, or a cycle of `$ref`s
 */
function resolve(schema: JsonSchema, root: unknown): JsonSchema {
  let current: JsonSchema = schema;
  for (let hops = 0; isObject(current) && typeof current.$ref === 'string'; hops++) {
    if (hops > 32) throw new UnsupportedSchemaError(`$ref cycle at ${current.$ref}`);
    const ref: string = current.$ref;
    if (!ref.startsWith('#')) throw new UnsupportedSchemaError(`non-local $ref ${ref}`);
    let node: unknown = root;
    for (const part of ref.slice(1).split('/').filter(Boolean)) {
      const key = decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~');
      node = isObject(node) ? node[key] : undefined;
    }
    if (!isObject(node) && typeof node !== 'boolean')
      throw new UnsupportedSchemaError(`dangling $ref ${ref}`);
    // Sibling keywords of a $ref (2020-12) are kept beside the target's.
    const { $ref: _ref, ...siblings } = current;
    current = typeof node === 'boolean' ? node : { ...node, ...siblings };
  }
  return current;
}

function checkSupported(schema: Keywords): void {
  for (const keyword of UNSUPPORTED) {
    if (keyword in schema) throw new UnsupportedSchemaError(`unsupported keyword "${keyword}"`);
  }
}

/** The JSON types a schema admits, from `type` or inferred from its keywords (`[]`: any JSON). */
function typesOf(schema: Keywords): string[] {
  if (typeof schema.type === 'string') return [schema.type];
  if (Array.isArray(schema.type)) return schema.type.filter((t): t is string => typeof t === 'string');
  if ('properties' in schema || 'required' in schema || 'additionalProperties' in schema) return ['object'];
  if ('items' in schema) return ['array'];
  if ('pattern' in schema || 'minLength' in schema || 'maxLength' in schema || 'format' in schema)
    return ['string'];
  if ('minimum' in schema || 'maximum' in schema) return ['number'];
  return [];
}

/** The JSON type of a value, as JSON Schema names it. */
function jsonTypeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** Any JSON value of at most `maxDepth` nesting, sometimes with strings of any code point (NUL included). */
function anyJson(maxDepth: number): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.jsonValue({ maxDepth }) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth, stringUnit: 'binary' }) },
  );
}

interface Settings {
  root: unknown;
  maxString: number;
  maxItems: number;
  maxDepth: number;
  examples: Readonly<Record<string, readonly unknown[]>>;
}

function settingsOf(schema: JsonSchema, options: SchemaArbitraryOptions): Settings {
  return {
    root: options.root ?? schema,
    maxString: options.maxStringLength ?? 24,
    maxItems: options.maxItems ?? 3,
    maxDepth: options.maxDepth ?? 2,
    examples: options.examples ?? {},
  };
}

/** The length JSON Schema (and zod 4) give a string: its number of code points. */
const codePoints = (v: string): number => {
  let n = 0;
  for (const _ of v) n++;
  return n;
};

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

// --- hostile values -----------------------------------------------------------------------------

/** Strings that have broken parsers, databases, loggers and templates before. */
const HOSTILE_STRINGS: readonly string[] = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\uD800',
  'x\uDFFFy',
  '\uFEFFbom',
  '\u202Eright-to-left',
  '\u2028\u2029',
  '\r\n\r\nInjected: header',
  '\t\v\f\b',
  '\\',
  '"',
  "'",
  '`',
  'e\u0301\u0301\u0301\u0301\u0301\u0301',
  '👩‍👩‍👧‍👦🏳️‍🌈',
  '﷽',
  'İıßẞǅ',
  'ＡＢＣ',
  "'; DROP TABLE users; --",
  "' OR '1'='1",
  '%s%s%s%n',
  '%00%0d%0a',
  '{{7*7}}${7*7}<%= 7*7 %>',
  '${jndi:ldap://127.0.0.1/a}',
  '<script>alert(1)</script>',
  '../../../../etc/passwd',
  '..\\..\\windows\\win.ini',
  '__proto__',
  'constructor',
  'prototype',
  'hasOwnProperty',
  'toString',
  'null',
  'undefined',
  'NaN',
  'Infinity',
  'true',
  '-1',
  '0',
  '1e309',
  '0x1F',
  '９',
  '٣',
  '9'.repeat(400),
  'a'.repeat(5000),
  '🐱'.repeat(3000),
];

/**
 * Hostile strings: control characters (NUL), lone surrogates, byte-order marks, bidi overrides,
 * combining marks, astral emoji, SQL/template/path-traversal payloads, prototype keys, number-like
 * and very long values (up to 5000 code points), plus random strings of any code point.
 */
export function hostileStringArbitrary(): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 64 }) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 64 }) },
  );
}

/** A JSON text some mutation of a valid value produced, and what the mutation was. */
export interface HostileJson {
  /** The JSON text (not always well-formed: see `mutation`). */
  text: string;
  /** What was broken, e.g. `wrong-type at /requirements/chains`. */
  mutation: string;
}

/** A place in a generated value, with the schema that governs it (`undefined`: free-form JSON). */
interface Site {
  path: Path;
  value: unknown;
  schema: Keywords | undefined;
}

/** The schema branch that most likely produced `value` (first branch admitting its JSON type). */
function schemaFor(schema: JsonSchema | undefined, value: unknown, s: Settings): Keywords | undefined {
  if (schema === undefined) return undefined;
  const resolved = resolve(schema, s.root);
  if (typeof resolved === 'boolean') return undefined;
  const branches = Array.isArray(resolved.anyOf) ? resolved.anyOf : resolved.oneOf;
  if (Array.isArray(branches)) {
    const type = jsonTypeOf(value);
    for (const branch of branches) {
      const b = schemaFor(branch as JsonSchema, value, s);
      const types = b ? typesOf(b) : [];
      if (types.length === 0 || types.includes(type) || (type === 'integer' && types.includes('number')))
        return b;
    }
    return undefined;
  }
  return resolved;
}

function collectSites(
  value: unknown,
  schema: JsonSchema | undefined,
  s: Settings,
  path: Path,
  out: Site[],
): void {
  const governing = schemaFor(schema, value, s);
  out.push({ path, value, schema: governing });
  if (out.length > 200) return;
  if (Array.isArray(value)) {
    const items = governing?.items as JsonSchema | undefined;
    value.forEach((item, i) => collectSites(item, items, s, [...path, i], out));
  } else if (isObject(value)) {
    const properties = isObject(governing?.properties)
      ? (governing.properties as Record<string, JsonSchema>)
      : {};
    const additional = governing?.additionalProperties as JsonSchema | undefined;
    for (const [key, item] of Object.entries(value)) {
      const sub = properties[key] ?? (additional === false ? undefined : additional);
      collectSites(item, sub, s, [...path, key], out);
    }
  }
}

const pointer = (path: Path) => (path.length === 0 ? '(root)' : '/' + path.join('/'));

/** A deep copy of `value` with `replacement` at `path` (own `__proto__` keys stay own properties). */
function replaceAt(value: unknown, path: Path, replace: (current: unknown) => unknown): unknown {
  if (path.length === 0) return replace(value);
  const [head, ...rest] = path;
  if (Array.isArray(value)) {
    const copy = [...value];
    copy[head as number] = replaceAt(copy[head as number], rest, replace);
    return copy;
  }
  const copy: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>))
    Object.defineProperty(copy, k, { value: v, enumerable: true, writable: true, configurable: true });
  const key = head as string;
  Object.defineProperty(copy, key, {
    value: replaceAt(copy[key], rest, replace),
    enumerable: true,
    writable: true,
    configurable: true,
  });
  return copy;
}

/** Sets an own enumerable property (also for `__proto__`, which `obj[key] = v` would not create). */
function withOwn(object: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(object))
    Object.defineProperty(copy, k, { value: v, enumerable: true, writable: true, configurable: true });
  Object.defineProperty(copy, key, { value, enumerable: true, writable: true, configurable: true });
  return copy;
}

const PLACEHOLDER = '\u0001fuzz-raw-json\u0001';

/** JSON text of `value` with the raw JSON `raw` at `path` (for texts JSON.stringify cannot produce). */
function withRawAt(value: unknown, path: Path, raw: string): string {
  const text = JSON.stringify(replaceAt(value, path, () => PLACEHOLDER)) ?? 'null';
  return text.replace(JSON.stringify(PLACEHOLDER), () => raw);
}

/** Deeply nested arrays or objects, `depth` levels, as JSON text. */
function nested(depth: number, kind: 'array' | 'object'): string {
  return kind === 'array'
    ? '['.repeat(depth) + ']'.repeat(depth)
    : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

/** Values of every JSON type, to put where another type is expected. */
function anyTypeArbitrary(): fc.Arbitrary<unknown> {
  return fc.oneof(
    fc.constantFrom<unknown>(
      null,
      true,
      false,
      0,
      -1,
      1.5,
      '',
      'text',
      [],
      {},
      [null],
      { a: 1 },
      '1',
      'true',
    ),
    fc.jsonValue({ maxDepth: 2 }),
  );
}

/** Oversized strings: one code point past `maxLength`, 20 000 code points, and 1.2 MB (beyond any body limit). */
function oversized(schema: Keywords | undefined): fc.Arbitrary<string> {
  const max = num(schema?.maxLength);
  const lengths = [...(max !== undefined && max < 200_000 ? [max + 1, max + 1] : []), 20_000];
  return fc.oneof(
    {
      weight: 4,
      arbitrary: fc
        .constantFrom(...lengths)
        .chain((n) => fc.constantFrom('x', 'é', '🐱').map((c) => c.repeat(n))),
    },
    { weight: 1, arbitrary: fc.constant('x'.repeat(1_200_000)) },
  );
}

/** Numbers just outside the schema's bounds, non-integers for integers, and extremes. */
function outOfRange(schema: Keywords | undefined): fc.Arbitrary<string> {
  const candidates = ['1e308', '-1e308', '1e999', '-0', '9007199254740993', '-9007199254740993', '1e-320'];
  const min = num(schema?.minimum) ?? num(schema?.exclusiveMinimum);
  const max = num(schema?.maximum) ?? num(schema?.exclusiveMaximum);
  if (min !== undefined) candidates.push(String(min - 1), String(min - 0.5), String(min));
  if (max !== undefined) candidates.push(String(max + 1), String(max + 0.5), String(max));
  if (schema && typesOf(schema).includes('integer')) candidates.push('0.5', '1.0000001', '2.5e1');
  return fc.constantFrom(...candidates);
}

/** Broken JSON texts derived from a valid one. */
function malformed(text: string): fc.Arbitrary<string> {
  return fc.oneof(
    fc.integer({ min: 0, max: Math.max(0, text.length - 1) }).map((end) => text.slice(0, end)),
    fc.constantFrom(
      text + '}',
      text + ',',
      text.replace(/"/g, "'"),
      '\uFEFF' + text,
      `{"a":1,}`,
      `{"a" 1}`,
      `{a:1}`,
      'NaN',
      'undefined',
      '{"a":01}',
      '{"a":"\\x41"}',
      '{"a":"\\u12"}',
      '['.repeat(3),
      '"unterminated',
      '/* comment */ {}',
      '',
    ),
    fc.string({ unit: 'binary', maxLength: 64 }),
  );
}

/**
 * Mutations of valid values of `schema`, as JSON text: at a random place in a valid value, a value of
 * the wrong type, a missing required property, an extra property (`__proto__`, `constructor` or a random
 * name, with a `{ fuzz_polluted: true }` object value), an out-of-range or non-integer number (also as
 * texts like `1e999` or `-0`), an oversized string (one past `maxLength`, 20 000 and 1.2 million
 * characters), a hostile string ({@link hostileStringArbitrary}), an array one past `maxItems`, deeply
 * nested JSON (100 to 5000 levels), or the whole text made malformed (truncated, trailing commas, BOM,
 * comments, random code points). Whether the result still conforms is not promised: validate it.
 * @param schema the JSON Schema of the valid values
 * @param options as for {@link validValueArbitrary}
 * @throws UnsupportedSchemaError as {@link validValueArbitrary} does
 */
export function hostileJsonArbitrary(
  schema: JsonSchema,
  options: SchemaArbitraryOptions = {},
): fc.Arbitrary<HostileJson> {
  const s = settingsOf(schema, options);
  return build(schema, s, 0).chain((value) => {
    const sites: Site[] = [];
    collectSites(value, schema, s, [], sites);
    const valid = JSON.stringify(value) ?? 'null';
    return fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom(...sites).chain((site) => mutateSite(value, site)) },
      { weight: 1, arbitrary: malformed(valid).map((text) => ({ text, mutation: 'malformed JSON' })) },
    );
  });
}

function mutateSite(value: unknown, site: Site): fc.Arbitrary<HostileJson> {
  const at = pointer(site.path);
  const json = (v: unknown, mutation: string): HostileJson => ({
    text: JSON.stringify(replaceAt(value, site.path, () => v)) ?? 'null',
    mutation: `${mutation} at ${at}`,
  });
  const options: fc.Arbitrary<HostileJson>[] = [
    anyTypeArbitrary().map((v) => json(v, 'wrong type')),
    fc.constantFrom(100, 1000, 5000).chain((depth) =>
      fc.constantFrom<'array' | 'object'>('array', 'object').map((kind) => ({
        text: withRawAt(value, site.path, nested(depth, kind)),
        mutation: `${depth} nested ${kind}s at ${at}`,
      })),
    ),
  ];
  const type = jsonTypeOf(site.value);
  if (type === 'string') {
    options.push(hostileStringArbitrary().map((v) => json(v, 'hostile string')));
    options.push(oversized(site.schema).map((v) => json(v, `string of ${codePoints(v)} code points`)));
  }
  if (type === 'number' || type === 'integer') {
    options.push(
      outOfRange(site.schema).map((raw) => ({
        text: withRawAt(value, site.path, raw),
        mutation: `number ${raw} at ${at}`,
      })),
    );
  }
  if (type === 'array') {
    const max = num(site.schema?.maxItems);
    if (max !== undefined && max <= 5000) {
      const items = site.value as unknown[];
      options.push(
        fc.constant(
          json(
            Array.from({ length: max + 1 }, (_, i) => (items.length > 0 ? items[i % items.length] : null)),
            `${max + 1} items`,
          ),
        ),
      );
    }
  }
  if (type === 'object') {
    const object = site.value as Record<string, unknown>;
    const required = Array.isArray(site.schema?.required)
      ? (site.schema.required as unknown[]).filter((r): r is string => typeof r === 'string' && r in object)
      : [];
    if (required.length > 0) {
      options.push(
        fc.constantFrom(...required).map((key) => {
          const { [key]: _dropped, ...rest } = object;
          return json(rest, `missing required "${key}"`);
        }),
      );
    }
    options.push(
      fc
        .tuple(
          fc.oneof(
            fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', '$where'),
            fc.string({ maxLength: 12 }),
          ),
          fc.oneof(fc.constant<unknown>({ fuzz_polluted: true }), fc.jsonValue({ maxDepth: 1 })),
        )
        .map(([key, extra]) => json(withOwn(object, key, extra), `extra property "${key}"`)),
    );
  }
  return fc.oneof(...options);
}
