import type { RegisterSkillRequest } from '../../src/schemas';

let seq = 0;

/** Input and output schemas of the echo-style test skills. */
export const TEXT_INPUT_SCHEMA = {
  type: 'object',
  properties: {
    text: { type: 'string', minLength: 1 },
    target_language: { type: 'string', enum: ['es', 'fr', 'de'] },
  },
  required: ['text', 'target_language'],
  additionalProperties: false,
};
export const TEXT_OUTPUT_SCHEMA = {
  type: 'object',
  properties: { translation: { type: 'string' }, language: { type: 'string' } },
  required: ['translation', 'language'],
};

/** A valid register body; `overrides` replace top-level fields. */
export function buildSkill(overrides: Partial<RegisterSkillRequest> = {}): RegisterSkillRequest {
  seq += 1;
  return {
    skill_id: `skill-${seq}-${Math.random().toString(36).slice(2, 8)}`,
    name: 'Text translator',
    provider: 'Acme Agents',
    description: 'Translates text between human languages quickly and accurately.',
    capabilities: ['translation', 'text'],
    chains: ['solana'],
    pricing: { model: 'per_call', price_usd: 0.002 },
    endpoint: 'http://127.0.0.1:9/skill',
    input_schema: TEXT_INPUT_SCHEMA,
    output_schema: TEXT_OUTPUT_SCHEMA,
    ...overrides,
  };
}

/** The answer of a healthy translator for an input valid against {@link TEXT_INPUT_SCHEMA}. */
export function translate(input: unknown): unknown {
  const i = input as { text: string; target_language: string };
  return { translation: `[${i.target_language}] ${i.text}`, language: i.target_language };
}

/** A made-up word (letters only, so full-text search keeps it whole) that no other test uses. */
export function uniqueWord(): string {
  const letters = Array.from({ length: 10 }, () => String.fromCharCode(97 + Math.floor(Math.random() * 26)));
  return `zq${letters.join('')}`;
}

/** A valid `POST /api/discover/register/mcp` body for the MCP server `serverId` at `url`; `overrides` replace top-level fields. */
export function buildMcpServer(
  serverId: string,
  url: string,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    server_id: serverId,
    url,
    provider: 'Local MCP provider',
    chains: [],
    pricing: { model: 'per_call', price_usd: 0.001 },
    ...overrides,
  };
}
