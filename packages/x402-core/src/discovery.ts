/** A JSON Schema (2020-12) object, as `z.toJSONSchema` produces it. */
export type JsonSchemaObject = Record<string, unknown>;

/** HTTP methods whose input is the query string (x402 discovery's "query methods"). */
export type QueryMethod = 'GET' | 'HEAD' | 'DELETE';

/** HTTP methods whose input is a JSON body (x402 discovery's "body methods"). */
export type BodyMethod = 'POST' | 'PUT' | 'PATCH';

/**
 * How an agent calls a paid resource and what it gets back, for x402 discovery (docs/payments.md,
 * "Discovery"): published as `outputSchema` in each v1 requirement ({@link v1OutputSchema}) and as the
 * `bazaar` extension of the v2 `PaymentRequired`. The schemas are JSON Schema 2020-12 objects, built by
 * the service from the same zod schemas as its OpenAPI document.
 */
export type ResourceDiscovery = {
  /** JSON Schema of the 200 body. */
  output: JsonSchemaObject;
  /** A 200 body, shown to catalogues as the answer's example. */
  outputExample: unknown;
} & (
  | {
      method: QueryMethod;
      /** JSON Schema (`type: "object"`) of the query parameters. */
      query: JsonSchemaObject;
      /** Example query parameter values. */
      inputExample?: Record<string, unknown>;
    }
  | {
      method: BodyMethod;
      /** JSON Schema (`type: "object"`) of the JSON body. */
      body: JsonSchemaObject;
      /** An example body. */
      inputExample?: Record<string, unknown>;
    }
);

/**
 * The x402 v1 `outputSchema` of a requirement:
 * `{ input: { type: "http", method, discoverable: true, queryParams | bodyType: "json" + bodyFields,
 * required? }, output: <JSON Schema of the 200 body> }`. `queryParams` and `bodyFields` map each field
 * to its JSON Schema.
 *
 * @param discovery the resource's discovery metadata
 */
export function v1OutputSchema(discovery: ResourceDiscovery): Record<string, unknown> {
  const { properties, ...required } = discoveryFields(discovery);
  const input =
    'query' in discovery
      ? { type: 'http', method: discovery.method, discoverable: true, queryParams: properties, ...required }
      : {
          type: 'http',
          method: discovery.method,
          discoverable: true,
          bodyType: 'json',
          bodyFields: properties,
          ...required,
        };
  return { input, output: discovery.output };
}

/**
 * The input fields of a resource (its query parameters or its body's fields): each field's JSON Schema
 * under `properties`, and the names of the required ones.
 *
 * @param discovery the resource's discovery metadata
 */
export function discoveryFields(discovery: ResourceDiscovery): {
  properties: Record<string, unknown>;
  required?: unknown[];
} {
  const fields = 'query' in discovery ? discovery.query : discovery.body;
  return {
    properties: isObject(fields.properties) ? fields.properties : {},
    ...(Array.isArray(fields.required) ? { required: fields.required } : {}),
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
