import { writeFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

/** What {@link exampleCheck} found in an OpenAPI document. */
export interface ExampleCheck {
  /** `METHOD path status` (or `METHOD path request`) of each example that its schema refuses, with why. */
  invalid: string[];
  /** `METHOD path status` (or `METHOD path request`) of each JSON body documented without an example. */
  missing: string[];
  /** How many examples were checked. */
  checked: number;
}

type Media = { schema?: unknown; example?: unknown };
type Operation = {
  requestBody?: { content?: Record<string, Media> };
  responses?: Record<string, { content?: Record<string, Media> }>;
};

/**
 * Checks every example of a served OpenAPI 3.1 document against the schema it illustrates (JSON Schema
 * 2020-12, `$ref`s into `components` resolved, formats checked), so an example cannot drift from the
 * contract, and lists the JSON bodies that have none.
 * @param doc the document as served at `/openapi.json`
 */
export function exampleCheck(doc: {
  paths?: Record<string, Record<string, unknown>>;
  components?: unknown;
}): ExampleCheck {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  const result: ExampleCheck = { invalid: [], missing: [], checked: 0 };
  const check = (where: string, media: Media | undefined) => {
    if (!media?.schema) return;
    if (media.example === undefined) {
      result.missing.push(where);
      return;
    }
    result.checked++;
    const validate = ajv.compile({ ...(media.schema as object), components: doc.components });
    if (!validate(media.example))
      result.invalid.push(`${where}: ${ajv.errorsText(validate.errors, { separator: '; ' })}`);
  };
  for (const [path, methods] of Object.entries(doc.paths ?? {})) {
    for (const [method, value] of Object.entries(methods)) {
      const op = value as Operation;
      const name = `${method.toUpperCase()} ${path}`;
      check(`${name} request`, op.requestBody?.content?.['application/json']);
      for (const [status, response] of Object.entries(op.responses ?? {}))
        check(`${name} ${status}`, response.content?.['application/json']);
    }
  }
  return result;
}

/**
 * Whether a service's example generator runs (`UPDATE_OPENAPI_EXAMPLES=1`): it calls every operation
 * for real and rewrites the captured examples, so it is skipped otherwise.
 */
export const CAPTURE_EXAMPLES = process.env.UPDATE_OPENAPI_EXAMPLES === '1';

/** `value` with every array cut to its first two items (an example shows the shape, not the bulk). */
function trim(value: unknown): unknown {
  if (Array.isArray(value)) return value.slice(0, 2).map(trim);
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, trim(v)]));
  return value;
}

/**
 * Writes captured examples, by `"<operationId> <status>"` and `"<operationId> request"`, to `file` as
 * `withExamples` reads them: JSON, arrays cut to two items.
 */
export function writeExamples(file: string, examples: Record<string, unknown>): void {
  writeFileSync(file, `${JSON.stringify(trim(examples), null, 2)}\n`);
}
