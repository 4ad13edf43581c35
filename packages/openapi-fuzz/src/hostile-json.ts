// Hostile JSON bodies: one mutation at a random place of a valid value of a schema, or the whole text made malformed.
import fc from 'fast-check';
import {
  anyTypeArbitrary,
  hostileStringArbitrary,
  malformed,
  nested,
  outOfRange,
  oversized,
} from './hostile-values';
import { validValueArbitrary } from './json-schema-arbitrary';
import {
  codePoints,
  isObject,
  jsonTypeOf,
  num,
  resolve,
  settingsOf,
  typesOf,
  type JsonSchema,
  type Keywords,
  type Path,
  type SchemaArbitraryOptions,
  type Settings,
} from './json-schema';

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
  return validValueArbitrary(schema, options).chain((value) => {
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
