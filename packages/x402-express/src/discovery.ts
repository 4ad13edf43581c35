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
