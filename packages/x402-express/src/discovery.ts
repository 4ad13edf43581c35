import { bazaarResourceServerExtension, declareDiscoveryExtension } from '@x402/extensions/bazaar';
import { discoveryFields, type ResourceDiscovery } from '@repo/x402-core';

/**
 * The `extensions` of a v2 `PaymentRequired` for a resource: `{ bazaar: { info, schema } }`, declared
 * with `@x402/extensions`' `declareDiscoveryExtension` (input example and JSON Schema, output example
 * and JSON Schema) and given its HTTP method as the official resource server's enrichment does
 * (docs/payments.md, "Discovery").
 *
 * @param discovery the resource's discovery metadata
 * @throws Error from `@x402/extensions` when the declaration is not valid (a programming error)
 */
export function bazaarExtensions(discovery: ResourceDiscovery): Record<string, unknown> {
  const output = { example: discovery.outputExample, schema: discovery.output };
  const inputSchema = discoveryFields(discovery);
  const declared =
    'query' in discovery
      ? declareDiscoveryExtension({ input: discovery.inputExample ?? {}, inputSchema, output })
      : declareDiscoveryExtension({
          input: discovery.inputExample ?? {},
          inputSchema,
          bodyType: 'json',
          output,
        });
  const enrich = bazaarResourceServerExtension.enrichDeclaration;
  const extensions: Record<string, unknown> = {};
  for (const [key, declaration] of Object.entries(declared)) {
    // Only the method is taken from the "request": our routes have no path parameters.
    extensions[key] = enrich
      ? enrich(declaration, { method: discovery.method, adapter: { getPath: () => '' } })
      : declaration;
  }
  return extensions;
}

/** A paid MCP tool as the x402 Bazaar lists it (docs/payments.md, "Discovery"). */
export interface McpToolDiscovery {
  /** The tool's name in `tools/list`. */
  toolName: string;
  /** The tool's description. */
  description: string;
  /** The JSON Schema of the tool's arguments, as `tools/list` gives it. */
  inputSchema: Record<string, unknown>;
  /** Arguments that validate against `inputSchema`, when there is one to show. */
  inputExample?: Record<string, unknown>;
  /** The answer's JSON Schema and an example of it. */
  output: { schema: Record<string, unknown>; example: unknown };
}

/**
 * The `extensions` of a paid MCP tool's v2 `PaymentRequired`: `{ bazaar: { info, schema } }` with
 * `info.input.type` `"mcp"`, the tool's name, description, arguments' schema and the Streamable HTTP
 * transport, declared with `@x402/extensions`' `declareDiscoveryExtension` (docs/payments.md,
 * "Discovery"). The HTTP route behind the tool keeps its HTTP entry ({@link bazaarExtensions}).
 * @param tool the tool's listing
 * @throws Error from `@x402/extensions` when the declaration is not valid (a programming error)
 */
export function mcpBazaarExtensions(tool: McpToolDiscovery): Record<string, unknown> {
  return declareDiscoveryExtension({
    toolName: tool.toolName,
    description: tool.description,
    transport: 'streamable-http',
    inputSchema: tool.inputSchema,
    ...(tool.inputExample ? { example: tool.inputExample } : {}),
    output: { example: tool.output.example, schema: tool.output.schema },
  });
}
