/** Largest `input_schema` or `output_schema` accepted, in bytes of its JSON text (README, "Security"). */
export const SCHEMA_MAX_BYTES = 32 * 1024;
/** Deepest nesting of objects and arrays accepted in a schema (README, "Security"). */
export const SCHEMA_MAX_DEPTH = 32;

/**
 * Checks the size and nesting of a registrant's schema without recursion (a deeply nested value
 * would overflow the stack of a recursive walk, and of `JSON.stringify`). Linear in the value, so
 * cheap enough for a request body already bounded by the body size limit.
 * @returns what is wrong (`"nests deeper than 32 levels"`, `"is larger than 32768 bytes (…)"`), or
 *   `undefined` when the schema is within {@link SCHEMA_MAX_BYTES} and {@link SCHEMA_MAX_DEPTH}
 */
export function schemaLimitProblem(schema: unknown): string | undefined {
  const stack: [unknown, number][] = [[schema, 1]];
  for (let next = stack.pop(); next; next = stack.pop()) {
    const [value, depth] = next;
    if (typeof value !== 'object' || value === null) continue;
    if (depth > SCHEMA_MAX_DEPTH) return `nests deeper than ${SCHEMA_MAX_DEPTH} levels`;
    for (const child of Array.isArray(value) ? value : Object.values(value)) stack.push([child, depth + 1]);
  }
  const bytes = Buffer.byteLength(JSON.stringify(schema) ?? '');
  return bytes > SCHEMA_MAX_BYTES ? `is larger than ${SCHEMA_MAX_BYTES} bytes (${bytes})` : undefined;
}
