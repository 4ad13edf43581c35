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

/** The headers of the operation's header security schemes (`apiKey` in a header), in order. */
function securityHeaders(doc: JsonSchema, op: Obj): string[] {
  const schemes =
    isObj(doc.components) && isObj(doc.components.securitySchemes) ? doc.components.securitySchemes : {};
  const security = Array.isArray(op.security) ? op.security : [];
  const headers: string[] = [];
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
        headers.push(scheme.name);
    }
  }
  return headers;
}

/** The x402 payment headers: an operation secured by one is paid, not keyed. */
const X402_HEADERS = new Set(['x-payment', 'payment-signature']);

/** The header a key-authenticated operation sends, from its first security requirement with one. */
function keyHeader(doc: JsonSchema, op: Obj): { name: string; variable: string } | undefined {
  const name = securityHeaders(doc, op)[0];
  return name === undefined ? undefined : { name, variable: 'API_KEY' };
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

/** The three samples of one request in the order the documents list them: curl, TypeScript, Python. */
function samplesOf(curl: string, ts: string, py: string): CodeSample[] {
  return [
    { lang: 'Shell', label: 'curl', source: curl },
    { lang: 'TypeScript', label: 'TypeScript', source: ts },
    { lang: 'Python', label: 'Python', source: py },
  ];
}

/** The curl lines sending `json` as the body (single quotes escaped for the shell); none without a body. */
function curlJsonBody(json: string | undefined): string[] {
  return json === undefined
    ? []
    : [`  -H 'content-type: application/json'`, `  -d '${json.replace(/'/g, `'\\''`)}'`];
}

/**
 * The `x-codeSamples` of one operation (docs/architecture.md, "Routes own their contracts"): the same
 * request with curl, TypeScript (`fetch`) and Python (`requests`), the base URL from `BASE_URL` and a
 * key from `API_KEY` where the operation needs one, and the documented request body example.
 */
export function codeSamples(doc: JsonSchema, method: string, path: string, op: Obj): CodeSample[] {
  if (securityHeaders(doc, op).some((name) => X402_HEADERS.has(name.toLowerCase())))
    return x402Samples(method, examplePath(path, op), bodyExample(op));
  const url = examplePath(path, op);
  const key = keyHeader(doc, op);
  const body = bodyExample(op);
  const json = body === undefined ? undefined : JSON.stringify(body, null, 2);
  const upper = method.toUpperCase();
  const curl = [
    `curl -X ${upper} "$BASE_URL${url}"`,
    ...(key ? [`  -H "${key.name}: $${key.variable}"`] : []),
    ...curlJsonBody(json),
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
  return samplesOf(curl, ts, py);
}

/**
 * The samples of an operation paid with x402 (docs/architecture.md, "Routes own their contracts"): curl
 * asks and shows the 402 (the `PaymentRequirements` and the v2 offer in `PAYMENT-REQUIRED`), then
 * repeats the request with the proof an x402 client made; TypeScript pays with the official x402
 * client (`@x402/fetch` with `@x402/svm`'s exact scheme, from a Solana keypair file); Python asks and
 * prints the offer, then repeats with the proof.
 */
function x402Samples(method: string, url: string, body: unknown): CodeSample[] {
  const upper = method.toUpperCase();
  const json = body === undefined ? undefined : JSON.stringify(body, null, 2);
  const curlBody = curlJsonBody(json);
  const curl = [
    '# 1. Without payment: 402, the PaymentRequirements in the body, the x402 v2 offer in PAYMENT-REQUIRED',
    [`curl -i -X ${upper} "$BASE_URL${url}"`, ...curlBody].join(' \\\n'),
    '# 2. Pay with an x402 client (see the TypeScript sample), then repeat the request with its proof',
    [`curl -X ${upper} "$BASE_URL${url}"`, ...curlBody, '  -H "PAYMENT-SIGNATURE: $PAYMENT_SIGNATURE"'].join(
      ' \\\n',
    ),
  ].join('\n');
  const ts = [
    "import { readFileSync } from 'node:fs';",
    "import { createKeyPairSignerFromBytes } from '@solana/kit';",
    "import { wrapFetchWithPayment, x402Client } from '@x402/fetch';",
    "import { ExactSvmScheme } from '@x402/svm/exact/client';",
    '',
    '// A Solana keypair file (a JSON array of 64 bytes) holding the USDC to pay with.',
    "const keypair = Uint8Array.from(JSON.parse(readFileSync(process.env.KEYPAIR_PATH ?? '', 'utf8')));",
    'const client = new x402Client();',
    "client.register('solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp', new ExactSvmScheme(await createKeyPairSignerFromBytes(keypair)));",
    '// Answers the 402 by paying the offer, then repeats the request with PAYMENT-SIGNATURE.',
    'const pay = wrapFetchWithPayment(fetch, client);',
    `const res = await pay(\`\${process.env.BASE_URL}${url}\`, {`,
    `  method: '${upper}',`,
    ...(json === undefined
      ? []
      : [
          "  headers: { 'content-type': 'application/json' },",
          `  body: JSON.stringify(${json.replace(/\n/g, '\n  ')}),`,
        ]),
    '});',
    "console.log(res.status, res.headers.get('payment-response'), await res.json());",
  ].join('\n');
  const call = (headers: string) =>
    `requests.${method.toLowerCase()}(os.environ["BASE_URL"] + "${url}"${headers}${json === undefined ? '' : ', json=body'})`;
  const py = [
    'import base64, json, os',
    'import requests',
    '',
    ...(json === undefined ? [] : [`body = ${pythonLiteral(body)}`]),
    `asked = ${call('')}`,
    '# 402: the offer to pay with an x402 client',
    'print(asked.status_code, json.loads(base64.b64decode(asked.headers["PAYMENT-REQUIRED"])))',
    `paid = ${call(', headers={"PAYMENT-SIGNATURE": os.environ["PAYMENT_SIGNATURE"]}')}`,
    'print(paid.status_code, paid.json())',
  ].join('\n');
  return samplesOf(curl, ts, py);
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
