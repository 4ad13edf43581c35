import { createHash } from 'node:crypto';

/**
 * What a skill's verification reviews and pins (README, "Pinned definitions"): the endpoint, the
 * description, the pricing and both schemas. Name, provider, capabilities and chains are directory
 * metadata, not part of the pinned definition.
 */
export interface SkillDefinition {
  endpoint: string;
  description: string;
  /** `price_usd` in USD per call; `pay_to` the Solana USDC token account paid, when declared. */
  pricing: { model: string; price_usd: number; pay_to?: string };
  input_schema: Record<string, unknown>;
  output_schema: Record<string, unknown>;
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
  };
}

/**
 * The JSON Canonicalization Scheme (RFC 8785) of a JSON value: object members sorted by the UTF-16
 * code units of their names, no whitespace, strings and numbers as ECMAScript's `JSON.stringify`
 * writes them (which is what RFC 8785 prescribes). Written here because the npm `canonicalize` package
 * is ESM only, which jest cannot load on Node 20.
 * @param value a value that came from JSON (objects, arrays, strings, finite numbers, booleans, null)
 * @throws TypeError for a value JSON cannot carry (a non-finite number, `undefined`, a function, a bigint)
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('canonical JSON has no non-finite numbers');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    // Default sort compares UTF-16 code units, as RFC 8785 requires.
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  throw new TypeError(`canonical JSON cannot carry a ${typeof value}`);
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
