import { z } from 'zod';
import { SectorTag } from '@repo/schemas';

/**
 * `network` query parameter accepted on every endpoint (market-intel spec, "Endpoints"): `devnet`
 * selects the test network; absent means the main network. `solana`/`solana-devnet`/`mainnet` are
 * accepted as aliases; anything else is a 400.
 */
export const NetworkParam = z.enum(['devnet', 'solana-devnet', 'mainnet', 'solana']).optional();

/** An integer query parameter within `[min, max]` with a default, e.g. `limit`. */
export function intParam(min: number, max: number, defaultValue: number) {
  return z
    .string()
    .regex(/^[0-9]+$/, `must be an integer from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .optional()
    .transform((v) => v ?? defaultValue);
}

/** Query of gaps and pain-clusters: `sector`, `limit` 1–100 (default 20). */
export const SectorLimitQuery = z.object({
  sector: SectorTag.optional(),
  limit: intParam(1, 100, 20),
  network: NetworkParam,
});

/** Query of trends: `sector`, `days` 1–30 (default 7), `limit` 1–100 (default 20). */
export const TrendsQuery = z.object({
  sector: SectorTag.optional(),
  days: intParam(1, 30, 7),
  limit: intParam(1, 100, 20),
  network: NetworkParam,
});

/** Query of keywords: `sector`, `limit` 1–200 (default 50). */
export const KeywordsQuery = z.object({
  sector: SectorTag.optional(),
  limit: intParam(1, 200, 50),
  network: NetworkParam,
});

/** Query of endpoints that take only `network`. */
export const NetworkOnlyQuery = z.object({ network: NetworkParam });
