/** A JSON Schema document or sub-schema, as produced by `z.toJSONSchema`. */
type Schema = Record<string, unknown>;

/**
 * Builds a small, deterministic instance of a JSON Schema: the first `enum` member, the `const`, the
 * `null` branch of a nullable union (else the first branch), every declared property, `minItems`
 * elements (at least one), numbers at their lower bound and strings named after their path, padded
 * to `minLength`. Used by the scripted LLM server when a test does not script a task: the same
 * request always gets the same answer, which a random faker would not guarantee (json-schema-faker
 * picks union branches and enum members at random, so a debate would end differently from run to
 * run). Supports what zod emits: `type` (or a list of types), `enum`, `const`, `anyOf`/`oneOf`/
 * `allOf`, `properties`, `items`, `prefixItems`, local `$ref`s into `$defs`/`definitions`, the common
 * string formats and numeric bounds.
 * @param schema the JSON Schema
 */
export function defaultInstance(schema: unknown): unknown {
  const root = (typeof schema === 'object' && schema !== null ? schema : {}) as Schema;
  return build(root, root, 'value', 0);
}

function resolveRef(root: Schema, ref: string): Schema {
  if (!ref.startsWith('#')) return {};
  let node: unknown = root;
  for (const part of ref.slice(1).split('/').filter(Boolean)) {
    node =
      typeof node === 'object' && node !== null
        ? (node as Schema)[decodeURIComponent(part.replace(/~1/g, '/').replace(/~0/g, '~'))]
        : undefined;
  }
  return (typeof node === 'object' && node !== null ? node : {}) as Schema;
}

function build(node: Schema, root: Schema, path: string, depth: number): unknown {
  if (depth > 24) return null;
  if (typeof node.$ref === 'string') return build(resolveRef(root, node.$ref), root, path, depth + 1);
  if ('const' in node) return node.const;
  if (Array.isArray(node.enum) && node.enum.length > 0) return node.enum[0];
  if ('default' in node && node.default !== undefined) return node.default;
  const union = (node.anyOf ?? node.oneOf) as Schema[] | undefined;
  if (Array.isArray(union) && union.length > 0) {
    const nullBranch = union.find((branch) => branch.type === 'null');
    return nullBranch ? null : build(union[0] as Schema, root, path, depth + 1);
  }
  if (Array.isArray(node.allOf) && node.allOf.length > 0) {
    return build(
      Object.assign({}, ...(node.allOf as Schema[]), { allOf: undefined }) as Schema,
      root,
      path,
      depth + 1,
    );
  }
  const types = Array.isArray(node.type)
    ? (node.type as string[])
    : typeof node.type === 'string'
      ? [node.type]
      : [];
  const type = types.includes('null')
    ? 'null'
    : (types[0] ?? (node.properties ? 'object' : node.items ? 'array' : 'string'));
  switch (type) {
    case 'null':
      return null;
    case 'boolean':
      return false;
    case 'integer':
    case 'number':
      return numberFor(node, type === 'integer');
    case 'array': {
      const prefix = Array.isArray(node.prefixItems) ? (node.prefixItems as Schema[]) : [];
      const min = typeof node.minItems === 'number' ? node.minItems : 1;
      const max = typeof node.maxItems === 'number' ? node.maxItems : Math.max(min, 1);
      const count = Math.min(Math.max(min, 1, prefix.length), max);
      const items = (typeof node.items === 'object' && node.items !== null ? node.items : {}) as Schema;
      return Array.from({ length: count }, (_, i) =>
        build(prefix[i] ?? items, root, `${path}[${i}]`, depth + 1),
      );
    }
    case 'object': {
      const out: Record<string, unknown> = {};
      const properties = (node.properties ?? {}) as Record<string, Schema>;
      for (const [key, child] of Object.entries(properties)) out[key] = build(child, root, key, depth + 1);
      return out;
    }
    default:
      return stringFor(node, path);
  }
}

function numberFor(node: Schema, integer: boolean): number {
  const min = typeof node.minimum === 'number' ? node.minimum : undefined;
  const exclusiveMin = typeof node.exclusiveMinimum === 'number' ? node.exclusiveMinimum : undefined;
  const max = typeof node.maximum === 'number' ? node.maximum : undefined;
  const exclusiveMax = typeof node.exclusiveMaximum === 'number' ? node.exclusiveMaximum : undefined;
  let value = min ?? (exclusiveMin !== undefined ? exclusiveMin + (integer ? 1 : 0.5) : 1);
  if (integer) value = Math.ceil(value);
  if (max !== undefined && value > max) value = max;
  if (exclusiveMax !== undefined && value >= exclusiveMax)
    value = integer
      ? Math.ceil(exclusiveMax) - 1
      : (exclusiveMax + (exclusiveMin ?? min ?? exclusiveMax - 1)) / 2;
  return value;
}

function stringFor(node: Schema, path: string): string {
  switch (node.format) {
    case 'date-time':
      return '2026-01-01T00:00:00.000Z';
    case 'date':
      return '2026-01-01';
    case 'uri':
    case 'url':
      return 'https://example.com/';
    case 'email':
      return 'user@example.com';
    case 'uuid':
      return '00000000-0000-4000-8000-000000000000';
    default:
      break;
  }
  const min = typeof node.minLength === 'number' ? node.minLength : 1;
  const max = typeof node.maxLength === 'number' ? node.maxLength : Infinity;
  let text = `sample ${path}`;
  while (text.length < min) text += ' sample';
  return text.slice(0, Math.max(min, Math.min(max, text.length)));
}
