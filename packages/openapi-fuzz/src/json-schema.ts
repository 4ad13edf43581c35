// Walking a JSON Schema: the options, `$ref` resolution, the supported keyword subset, types, settings and lengths.
import fc from 'fast-check';

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

/** A schema object's keywords (a `$ref` already resolved). */
export type Keywords = { readonly [keyword: string]: unknown };
/** Where a value sits inside a generated value (property names and array indices). */
export type Path = readonly (string | number)[];

/** Whether `v` is a JSON object (not an array, not null). */
export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
/** `v` when it is a number, else `undefined` (for optional numeric keywords). */
export const num = (v: unknown): number | undefined => (typeof v === 'number' ? v : undefined);

/**
 * Follows `$ref` chains to a schema with keywords (`true` and `{}` stay as they are).
 * @throws UnsupportedSchemaError for a non-local or dangling `$ref`, or a cycle of `$ref`s
 */
export function resolve(schema: JsonSchema, root: unknown): JsonSchema {
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

/**
 * Refuses a schema using a keyword the converters do not implement.
 * @throws UnsupportedSchemaError naming the first such keyword
 */
export function checkSupported(schema: Keywords): void {
  for (const keyword of UNSUPPORTED) {
    if (keyword in schema) throw new UnsupportedSchemaError(`unsupported keyword "${keyword}"`);
  }
}

/** The JSON types a schema admits, from `type` or inferred from its keywords (`[]`: any JSON). */
export function typesOf(schema: Keywords): string[] {
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
export function jsonTypeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** Any JSON value of at most `maxDepth` nesting, sometimes with strings of any code point (NUL included). */
export function anyJson(maxDepth: number): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.jsonValue({ maxDepth }) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth, stringUnit: 'binary' }) },
  );
}

/** The options of one conversion with their defaults filled in. */
export interface Settings {
  root: unknown;
  maxString: number;
  maxItems: number;
  maxDepth: number;
  examples: Readonly<Record<string, readonly unknown[]>>;
}

export function settingsOf(schema: JsonSchema, options: SchemaArbitraryOptions): Settings {
  return {
    root: options.root ?? schema,
    maxString: options.maxStringLength ?? 24,
    maxItems: options.maxItems ?? 3,
    maxDepth: options.maxDepth ?? 2,
    examples: options.examples ?? {},
  };
}

/** The length JSON Schema (and zod 4) give a string: its number of code points. */
export const codePoints = (v: string): number => {
  let n = 0;
  for (const _ of v) n++;
  return n;
};
