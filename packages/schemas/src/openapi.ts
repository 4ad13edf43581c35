import { z } from 'zod';

/** A JSON Schema object (OpenAPI 3.1 uses JSON Schema 2020-12). */
export type JsonSchema = Record<string, unknown>;

/** A query, path or header parameter of an operation. */
export interface OpenApiParameter {
  name: string;
  in: 'query' | 'path' | 'header';
  required?: boolean;
  description?: string;
  schema: JsonSchema;
  /** An example value, a real one the operation was called with (documented as the parameter's `example`). */
  example?: unknown;
}

/**
 * A response header. A header whose value is base64 of JSON says so in its schema with the JSON Schema
 * 2020-12 content keywords (`contentEncoding: 'base64'`, `contentMediaType: 'application/json'`,
 * `contentSchema`), which is how `exampleCheck` of `@repo/service-kit/testing` checks its example.
 */
export interface OpenApiHeader {
  description: string;
  schema: JsonSchema;
  /** An example value, read from a real answer (documented as the header's `example`). */
  example?: unknown;
}

/** A response: a description, optionally a body (a zod schema or the name of a component) and headers. */
export interface OpenApiResponse {
  description: string;
  body?: z.ZodType | string;
  headers?: Record<string, OpenApiHeader>;
  /** An example body, a real answer of the operation (documented as the media type's `example`). */
  example?: unknown;
}

/** One operation of the document. */
export interface OpenApiOperation {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** OpenAPI path template, e.g. `/api/v1/jobs/{jobId}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags?: string[];
  parameters?: OpenApiParameter[];
  /** JSON request body (a zod schema or a component name). */
  requestBody?: { body: z.ZodType | string; required?: boolean; example?: unknown };
  responses: Record<string, OpenApiResponse>;
  security?: Record<string, string[]>[];
  /** Vendor extensions, e.g. `{ 'x-price-usdc': '0.10' }`. */
  extensions?: Record<`x-${string}`, unknown>;
}

/** Input of {@link buildOpenApiDocument}. */
export interface OpenApiInput {
  info: { title: string; version: string; description?: string };
  servers?: { url: string; description?: string }[];
  /** Named schemas placed under `components.schemas` and referable by name. */
  components: Record<string, z.ZodType>;
  securitySchemes?: Record<string, JsonSchema>;
  tags?: { name: string; description?: string }[];
  operations: OpenApiOperation[];
}

/**
 * The `format` values zod writes for `startsWith`, `endsWith` and `includes` beside the `pattern`
 * that says the same: formats no JSON Schema or OpenAPI tool knows, which strict validators (ajv's
 * default) refuse to compile.
 */
const ZOD_ONLY_FORMATS = new Set(['starts_with', 'ends_with', 'includes']);

/**
 * A zod schema as JSON Schema 2020-12 (the output side: what the service sends), with only standard
 * formats (a string check zod writes as a format of its own keeps its `pattern`).
 * @param io `output` for responses, `input` for request bodies
 */
export function toJsonSchema(schema: z.ZodType, io: 'input' | 'output' = 'output'): JsonSchema {
  const json = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'any',
    override: ({ jsonSchema }) => {
      if (typeof jsonSchema.format === 'string' && ZOD_ONLY_FORMATS.has(jsonSchema.format)) {
        delete jsonSchema.format;
      }
    },
  }) as JsonSchema;
  delete json.$schema;
  return json;
}

/**
 * Builds an OpenAPI 3.1 document from zod schemas (docs/architecture.md, "Routes own their
 * contracts"). A body named by its component, or a response body given as a component's schema
 * object, becomes a `$ref` to it.
 * @throws Error when an operation names a component that does not exist
 */
export function buildOpenApiDocument(input: OpenApiInput): JsonSchema {
  // A response body given as the very schema object of a component is referred to, not inlined
  // (components are rendered output side, so request bodies stay inline unless named).
  const componentNames = new Map<z.ZodType, string>(
    Object.entries(input.components).map(([name, schema]) => [schema, name]),
  );
  const ref = (body: z.ZodType | string, io: 'input' | 'output'): JsonSchema => {
    if (typeof body !== 'string') {
      const name = io === 'output' ? componentNames.get(body) : undefined;
      return name ? { $ref: `#/components/schemas/${name}` } : toJsonSchema(body, io);
    }
    if (!(body in input.components)) throw new Error(`Unknown OpenAPI component "${body}"`);
    return { $ref: `#/components/schemas/${body}` };
  };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of input.operations) {
    const responses: Record<string, unknown> = {};
    for (const [status, r] of Object.entries(op.responses)) {
      responses[status] = {
        description: r.description,
        ...(r.headers ? { headers: r.headers } : {}),
        ...(r.body
          ? {
              content: {
                'application/json': {
                  schema: ref(r.body, 'output'),
                  ...(r.example !== undefined ? { example: r.example } : {}),
                },
              },
            }
          : {}),
      };
    }
    (paths[op.path] ??= {})[op.method] = {
      operationId: op.operationId,
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
      ...(op.tags ? { tags: op.tags } : {}),
      ...(op.parameters?.length ? { parameters: op.parameters } : {}),
      ...(op.requestBody
        ? {
            requestBody: {
              required: op.requestBody.required ?? true,
              content: {
                'application/json': {
                  schema: ref(op.requestBody.body, 'input'),
                  ...(op.requestBody.example !== undefined ? { example: op.requestBody.example } : {}),
                },
              },
            },
          }
        : {}),
      responses,
      ...(op.security ? { security: op.security } : {}),
      ...(op.extensions ?? {}),
    };
  }
  const schemas: Record<string, JsonSchema> = {};
  for (const [name, schema] of Object.entries(input.components)) schemas[name] = toJsonSchema(schema);
  return {
    openapi: '3.1.0',
    info: input.info,
    ...(input.servers ? { servers: input.servers } : {}),
    ...(input.tags ? { tags: input.tags } : {}),
    paths,
    components: { schemas, ...(input.securitySchemes ? { securitySchemes: input.securitySchemes } : {}) },
  };
}
