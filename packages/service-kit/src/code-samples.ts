import type { JsonSchema } from '@repo/schemas';

/** One entry of an operation's `x-codeSamples` (the vendor extension Scalar and Redoc render). */
export interface CodeSample {
  lang: 'Shell' | 'TypeScript' | 'Python';
  label: string;
  source: string;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The header a key-authenticated operation sends, from its first security requirement with one. */
function keyHeader(doc: JsonSchema, op: Obj): { name: string; variable: string } | undefined {
  const schemes =
    isObj(doc.components) && isObj(doc.components.securitySchemes) ? doc.components.securitySchemes : {};
  const security = Array.isArray(op.security) ? op.security : [];
  for (const requirement of security) {
    if (!isObj(requirement)) continue;
    for (const name of Object.keys(requirement)) {
      const scheme = schemes[name];
      if (
        isObj(scheme) &&
        scheme.type === 'apiKey' &&
        scheme.in === 'header' &&
        typeof scheme.name === 'string'
      )
        return { name: scheme.name, variable: 'API_KEY' };
    }
  }
  return undefined;
}

/** The request body example of an operation, or `undefined` when it takes none. */
function bodyExample(op: Obj): unknown {
  const body = isObj(op.requestBody) ? op.requestBody : undefined;
  const media = body && isObj(body.content) ? body.content['application/json'] : undefined;
  if (!isObj(media)) return undefined;
  return media.example ?? {};
}

/** `/api/v1/jobs/{jobId}` with each path parameter's example, else `<name>`. */
function examplePath(path: string, op: Obj): string {
  const params = Array.isArray(op.parameters) ? op.parameters.filter(isObj) : [];
  return path.replace(/\{([^}]+)\}/g, (_m, name: string) => {
    const p = params.find((x) => x.in === 'path' && x.name === name);
    return encodeURIComponent(p?.example === undefined ? `<${name}>` : String(p.example));
  });
}

/**
 * The `x-codeSamples` of one operation (docs/architecture.md, "Routes own their contracts"): the same
 * request with curl, TypeScript (`fetch`) and Python (`requests`), the base URL from `BASE_URL` and a
 * key from `API_KEY` where the operation needs one, and the documented request body example.
 */
export function codeSamples(doc: JsonSchema, method: string, path: string, op: Obj): CodeSample[] {
  const url = examplePath(path, op);
  const key = keyHeader(doc, op);
  const body = bodyExample(op);
  const json = body === undefined ? undefined : JSON.stringify(body, null, 2);
  const upper = method.toUpperCase();
  const curl = [
    `curl -X ${upper} "$BASE_URL${url}"`,
    ...(key ? [`  -H "${key.name}: $${key.variable}"`] : []),
    ...(json === undefined
      ? []
      : [`  -H 'content-type: application/json'`, `  -d '${json.replace(/'/g, `'\\''`)}'`]),
  ].join(' \\\n');
  const tsHeaders = [
    ...(key ? [`'${key.name}': process.env.${key.variable} ?? ''`] : []),
    ...(json === undefined ? [] : [`'content-type': 'application/json'`]),
  ];
  const ts = [
    `const res = await fetch(\`\${process.env.BASE_URL}${url}\`, {`,
    `  method: '${upper}',`,
    ...(tsHeaders.length > 0 ? [`  headers: { ${tsHeaders.join(', ')} },`] : []),
    ...(json === undefined ? [] : [`  body: JSON.stringify(${json.replace(/\n/g, '\n  ')}),`]),
    `});`,
    `console.log(res.status, await res.json());`,
  ].join('\n');
  const pyHeaders = key ? `, headers={"${key.name}": os.environ["${key.variable}"]}` : '';
  const py = [
    'import os',
    'import requests',
    '',
    ...(json === undefined ? [] : [`body = ${pythonLiteral(body)}`]),
    `res = requests.${method.toLowerCase()}(os.environ["BASE_URL"] + "${url}"${pyHeaders}${json === undefined ? '' : ', json=body'})`,
    'print(res.status_code, res.json())',
  ].join('\n');
  return [
    { lang: 'Shell', label: 'curl', source: curl },
    { lang: 'TypeScript', label: 'TypeScript', source: ts },
    { lang: 'Python', label: 'Python', source: py },
  ];
}

/** A JSON value as a Python literal (`true` -> `True`, `null` -> `None`). */
function pythonLiteral(value: unknown, indent = ''): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number' || typeof value === 'string') return JSON.stringify(value);
  const inner = `${indent}    `;
  if (Array.isArray(value))
    return value.length === 0
      ? '[]'
      : `[\n${value.map((v) => inner + pythonLiteral(v, inner)).join(',\n')}\n${indent}]`;
  const entries = Object.entries(value as Obj);
  return entries.length === 0
    ? '{}'
    : `{\n${entries.map(([k, v]) => `${inner}${JSON.stringify(k)}: ${pythonLiteral(v, inner)}`).join(',\n')}\n${indent}}`;
}

/**
 * `doc` with `x-codeSamples` (curl, TypeScript, Python; see {@link codeSamples}) on every operation
 * that has none, for the reference page. Nothing is mutated.
 */
export function withCodeSamples(doc: JsonSchema): JsonSchema {
  const paths = isObj(doc.paths) ? doc.paths : {};
  return {
    ...doc,
    paths: Object.fromEntries(
      Object.entries(paths).map(([path, item]) => [
        path,
        isObj(item)
          ? Object.fromEntries(
              Object.entries(item).map(([method, op]) => [
                method,
                (METHODS as readonly string[]).includes(method) &&
                isObj(op) &&
                op['x-codeSamples'] === undefined
                  ? { ...op, 'x-codeSamples': codeSamples(doc, method, path, op) }
                  : op,
              ]),
            )
          : item,
      ]),
    ),
  };
}
