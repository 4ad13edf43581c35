import { z } from 'zod';
import { base58ByteLength } from './domain/payment-proofs';
import { schemaLimitProblem } from './domain/schema-limits';

/**
 * The building blocks of skill-router's wire schemas (src/schemas.ts, services/skill-router/README.md,
 * "Endpoints"): ids, tags, addresses, JSON Schema documents and paging.
 */

/** An id usable in a URL path: letters, digits, `.`, `_`, `:`, `-`; 1–128 characters. */
export const SkillId = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/,
    'must be 1-128 characters: letters, digits, ".", "_", ":", "-", starting with a letter or digit',
  );

/** A tag (capability, category or chain): trimmed, 1–64 characters, not blank, lowercased; `what` names it in errors. */
export const tag = (what: string) =>
  z
    .string()
    .trim()
    .min(1, `${what} must not be empty`)
    .max(64)
    // Redundant after trim and min(1), but it documents "not blank" in the OpenAPI parameter.
    .regex(/\S/, `${what} must not be blank`)
    .transform((s) => s.toLowerCase());

/** A Solana address (base58 of a 32-byte public key), such as a USDC token account. */
export const SolanaAddress = z
  .string()
  .regex(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/, 'must be a base58 Solana address')
  // The length bound first: decoding is quadratic in the length.
  .refine((s) => s.length <= 44 && base58ByteLength(s) === 32, 'must be a base58 Solana address of 32 bytes');

/**
 * A JSON Schema document: an object within the size and depth limits (services/skill-router/README.md,
 * "Security"); whether it is a valid schema is the schema_validation step's job, in the sandbox.
 */
export const JsonSchemaObject = z.record(z.string(), z.unknown()).superRefine((schema, ctx) => {
  const problem = schemaLimitProblem(schema);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/** How many items a listing page skips: 0–1,000,000. */
const PAGE_OFFSET = z.number().int().min(0).max(1_000_000);

/** A query-string integer: digits only (`message` otherwise), then checked against `range`. */
export const queryInteger = (range: z.ZodNumber, message: string) =>
  z
    .string()
    .regex(/^[0-9]+$/, message)
    .transform(Number)
    .pipe(range);

/**
 * The `limit` and `offset` of a paged listing, as query parameters of the HTTP route (`query`:
 * digit strings, see {@link queryInteger}) and as arguments of its MCP tool (`args`: JSON numbers),
 * with the same bounds, defaults and descriptions.
 * @param limit the page size's upper bound (`max`, the lower is 1) and the size when none is given
 *   (`default`)
 * @param skipped what `offset` counts, plural ("skills")
 */
export function paging(limit: { max: number; default: number }, skipped: string) {
  const range = z.number().int().min(1).max(limit.max);
  const limitMeta = { description: 'page size' };
  const offsetMeta = { description: `${skipped} to skip` };
  return {
    query: {
      limit: queryInteger(range, `must be an integer from 1 to ${limit.max}`)
        .default(limit.default)
        .meta(limitMeta),
      offset: queryInteger(PAGE_OFFSET, 'must be a non-negative integer').default(0).meta(offsetMeta),
    },
    args: {
      limit: range.default(limit.default).meta(limitMeta),
      offset: PAGE_OFFSET.default(0).meta(offsetMeta),
    },
  };
}
