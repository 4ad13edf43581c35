import type { Prisma } from '../generated/prisma/client';
import type { Db } from './prisma';

/** A product without its key. */
export interface ProductRecord {
  id: string;
  userId: string;
  name: string;
  apiKeyPrefix: string;
  contextCount: number;
  createdAt: Date;
}

/** A context as stored. */
export interface ContextRecord {
  id: string;
  productId: string;
  name: string;
  content: string;
  positiveSignals: string[];
  negativeSignals: string[];
  createdAt: Date;
  updatedAt: Date;
}

/** Fields of a context that PATCH may change. */
export interface ContextChanges {
  name?: string;
  content?: string;
  positiveSignals?: string[];
  negativeSignals?: string[];
}

/**
 * The notification channel on which a product's id is sent when its key stops working (rotated, or the
 * product deleted), in the transaction that changes it: every replica's key cache drops the entry.
 */
export const KEY_CHANGES_CHANNEL = 'signal_feedback_keys';

/** What a product holds, as its deletion would remove it. */
export interface ProductContents {
  contexts: number;
  signals: number;
  proposals: number;
  deployments: number;
}

/** Products and contexts, always scoped to their owner. */
export class ProductRepository {
  /** @param db the Prisma client */
  constructor(private readonly db: Db) {}

  /**
   * Creates a product unless the user already owns `maxProducts` (serialised per user with a row lock on
   * the user, so concurrent creations cannot exceed the limit).
   * @param maxProducts the plan's product limit; null: unlimited
   * @returns the product, or `limit_reached`
   */
  async createWithinLimit(args: {
    userId: string;
    name: string;
    apiKeyHash: string;
    apiKeyPrefix: string;
    maxProducts: number | null;
  }): Promise<ProductRecord | 'limit_reached'> {
    return this.db.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT id FROM users WHERE id = ${args.userId}::uuid FOR UPDATE`;
      if (args.maxProducts !== null) {
        const owned = await tx.product.count({ where: { userId: args.userId } });
        if (owned >= args.maxProducts) return 'limit_reached' as const;
      }
      const p = await tx.product.create({
        data: {
          userId: args.userId,
          name: args.name,
          apiKeyHash: args.apiKeyHash,
          apiKeyPrefix: args.apiKeyPrefix,
        },
      });
      return {
        id: p.id,
        userId: p.userId,
        name: p.name,
        apiKeyPrefix: p.apiKeyPrefix,
        contextCount: 0,
        createdAt: p.createdAt,
      };
    });
  }

  /**
   * Replaces a product's key (the old one stops working).
   * @returns false when the user has no such product
   */
  async rotateKey(
    userId: string,
    productId: string,
    apiKeyHash: string,
    apiKeyPrefix: string,
  ): Promise<boolean> {
    return this.db.$transaction(async (tx) => {
      const r = await tx.product.updateMany({
        where: { id: productId, userId },
        data: { apiKeyHash, apiKeyPrefix },
      });
      if (r.count !== 1) return false;
      await tx.$executeRaw`SELECT pg_notify(${KEY_CHANGES_CHANNEL}, ${productId})`;
      return true;
    });
  }

  /**
   * Renames a product.
   * @returns the renamed product; undefined when the user has no such product
   */
  async rename(userId: string, productId: string, name: string): Promise<ProductRecord | undefined> {
    const r = await this.db.product.updateMany({ where: { id: productId, userId }, data: { name } });
    if (r.count !== 1) return undefined;
    return this.findForUser(userId, productId);
  }

  /** One of the user's products; undefined when the user has no such product. */
  async findForUser(userId: string, productId: string): Promise<ProductRecord | undefined> {
    return (await this.productsOf({ userId, id: productId }))[0];
  }

  /**
   * What a product of the user holds (what deleting it removes).
   * @returns undefined when the user has no such product
   */
  async contents(userId: string, productId: string): Promise<ProductContents | undefined> {
    return countContents(this.db, userId, productId);
  }

  /**
   * Deletes a product with its key, contexts, signals, proposals and deployments, and tells every
   * replica (key cache) in the same transaction. The monthly usage counters stay: deleting does not
   * give quota back.
   * @returns what was deleted; undefined when the user has no such product
   */
  async delete(userId: string, productId: string): Promise<ProductContents | undefined> {
    return this.db.$transaction(async (tx) => {
      const locked = await tx.$queryRaw<unknown[]>`
        SELECT 1 FROM products WHERE id = ${productId}::uuid AND user_id = ${userId}::uuid FOR UPDATE`;
      if (locked.length === 0) return undefined;
      const contents = await countContents(tx, userId, productId);
      await tx.product.delete({ where: { id: productId } });
      await tx.$executeRaw`SELECT pg_notify(${KEY_CHANGES_CHANNEL}, ${productId})`;
      return contents;
    });
  }

  /** The user's products, oldest first. */
  async listForUser(userId: string): Promise<ProductRecord[]> {
    return this.productsOf({ userId });
  }

  private async productsOf(where: { userId: string; id?: string }): Promise<ProductRecord[]> {
    const rows = await this.db.product.findMany({
      where,
      orderBy: { createdAt: 'asc' },
      include: { _count: { select: { contexts: true } } },
    });
    return rows.map((p) => ({
      id: p.id,
      userId: p.userId,
      name: p.name,
      apiKeyPrefix: p.apiKeyPrefix,
      contextCount: p._count.contexts,
      createdAt: p.createdAt,
    }));
  }

  /** Whether the user owns the product. */
  async ownsProduct(userId: string, productId: string): Promise<boolean> {
    return (await this.db.product.count({ where: { id: productId, userId } })) === 1;
  }

  /** Creates a context in a product (ownership checked by the caller). */
  async createContext(args: {
    productId: string;
    name: string;
    content: string;
    positiveSignals: string[];
    negativeSignals: string[];
  }): Promise<ContextRecord> {
    return this.db.context.create({ data: args, select: CONTEXT_FIELDS });
  }

  /** Every context of every product of the user, oldest first. */
  async listContexts(userId: string): Promise<ContextRecord[]> {
    return this.db.context.findMany({
      where: { product: { userId } },
      orderBy: { createdAt: 'asc' },
      select: CONTEXT_FIELDS,
    });
  }

  /** One of the user's contexts. */
  async findContext(userId: string, id: string): Promise<ContextRecord | undefined> {
    return (
      (await this.db.context.findFirst({ where: { id, product: { userId } }, select: CONTEXT_FIELDS })) ??
      undefined
    );
  }

  /**
   * Changes one of the user's contexts.
   * @returns the updated context, or undefined when the user has no such context
   */
  async updateContext(
    userId: string,
    id: string,
    changes: ContextChanges,
  ): Promise<ContextRecord | undefined> {
    const r = await this.db.context.updateMany({ where: { id, product: { userId } }, data: changes });
    return r.count === 1 ? this.findContext(userId, id) : undefined;
  }

  /**
   * Deletes one of the user's contexts (its proposals go with it; its signals stay, unrouted).
   * @returns false when the user has no such context
   */
  async deleteContext(userId: string, id: string): Promise<boolean> {
    const r = await this.db.context.deleteMany({ where: { id, product: { userId } } });
    return r.count === 1;
  }
}

const CONTEXT_FIELDS = {
  id: true,
  productId: true,
  name: true,
  content: true,
  positiveSignals: true,
  negativeSignals: true,
  createdAt: true,
  updatedAt: true,
} as const;

/**
 * What a product of the user holds, counted on the client or transaction given; undefined when the
 * user has no such product.
 */
async function countContents(
  db: Db | Prisma.TransactionClient,
  userId: string,
  productId: string,
): Promise<ProductContents | undefined> {
  const rows = await db.$queryRaw<ProductContents[]>`
    SELECT (SELECT count(*) FROM contexts WHERE product_id = p.id)::int AS contexts,
           (SELECT count(*) FROM signals WHERE product_id = p.id)::int AS signals,
           (SELECT count(*) FROM proposals WHERE product_id = p.id)::int AS proposals,
           (SELECT count(*) FROM deployments d JOIN proposals x ON x.id = d.proposal_id
             WHERE x.product_id = p.id)::int AS deployments
      FROM products p WHERE p.id = ${productId}::uuid AND p.user_id = ${userId}::uuid`;
  return rows[0];
}
