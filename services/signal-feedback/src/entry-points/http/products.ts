import { Router } from 'express';
import { AppError, notFound } from '@repo/errors';
import { validate, validated } from '@repo/service-kit';
import { z } from 'zod';
import type { ContextRecord, ProductRepository } from '../../data/products';
import { signalFeedbackKeys } from '../../domain/api-keys';
import { PLAN_LIMITS } from '../../domain/plans';
import {
  ContextIdQuery,
  CreateContextBody,
  CreateProductBody,
  UpdateContextBody,
  type Context,
} from '../../schemas';
import { requireSession } from './auth-middleware';
import type { SessionRecord } from '../../data/accounts';

function contextToWire(c: ContextRecord): Context {
  return {
    id: c.id,
    product_id: c.productId,
    name: c.name,
    content: c.content,
    positive_signals: c.positiveSignals,
    negative_signals: c.negativeSignals,
    created_at: c.createdAt.toISOString(),
    updated_at: c.updatedAt.toISOString(),
  };
}

/** A type may not be both a success and a failure. */
function checkLists(positive: string[] | undefined, negative: string[] | undefined): void {
  const both = (positive ?? []).filter((t) => (negative ?? []).includes(t));
  if (both.length > 0) {
    throw new AppError(
      'invalid_request',
      `Signal types listed as both positive and negative: ${both.join(', ')}`,
      {
        details: both.map((t) => ({
          path: 'body.negative_signals',
          message: `${t} is also in positive_signals`,
        })),
      },
    );
  }
}

const ProductIdParams = z.object({ id: z.uuid() });

const unique = (list: string[] | undefined) => (list ? [...new Set(list)] : undefined);

/**
 * Session endpoints for products and contexts (README, "Endpoints"): POST/GET /api/products,
 * POST /api/products/{id}/rotate-key (a new key, shown once; the old one stops working) and
 * POST/GET/PATCH/DELETE /api/context. A user sees and changes only their own (others' are 404).
 */
export function productsRouter(deps: {
  products: ProductRepository;
  /** Called after a product's contexts or key changed in this process (drops its cached key lookup). */
  onContextsChanged?: (productId: string) => void;
}): Router {
  const router = Router();
  router.use(['/products', '/context'], requireSession);
  const user = (locals: Record<string, unknown>) => (locals.session as SessionRecord).user;

  router.post('/products', validate({ body: CreateProductBody }), async (_req, res) => {
    const { body } = validated<unknown, unknown, z.infer<typeof CreateProductBody>>(res.locals);
    const u = user(res.locals);
    const key = signalFeedbackKeys.generate();
    const maxProducts = PLAN_LIMITS[u.plan].products;
    const created = await deps.products.createWithinLimit({
      userId: u.id,
      name: body.name,
      apiKeyHash: key.hash,
      apiKeyPrefix: key.displayPrefix,
      maxProducts,
    });
    if (created === 'limit_reached') {
      throw new AppError('product_limit_reached', `The ${u.plan} plan allows ${maxProducts} product(s)`, {
        details: { plan: u.plan, limit: maxProducts },
      });
    }
    res.setHeader('cache-control', 'no-store');
    res.json({ id: created.id, name: created.name, api_key: key.key });
  });

  router.post('/products/:id/rotate-key', validate({ params: ProductIdParams }), async (_req, res) => {
    const { params } = validated<unknown, z.infer<typeof ProductIdParams>>(res.locals);
    const key = signalFeedbackKeys.generate();
    const u = user(res.locals);
    const products = await deps.products.listForUser(u.id);
    const product = products.find((p) => p.id === params.id);
    if (!product || !(await deps.products.rotateKey(u.id, params.id, key.hash, key.displayPrefix)))
      throw notFound('product');
    deps.onContextsChanged?.(params.id);
    res.setHeader('cache-control', 'no-store');
    res.json({ id: product.id, name: product.name, api_key: key.key });
  });

  router.get('/products', async (_req, res) => {
    const list = await deps.products.listForUser(user(res.locals).id);
    res.json(
      list.map((p) => ({
        id: p.id,
        name: p.name,
        api_key_prefix: p.apiKeyPrefix,
        context_count: p.contextCount,
        created_at: p.createdAt.toISOString(),
      })),
    );
  });

  router.post('/context', validate({ body: CreateContextBody }), async (_req, res) => {
    const { body } = validated<unknown, unknown, z.infer<typeof CreateContextBody>>(res.locals);
    const u = user(res.locals);
    checkLists(body.positive_signals, body.negative_signals);
    if (!(await deps.products.ownsProduct(u.id, body.product_id))) throw notFound('product');
    const c = await deps.products.createContext({
      productId: body.product_id,
      name: body.name,
      content: body.content,
      positiveSignals: unique(body.positive_signals) ?? [],
      negativeSignals: unique(body.negative_signals) ?? [],
    });
    deps.onContextsChanged?.(c.productId);
    res.status(201).json(contextToWire(c));
  });

  router.get('/context', async (_req, res) => {
    res.json((await deps.products.listContexts(user(res.locals).id)).map(contextToWire));
  });

  router.patch('/context', validate({ body: UpdateContextBody }), async (_req, res) => {
    const { body } = validated<unknown, unknown, z.infer<typeof UpdateContextBody>>(res.locals);
    const u = user(res.locals);
    const existing = await deps.products.findContext(u.id, body.id);
    if (!existing) throw notFound('context');
    checkLists(
      body.positive_signals ?? existing.positiveSignals,
      body.negative_signals ?? existing.negativeSignals,
    );
    const updated = await deps.products.updateContext(u.id, body.id, {
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(body.content !== undefined ? { content: body.content } : {}),
      ...(body.positive_signals !== undefined ? { positiveSignals: unique(body.positive_signals) } : {}),
      ...(body.negative_signals !== undefined ? { negativeSignals: unique(body.negative_signals) } : {}),
    });
    if (!updated) throw notFound('context');
    deps.onContextsChanged?.(updated.productId);
    res.json(contextToWire(updated));
  });

  router.delete('/context', validate({ query: ContextIdQuery }), async (_req, res) => {
    const { query } = validated<z.infer<typeof ContextIdQuery>>(res.locals);
    const existing = await deps.products.findContext(user(res.locals).id, query.id);
    if (!existing || !(await deps.products.deleteContext(user(res.locals).id, query.id)))
      throw notFound('context');
    deps.onContextsChanged?.(existing.productId);
    res.json({ id: query.id, deleted: true });
  });

  return router;
}
