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
    const r = await this.db.product.updateMany({
      where: { id: productId, userId },
      data: { apiKeyHash, apiKeyPrefix },
    });
    return r.count === 1;
  }

  /** The user's products, oldest first. */
  async listForUser(userId: string): Promise<ProductRecord[]> {
    const rows = await this.db.product.findMany({
      where: { userId },
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
