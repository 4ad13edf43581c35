import { z } from 'zod';
import { SectorTag } from '@repo/schemas';

/**
 * `network` query parameter accepted on every endpoint (services/market-intel/README.md, "Endpoints"):
 * `devnet` selects the test network; absent means the main network. `solana`/`solana-devnet`/`mainnet`
 * are accepted as aliases; anything else is a 400.
 */
export const NetworkParam = z.enum(['devnet', 'solana-devnet', 'mainnet', 'solana']).optional().meta({
  description:
    '`devnet` selects the test network (its USDC mint and merchant account); default the main network',
});

/** `sector` query parameter: a sector tag; omitted, every sector is merged. */
const SectorParam = SectorTag.optional().meta({
  description: 'sector tag (see /api/v1/sectors); omitted: every sector merged',
});

/**
 * An integer query parameter within `[min, max]` with a default, e.g. `limit`: digits only on the
 * wire (the input side, published in the x402 discovery metadata), an integer once parsed (the output
 * side, documented in the OpenAPI document with its range and default). The default is applied
 * before the range check, so the final schema of the chain is the integer one.
 */
export function intParam(min: number, max: number, defaultValue: number) {
  return z
    .string()
    .regex(/^[0-9]+$/, `must be an integer from ${min} to ${max}`)
    .optional()
    .transform((v) => (v === undefined ? defaultValue : Number(v)))
    .pipe(z.number().int().min(min).max(max).meta({ default: defaultValue }));
}

/** Query of gaps and pain-clusters: `sector`, `limit` 1–100 (default 20). */
export const SectorLimitQuery = z.object({
  sector: SectorParam,
  limit: intParam(1, 100, 20),
  network: NetworkParam,
});

/** Query of trends: `sector`, `days` 1–30 (default 7), `limit` 1–100 (default 20). */
export const TrendsQuery = z.object({
  sector: SectorParam,
  days: intParam(1, 30, 7),
  limit: intParam(1, 100, 20),
  network: NetworkParam,
});

/** Query of keywords: `sector`, `limit` 1–200 (default 50). */
export const KeywordsQuery = z.object({
  sector: SectorParam,
  limit: intParam(1, 200, 50),
  network: NetworkParam,
});

/** Query of endpoints that take only `network`. */
export const NetworkOnlyQuery = z.object({ network: NetworkParam });
