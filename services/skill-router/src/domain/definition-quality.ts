import type { SkillDirectory } from '../data/skill-directory';

/**
 * The definition quality score (README, "Definition quality"): how well a skill's stored definition
 * documents itself, 0–100, with one explained part per criterion. It sorts the directory listing on
 * request (`sort=quality`) and is never a routing factor (the spec fixes the six factors).
 *
 * Pure and bounded: the schemas are walked iteratively, never compiled, and the walk stops after
 * {@link QUALITY_MAX_NODES} schema nodes, so a hostile schema costs at most that much on the event
 * loop (registration already caps each schema at 32 KiB and 32 levels: domain/schema-limits.ts).
 */

/** The criteria of the score and the points each is worth (they add up to 100). */
export const QUALITY_PARTS = {
  /** The skill's description says what it does in enough words. */
  description: 10,
  /** Input parameters carry a `description`. */
  parameters: 30,
  /** The schemas give `examples` (or `default` values) of inputs and answers. */
  examples: 20,
  /** Types, `required` and output fields are declared. */
  schema_completeness: 25,
  /** The output schema documents an error answer. */
  error_documentation: 15,
} as const;

/** One criterion of {@link QUALITY_PARTS}. */
export type QualityPartName = keyof typeof QUALITY_PARTS;

/** One part of a score: points earned of `max_points`, and why in one short sentence. */
export interface QualityPart {
  part: QualityPartName;
  points: number;
  max_points: number;
  explanation: string;
}

/** A definition's score (integer 0–100, the sum of its parts' points) and its parts, in {@link QUALITY_PARTS} order. */
export interface DefinitionQuality {
  score: number;
  parts: QualityPart[];
}

/** What the score reads of a definition: the register body's fields of one revision. */
export interface QualityInput {
  description: string;
  input_schema: unknown;
  output_schema: unknown;
}

/** Most schema nodes (values reached through schema keywords) walked, and most fields counted, per schema. */
export const QUALITY_MAX_NODES = 2_000;

/** A description this long (characters) and with this many words earns the description part in full. */
const DESCRIPTION_FULL_CHARS = 80;
const DESCRIPTION_FULL_WORDS = 12;

/** Property names that mark an error answer in an output schema. */
const ERROR_FIELDS = new Set(['error', 'errors', 'error_code', 'error_message', 'errorcode', 'errormessage']);
/** Keywords that declare what a value is (a `$ref` counts: the referenced schema declares it). */
const TYPE_KEYWORDS = ['type', 'enum', 'const', '$ref', 'oneOf', 'anyOf', 'allOf'];

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const hasText = (v: unknown) => typeof v === 'string' && v.trim().length > 0;
const hasExamples = (s: Obj) =>
  (Array.isArray(s.examples) && s.examples.length > 0) || 'default' in s || 'example' in s;
const isTyped = (s: Obj) => TYPE_KEYWORDS.some((k) => k in s);

/** A named field of a schema: a property of an object, found through `properties` and `items`. */
interface Field {
  schema: Obj;
}

/** The fields of a schema and whether the walk reached its node budget. */
interface SchemaFields {
  fields: Field[];
  truncated: boolean;
}

/**
 * The named fields of `schema` at any depth (through `properties`, `items` and `prefixItems`, and the
 * branches of `oneOf`, `anyOf` and `allOf`), breadth first, at most {@link QUALITY_MAX_NODES} nodes.
 * `$ref`s are not followed.
 */
function fieldsOf(schema: unknown): SchemaFields {
  const fields: Field[] = [];
  const queue: unknown[] = [schema];
  let truncated = false;
  // The queue never holds more than the budget can visit, however wide a branch list is.
  const push = (child: unknown) => {
    if (queue.length < QUALITY_MAX_NODES) queue.push(child);
    else truncated = true;
  };
  for (let i = 0; i < queue.length; i++) {
    const node = queue[i];
    if (!isObject(node)) continue;
    if (isObject(node.properties)) {
      for (const child of Object.values(node.properties)) {
        if (!isObject(child)) continue;
        if (fields.length >= QUALITY_MAX_NODES) return { fields, truncated: true };
        fields.push({ schema: child });
        push(child);
      }
    }
    for (const key of ['items', 'additionalProperties']) if (isObject(node[key])) push(node[key]);
    for (const key of ['prefixItems', 'oneOf', 'anyOf', 'allOf']) {
      const list = node[key];
      if (Array.isArray(list)) for (const branch of list.slice(0, QUALITY_MAX_NODES)) push(branch);
    }
  }
  return { fields, truncated };
}

/** Whether an output schema declares an error answer: an error field at the top or in a top-level branch. */
function documentsErrors(output: unknown): boolean {
  if (!isObject(output)) return false;
  const branches: unknown[] = [output];
  for (const key of ['oneOf', 'anyOf']) {
    const list = output[key];
    if (Array.isArray(list)) branches.push(...list.slice(0, 50));
  }
  return branches.some(
    (b) =>
      isObject(b) &&
      isObject(b.properties) &&
      Object.keys(b.properties).some((name) => ERROR_FIELDS.has(name.toLowerCase())),
  );
}

const share = (n: number, of: number) => (of === 0 ? 0 : n / of);
const part = (name: QualityPartName, fraction: number, explanation: string): QualityPart => {
  const max = QUALITY_PARTS[name];
  return {
    part: name,
    points: Math.round(max * Math.min(1, Math.max(0, fraction))),
    max_points: max,
    explanation,
  };
};
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/**
 * Scores a skill's definition (README, "Definition quality"). Never throws: any JSON value is
 * accepted for the schemas (a non-object earns nothing for its parts).
 * @returns the score, an integer 0–100 equal to the sum of the parts' points, and the five parts of
 *   {@link QUALITY_PARTS} with an explanation each (e.g. "4 of 6 input parameters described")
 */
export function definitionQuality(definition: QualityInput): DefinitionQuality {
  const input = isObject(definition.input_schema) ? definition.input_schema : {};
  const output = isObject(definition.output_schema) ? definition.output_schema : {};
  const inFields = fieldsOf(input);
  const outFields = fieldsOf(output);
  const bounded = (f: SchemaFields) => (f.truncated ? ` (first ${QUALITY_MAX_NODES} schema nodes)` : '');

  // Description: a sentence or two in words, not a label.
  const text = definition.description.trim();
  const words = text.split(/\s+/).filter(Boolean).length;
  const descriptionPart = part(
    'description',
    Math.min(share(text.length, DESCRIPTION_FULL_CHARS), share(words, DESCRIPTION_FULL_WORDS)),
    `description of ${plural(words, 'word')} (${DESCRIPTION_FULL_WORDS} or more earn it in full)`,
  );

  // Parameters: each input field with a description; no fields at all is fine when the schema itself is described.
  const params = inFields.fields;
  const described = params.filter((f) => hasText(f.schema.description)).length;
  const parametersPart =
    params.length > 0
      ? part(
          'parameters',
          share(described, params.length),
          `${described} of ${plural(params.length, 'input parameter')} described${bounded(inFields)}`,
        )
      : hasText(input.description)
        ? part('parameters', 1, 'no input parameters; input_schema itself is described')
        : part('parameters', 0, 'input_schema names no parameters and has no description');

  // Examples: half for inputs, half for answers; a whole example counts in full, else per field.
  const exampleShare = (root: Obj, f: SchemaFields) =>
    hasExamples(root) ? 1 : share(f.fields.filter((x) => hasExamples(x.schema)).length, f.fields.length);
  const inExamples = exampleShare(input, inFields);
  const outExamples = exampleShare(output, outFields);
  const exampleNote = (root: Obj, f: SchemaFields, what: string, fieldWord: string) => {
    if (hasExamples(root)) return `${what} has examples`;
    if (f.fields.length === 0) return `${what} has no examples`;
    const n = f.fields.filter((x) => hasExamples(x.schema)).length;
    return `${n} of ${plural(f.fields.length, fieldWord)} with examples or defaults`;
  };
  const examplesPart = part(
    'examples',
    (inExamples + outExamples) / 2,
    `${exampleNote(input, inFields, 'input_schema', 'input parameter')}; ${exampleNote(output, outFields, 'output_schema', 'output field')}`,
  );

  // Completeness: what a caller needs to build a valid call and read its answer (shares count in part).
  const outTyped = outFields.fields.filter((f) => isTyped(f.schema)).length;
  const outDescribed = outFields.fields.filter((f) => hasText(f.schema.description)).length;
  const checks: [boolean | number, string][] = [
    [isTyped(input), 'input_schema declares its type'],
    // Without parameters these two hold only for a schema that says what it takes (its type).
    [
      params.length === 0 ? isTyped(input) : Array.isArray(input.required),
      'input_schema lists required parameters',
    ],
    [
      params.length === 0
        ? isTyped(input)
        : share(params.filter((f) => isTyped(f.schema)).length, params.length),
      'input parameters are typed',
    ],
    [isTyped(output), 'output_schema declares its type'],
    [
      outFields.fields.length > 0 || isObject(output.items) || 'enum' in output || 'const' in output,
      'output_schema names its fields',
    ],
    [share(outTyped, outFields.fields.length), 'output fields are typed'],
    [share(outDescribed, outFields.fields.length), 'output fields are described'],
  ];
  const values = checks.map(([v]) => (typeof v === 'number' ? v : v ? 1 : 0));
  const met = values.filter((v) => v === 1).length;
  const missing = checks.filter((_, i) => values[i] !== 1).map(([, label]) => label);
  const completenessPart = part(
    'schema_completeness',
    values.reduce((a, b) => a + b, 0) / checks.length,
    `${met} of ${checks.length} checks met${missing.length ? `; not met: ${missing.join(', ')}` : ''}${bounded(outFields)}`,
  );

  // Errors: a declared error answer in full, a description that mentions errors in part.
  const structured = documentsErrors(output);
  const prose = /\b(errors?|fails?|failures?)\b/i.test(
    `${text} ${hasText(output.description) ? String(output.description) : ''}`,
  );
  const errorPart = structured
    ? part('error_documentation', 1, 'output_schema declares an error answer')
    : prose
      ? part(
          'error_documentation',
          0.5,
          'errors mentioned in prose only; output_schema declares no error answer',
        )
      : part('error_documentation', 0, 'no error answer documented');

  const parts = [descriptionPart, parametersPart, examplesPart, completenessPart, errorPart];
  return { score: parts.reduce((sum, p) => sum + p.points, 0), parts };
}

/**
 * Scores up to `batch` skills that have no definition quality yet (registered before the score
 * existed) and stores it (README, "Definition quality"); idempotent, so replicas may run it at once.
 * @returns how many skills it scored (0 when none is left)
 * @throws whatever PostgreSQL throws
 */
export async function backfillDefinitionQuality(
  directory: Pick<SkillDirectory, 'unscoredDefinitions' | 'storeQuality'>,
  batch = 200,
): Promise<number> {
  const rows = await directory.unscoredDefinitions(batch);
  for (const r of rows) {
    const quality = definitionQuality({
      description: r.description,
      input_schema: r.inputSchema,
      output_schema: r.outputSchema,
    });
    await directory.storeQuality(r.skillId, r.revision, quality);
  }
  return rows.length;
}
