import type { PrismaDb } from './prisma';

/** A stored key as the auth middleware sees it. */
export interface StoredApiKey {
  id: string;
  name: string;
  prefix: string;
  keyHash: string;
}

/** What decides the weight of a key's call reports (README, "Reputation"). */
export interface KeyStanding {
  createdAt: Date;
  /** When the key first got a route with matches; `null` if it never did. */
  firstRoutedAt: Date | null;
  /** Distinct UTC days on which the key got a route with matches. */
  routedDays: number;
  /** The key's reporter cohort (creation day and network); `null` for keys older than cohorts. */
  cohort: string | null;
}

/** The `api_keys` table. Only hashes are stored. */
export class ApiKeyRepository {
  constructor(private readonly prisma: PrismaDb) {}

  /**
   * Stores a new key.
   * @param input.cohort the key's reporter cohort (domain/api-keys.ts `keyCohort`); without one
   *   (seeded keys) the key is a cohort of its own
   * @returns the stored row (without any secret)
   */
  async create(input: {
    name: string;
    prefix: string;
    keyHash: string;
    cohort?: string;
  }): Promise<StoredApiKey> {
    return this.prisma.apiKey.create({
      data: input,
      select: { id: true, name: true, prefix: true, keyHash: true },
    });
  }

  /**
   * Records that a key got a route with matches today (UTC): sets `first_routed_at` once and counts
   * each UTC day once in `routed_days` (later calls the same day change nothing). The routed days
   * are the history part of the weight of the key's reports (README, "Reputation").
   */
  async markRouted(keyId: string): Promise<void> {
    await this.prisma.$executeRawUnsafe(
      `UPDATE api_keys SET first_routed_at = COALESCE(first_routed_at, now()), routed_days = routed_days + 1,
              last_routed_on = (now() AT TIME ZONE 'UTC')::date
        WHERE id = $1::uuid AND last_routed_on IS DISTINCT FROM (now() AT TIME ZONE 'UTC')::date`,
      keyId,
    );
  }

  /** The key with this SHA-256 hash, or `null`. */
  async findByHash(keyHash: string): Promise<StoredApiKey | null> {
    return this.prisma.apiKey.findUnique({
      where: { keyHash },
      select: { id: true, name: true, prefix: true, keyHash: true },
    });
  }

  /** The age, routing history and cohort of the key with this id, or `null`. */
  async standing(keyId: string): Promise<KeyStanding | null> {
    return this.prisma.apiKey.findUnique({
      where: { id: keyId },
      select: { createdAt: true, firstRoutedAt: true, routedDays: true, cohort: true },
    });
  }
}
