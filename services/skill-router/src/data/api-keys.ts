import type { PrismaDb } from './prisma';

/** A stored key as the auth middleware sees it. */
export interface StoredApiKey {
  id: string;
  name: string;
  prefix: string;
  keyHash: string;
}

/** What decides whether a key's call reports count (README, "Security"). */
export interface KeyStanding {
  createdAt: Date;
  /** When the key first got a route with matches; `null` if it never did. */
  firstRoutedAt: Date | null;
}

/** The `api_keys` table. Only hashes are stored. */
export class ApiKeyRepository {
  constructor(private readonly prisma: PrismaDb) {}

  /**
   * Stores a new key.
   * @returns the stored row (without any secret)
   */
  async create(input: { name: string; prefix: string; keyHash: string }): Promise<StoredApiKey> {
    return this.prisma.apiKey.create({
      data: input,
      select: { id: true, name: true, prefix: true, keyHash: true },
    });
  }

  /**
   * Records that a key got a route with matches (once: later calls change nothing). Its reports
   * count towards skills' metrics from then on, once it is a day old (README, "Security").
   */
  async markRouted(keyId: string): Promise<void> {
    await this.prisma.$executeRawUnsafe(
      'UPDATE api_keys SET first_routed_at = now() WHERE id = $1::uuid AND first_routed_at IS NULL',
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

  /** The age and routing history of the key with this id, or `null`. */
  async standing(keyId: string): Promise<KeyStanding | null> {
    return this.prisma.apiKey.findUnique({
      where: { id: keyId },
      select: { createdAt: true, firstRoutedAt: true },
    });
  }
}
