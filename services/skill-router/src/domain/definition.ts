import { createHash } from 'node:crypto';
import { canonicalize } from 'json-canonicalize';

/**
 * What a skill's verification reviews and pins (README, "Pinned definitions"): the endpoint, the
 * description, the pricing and both schemas, and for a tool imported from an MCP server its name. Name, provider, capabilities and chains are directory
 * metadata, not part of the pinned definition.
 */
export interface SkillDefinition {
  endpoint: string;
  description: string;
  /** `price_usd` in USD per call; `pay_to` the Solana USDC token account paid, when declared. */
  pricing: { model: string; price_usd: number; pay_to?: string };
  input_schema: Record<string, unknown>;
  output_schema: Record<string, unknown>;
  /** The tool, for a skill imported from an MCP server (README, "MCP servers as skills"). */
  mcp_tool?: string;
}

/**
 * The pinned part of a register body (README, "Pinned definitions").
 * @param input a validated register body (or any object with those fields)
 */
export function definitionOf(input: SkillDefinition): SkillDefinition {
  return {
    endpoint: input.endpoint,
    description: input.description,
    // Without a pay_to the key is left out, so definitions registered before it hash as they did.
    pricing: {
      model: input.pricing.model,
      price_usd: input.pricing.price_usd,
      ...(input.pricing.pay_to === undefined ? {} : { pay_to: input.pricing.pay_to }),
    },
    input_schema: input.input_schema,
    output_schema: input.output_schema,
    // Absent for HTTP skills, so their definitions hash as they did.
    ...(input.mcp_tool === undefined ? {} : { mcp_tool: input.mcp_tool }),
  };
}

/**
 * The JSON Canonicalization Scheme (RFC 8785) of a JSON value, by `json-canonicalize`: object members
 * sorted by the UTF-16 code units of their names, no whitespace, strings and numbers as ECMAScript's
 * `JSON.stringify` writes them.
 * @param value a value that came from JSON (objects, arrays, strings, finite numbers, booleans, null)
 * @throws Error for a non-finite number
 */
export function canonicalJson(value: unknown): string {
  return canonicalize(value);
}

/**
 * The hash a verification binds to (README, "Pinned definitions"): lowercase hex SHA-256 of the
 * UTF-8 of {@link canonicalJson} of {@link definitionOf}. Two registrations hash alike exactly when
 * their endpoint, description, pricing and schemas are the same JSON, whatever their key order.
 * @returns 64 lowercase hex characters
 */
export function definitionHash(input: SkillDefinition): string {
  return createHash('sha256')
    .update(canonicalJson(definitionOf(input)), 'utf8')
    .digest('hex');
}
