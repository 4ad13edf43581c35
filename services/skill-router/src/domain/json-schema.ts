import { Ajv, type AnySchema, type ValidateFunction } from 'ajv';
import type { RegExpEngine } from 'ajv/dist/types';
import { Ajv2019 } from 'ajv/dist/2019';
import { Ajv2020 } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { JSONSchemaFaker } from 'json-schema-faker';
import { RE2JS } from 're2js';
import tokenize, { types, type Root, type Token } from 'ret';
import { schemaLimitProblem } from './schema-limits';

// Everything here runs on registrants' schemas and skills' replies: call it from the schema sandbox
// (worker threads with memory limits and deadlines), never on the service's event loop.

/** Longest string a `pattern` may make the input generator build, in characters. */
export const PATTERN_MAX_GENERATED_LENGTH = 10_000;
/** Repetitions json-schema-faker gives an unbounded quantifier (`*`, `+`, `{n,}`) beyond its minimum. */
const RANDEXP_UNBOUNDED_EXTRA = 10;

/** The outcome of checking one schema: a validator, or what is wrong with it. */
export type SchemaCheck = { ok: true; validate: ValidateFunction } | { ok: false; error: string };

/**
 * ajv's regular-expression engine: RE2 semantics (re2js), linear in the input whatever the pattern,
 * so `^(a+)+$` cannot backtrack. Lookaround and backreferences do not exist in RE2 and make the
 * schema fail to compile; RE2 also refuses nested repeat counts whose product exceeds 1000.
 * ajv keys its pattern cache by `toString()`, which RE2JS gives as `/pattern/`.
 */
const re2Engine: RegExpEngine = Object.assign(
  (pattern: string): RE2JS => RE2JS.compile(RE2JS.translateRegExp(pattern)),
  { code: 're2js' },
);

type AnyAjv = Ajv | Ajv2019 | Ajv2020;

const options = { strict: false, allErrors: true, code: { regExp: re2Engine } } as const;
const DRAFTS: Record<string, () => AnyAjv> = {
  'http://json-schema.org/draft-07/schema': () => new Ajv(options),
  'https://json-schema.org/draft/2019-09/schema': () => new Ajv2019(options),
  'https://json-schema.org/draft/2020-12/schema': () => new Ajv2020(options),
};
const instances = new Map<string, AnyAjv>();

/** One ajv instance per draft, with ajv-formats (building one costs milliseconds). */
function ajvFor(draft: string): AnyAjv | undefined {
  let ajv = instances.get(draft);
  if (!ajv) {
    const make = DRAFTS[draft];
    if (!make) return undefined;
    ajv = make();
    addFormats(ajv);
    instances.set(draft, ajv);
  }
  return ajv;
}

/**
 * Checks that `schema` is a valid JSON Schema (draft-07 when `$schema` is absent; 2019-09 and
 * 2020-12 when named) with ajv 8, ajv-formats and the RE2 pattern engine, within the size and depth
 * limits, and compiles it. Unknown keywords are allowed (vendor extensions); remote `$ref`s are never
 * fetched, so a reference outside the schema fails. The compiled schema is removed from ajv's
 * registry right away (synchronously, so schemas of different skills never share `$id`s and the cache
 * does not grow); the validator stays usable.
 * @returns a validator, or the error text
 */
export function checkJsonSchema(schema: unknown): SchemaCheck {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    return { ok: false, error: 'must be a JSON object' };
  }
  const tooBig = schemaLimitProblem(schema);
  if (tooBig) return { ok: false, error: tooBig };
  const declared = (schema as { $schema?: unknown }).$schema;
  const key =
    typeof declared === 'string' ? declared.replace(/#$/, '') : 'http://json-schema.org/draft-07/schema';
  const ajv = ajvFor(key);
  if (!ajv)
    return {
      ok: false,
      error: `unsupported $schema "${String(declared)}" (draft-07, 2019-09 and 2020-12 are supported)`,
    };
  const valid = ajv.validateSchema(schema as AnySchema);
  if (!valid)
    return {
      ok: false,
      error: `not a valid JSON Schema: ${ajv.errorsText(ajv.errors, { dataVar: 'schema' })}`,
    };
  try {
    return { ok: true, validate: ajv.compile(schema as AnySchema) };
  } catch (err) {
    return { ok: false, error: `cannot be compiled: ${err instanceof Error ? err.message : String(err)}` };
  } finally {
    ajv.removeSchema(schema as AnySchema);
    const id = (schema as { $id?: unknown }).$id;
    if (typeof id === 'string') ajv.removeSchema(id);
  }
}

/**
 * The ajv errors of the last validation as one line.
 * @param validate a validator that just returned `false`
 */
export function validationErrors(validate: ValidateFunction): string {
  return (validate.errors ?? [])
    .slice(0, 5)
    .map((e) => `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}`)
    .join('; ');
}

JSONSchemaFaker.option({
  alwaysFakeOptionals: true,
  useDefaultValue: true,
  useExamplesValue: true,
  ignoreMissingRefs: true,
  failOnInvalidTypes: true,
  fillProperties: false,
  maxItems: 5,
  maxLength: 100,
  refDepthMax: 3,
  defaultRandExpMax: RANDEXP_UNBOUNDED_EXTRA,
});

/** Keywords whose values are data, not subschemas: never rewritten or searched for patterns. */
const DATA_KEYWORDS = new Set(['const', 'enum', 'default', 'examples', 'example']);

/**
 * A copy of `schema` with draft-6+ numeric `exclusiveMinimum`/`exclusiveMaximum` rewritten to the
 * draft-4 form (`minimum` + `exclusiveMinimum: true`) that json-schema-faker 0.5 understands; the
 * original schema is still what the generated value is validated against.
 */
export function forFaker(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(forFaker);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) out[k] = DATA_KEYWORDS.has(k) ? v : forFaker(v);
  for (const [exclusive, bound, tighter] of [
    ['exclusiveMinimum', 'minimum', Math.max],
    ['exclusiveMaximum', 'maximum', Math.min],
  ] as const) {
    const x = out[exclusive];
    if (typeof x !== 'number') continue;
    const current = out[bound];
    if (typeof current === 'number' && tighter(current, x) === current && current !== x) {
      // The inclusive bound is already the tighter one.
      delete out[exclusive];
    } else {
      out[bound] = x;
      out[exclusive] = true;
    }
  }
  return out;
}

/**
 * The longest string json-schema-faker's generator (randexp) can build from `pattern`, in
 * characters: explicit repeat counts multiply, unbounded quantifiers count as their minimum plus 10
 * (the generator's setting), alternatives take the longest branch.
 * @returns the bound, or `undefined` when the pattern cannot be parsed (the generator then fails on it)
 */
export function patternGeneratedLength(pattern: string): number | undefined {
  let root: Root;
  try {
    root = tokenize(pattern);
  } catch {
    return undefined;
  }
  const groups: number[] = [];
  const sequence = (tokens: Token[]): number => tokens.reduce((sum, t) => sum + bound(t), 0);
  const alternatives = (t: { stack?: Token[]; options?: Token[][] }): number =>
    t.options ? Math.max(0, ...t.options.map(sequence)) : sequence(t.stack ?? []);
  function bound(token: Token): number {
    switch (token.type) {
      case types.GROUP: {
        const slot = token.remember ? groups.push(0) - 1 : -1;
        const n = alternatives(token);
        if (slot >= 0) groups[slot] = n;
        return n;
      }
      case types.REPETITION: {
        const max =
          token.max === Infinity || token.max === null ? token.min + RANDEXP_UNBOUNDED_EXTRA : token.max;
        return max * bound(token.value);
      }
      case types.REFERENCE:
        return groups[token.value - 1] ?? 0;
      case types.POSITION:
        return 0;
      default:
        return 1;
    }
  }
  return alternatives(root);
}

/**
 * Every regular expression json-schema-faker would expand for `schema` (`pattern` values and
 * `patternProperties` names) whose generated strings could exceed {@link PATTERN_MAX_GENERATED_LENGTH}.
 * @returns what is wrong with the first such pattern, or `undefined`
 */
export function generatorPatternProblem(schema: unknown): string | undefined {
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const node = stack.pop();
    if (typeof node !== 'object' || node === null) continue;
    if (Array.isArray(node)) {
      stack.push(...node);
      continue;
    }
    for (const [key, value] of Object.entries(node)) {
      if (DATA_KEYWORDS.has(key)) continue;
      const patterns =
        key === 'pattern' && typeof value === 'string'
          ? [value]
          : key === 'patternProperties' && typeof value === 'object' && value !== null
            ? Object.keys(value)
            : [];
      for (const pattern of patterns) {
        const length = patternGeneratedLength(pattern);
        if (length !== undefined && length > PATTERN_MAX_GENERATED_LENGTH)
          return `pattern "${clip(pattern, 80)}" can generate strings of ${length} characters (test inputs are limited to ${PATTERN_MAX_GENERATED_LENGTH})`;
      }
      stack.push(value);
    }
  }
  return undefined;
}

/** `text` cut to `max` characters, with an ellipsis when cut. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/**
 * An input generated from `inputSchema` with json-schema-faker (examples and defaults preferred,
 * optional properties filled, arrays ≤ 5 items, strings ≤ 100 characters), checked against the schema;
 * up to `attempts` tries. Patterns whose strings could exceed {@link PATTERN_MAX_GENERATED_LENGTH}
 * characters are refused before generating anything.
 * @returns the generated value, or an error when no valid value was produced
 */
export function generateInput(
  inputSchema: object,
  validate: ValidateFunction,
  attempts = 5,
): { ok: true; value: unknown } | { ok: false; error: string } {
  const unbounded = generatorPatternProblem(inputSchema);
  if (unbounded) return { ok: false, error: `could not generate an input from input_schema: ${unbounded}` };
  let last = '';
  const faker = forFaker(inputSchema);
  for (let i = 0; i < attempts; i++) {
    try {
      const value = JSONSchemaFaker.generate(faker as Parameters<typeof JSONSchemaFaker.generate>[0]);
      if (validate(value)) return { ok: true, value };
      last = validationErrors(validate);
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
  }
  return { ok: false, error: `could not generate an input valid against input_schema: ${last}` };
}

/**
 * Checks a skill's reply body (text) against its output schema: it must be JSON and valid.
 * @returns `ok`, or why not (`"the response is not JSON"`, `"the response does not match output_schema: …"`)
 */
export function checkReply(
  validate: ValidateFunction,
  body: string,
): { ok: true } | { ok: false; error: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { ok: false, error: 'the response is not JSON' };
  }
  if (!validate(parsed))
    return { ok: false, error: `the response does not match output_schema: ${validationErrors(validate)}` };
  return { ok: true };
}
