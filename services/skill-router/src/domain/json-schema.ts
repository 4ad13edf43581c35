import { Ajv, type AnySchema, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019';
import { Ajv2020 } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { JSONSchemaFaker } from 'json-schema-faker';

/** The outcome of checking one schema: a validator, or what is wrong with it. */
export type SchemaCheck = { ok: true; validate: ValidateFunction } | { ok: false; error: string };

type AnyAjv = Ajv | Ajv2019 | Ajv2020;

const DRAFTS: Record<string, () => AnyAjv> = {
  'http://json-schema.org/draft-07/schema': () => new Ajv({ strict: false, allErrors: true }),
  'https://json-schema.org/draft/2019-09/schema': () => new Ajv2019({ strict: false, allErrors: true }),
  'https://json-schema.org/draft/2020-12/schema': () => new Ajv2020({ strict: false, allErrors: true }),
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
 * 2020-12 when named) with ajv 8 and ajv-formats, and compiles it. Unknown keywords are allowed
 * (vendor extensions); remote `$ref`s are never fetched, so a reference outside the schema fails.
 * The compiled schema is removed from ajv's registry right away (synchronously, so schemas of
 * different skills never share `$id`s and the cache does not grow); the validator stays usable.
 * @returns a validator, or the error text
 */
export function checkJsonSchema(schema: unknown): SchemaCheck {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    return { ok: false, error: 'must be a JSON object' };
  }
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
});

/** Keywords whose values are data, not subschemas: never rewritten. */
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
 * An input generated from `inputSchema` with json-schema-faker (examples and defaults preferred,
 * optional properties filled, arrays ≤ 5 items, strings ≤ 100 characters), checked against the schema;
 * up to `attempts` tries.
 * @returns the generated value, or an error when no valid value was produced
 */
export function generateInput(
  inputSchema: object,
  validate: ValidateFunction,
  attempts = 5,
): { ok: true; value: unknown } | { ok: false; error: string } {
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
