import { AppError, notFound } from '@repo/errors';
import { BODY_PARSER_ERRORS, errorResponse, type ContractRouter } from '@repo/service-kit';
import { z } from 'zod';
import type { ProductRecord, ProductRepository } from '../../data/products';
import { signalFeedbackKeys } from '../../domain/api-keys';
import { SIGNAL_FEEDBACK_ERRORS } from '../../domain/errors';
import { PLAN_LIMITS } from '../../domain/plans';
import {
  CreatedProduct,
  CreateProductBody,
  DeletedProduct,
  ProductDetails,
  ProductSummary,
  RenameProductBody,
} from '../../schemas';
import { requiredSession } from './auth-middleware';
import { CSRF_HEADER_PARAMETER, SESSION_SECURITY } from './openapi';

/** What the product and context routes need. */
export interface ProductsDeps {
  products: ProductRepository;
  /** Called after a product's contexts or key changed in this process (drops its cached key lookup). */
  onContextsChanged?: (productId: string) => void;
}

/** Declares one operation of `productsRoutes` on `routes` (returned, for chaining). */
export type ProductsOperation = (routes: ContractRouter, deps: ProductsDeps) => ContractRouter;

function productToWire(p: ProductRecord): ProductSummary {
  return {
    id: p.id,
    name: p.name,
    api_key_prefix: p.apiKeyPrefix,
    context_count: p.contextCount,
    created_at: p.createdAt.toISOString(),
  };
}

const ProductIdParams = z.object({ id: z.uuid().meta({ description: "one of the user's products" }) });

/** The errors of a session write to one product. */
const PRODUCT_WRITE_ERRORS = {
  '400': errorResponse('invalid id'),
  '401': errorResponse('not signed in'),
  '403': errorResponse('CSRF check failed'),
  '404': errorResponse('no such product of the user'),
};

/** POST /api/products: a product with its `spk_` key, shown once, within the plan's product limit. */
function createProduct(routes: ContractRouter, deps: ProductsDeps): ContractRouter {
  return routes.route(
    {
      method: 'post',
      path: '/api/products',
      operationId: 'createProduct',
      summary: 'Create a product; the spk_ key is returned this once',
      tags: ['Products'],
      security: SESSION_SECURITY,
      request: { body: CreateProductBody, headers: [CSRF_HEADER_PARAMETER] },
      responses: {
        '200': { description: 'the product with its key', body: CreatedProduct },
        '400': errorResponse('invalid name'),
        ...BODY_PARSER_ERRORS,
        '401': errorResponse('not signed in'),
        '403': errorResponse(
          'product limit of the plan reached (code product_limit_reached) or CSRF check failed (csrf_failed)',
        ),
      },
    },
    async (_req, res) => {
      const { body } = res.locals.valid;
      const u = requiredSession(res).user;
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
        throw new AppError(
          SIGNAL_FEEDBACK_ERRORS.product_limit_reached,
          `The ${u.plan} plan allows ${maxProducts} product(s)`,
          {
            details: { plan: u.plan, limit: maxProducts },
          },
        );
      }
      res.setHeader('cache-control', 'no-store');
      res.json({ id: created.id, name: created.name, api_key: key.key });
    },
  );
}

/** POST /api/products/{id}/rotate-key: a new key, shown once; the old one stops working. */
function rotateProductKey(routes: ContractRouter, deps: ProductsDeps): ContractRouter {
  return routes.route(
    {
      method: 'post',
      path: '/api/products/{id}/rotate-key',
      operationId: 'rotateProductKey',
      summary:
        "Replace a product's spk_ key: the new key is returned this once and the old one stops working",
      tags: ['Products'],
      security: SESSION_SECURITY,
      request: { params: ProductIdParams, headers: [CSRF_HEADER_PARAMETER] },
      responses: {
        '200': { description: 'the product with its new key', body: CreatedProduct },
        ...PRODUCT_WRITE_ERRORS,
      },
    },
    async (_req, res) => {
      const { params } = res.locals.valid;
      const key = signalFeedbackKeys.generate();
      const u = requiredSession(res).user;
      const product = await deps.products.findForUser(u.id, params.id);
      if (!product || !(await deps.products.rotateKey(u.id, params.id, key.hash, key.displayPrefix)))
        throw notFound('product');
      deps.onContextsChanged?.(params.id);
      res.setHeader('cache-control', 'no-store');
      res.json({ id: product.id, name: product.name, api_key: key.key });
    },
  );
}

/** GET /api/products/{id}: the product with what deleting it would remove. */
function getProduct(routes: ContractRouter, deps: ProductsDeps): ContractRouter {
  return routes.route(
    {
      method: 'get',
      path: '/api/products/{id}',
      operationId: 'getProduct',
      summary: 'One product with what it holds (what deleting it would remove)',
      tags: ['Products'],
      security: SESSION_SECURITY,
      request: { params: ProductIdParams },
      responses: {
        '200': { description: 'the product and its contents', body: ProductDetails },
        '400': errorResponse('invalid id'),
        '401': errorResponse('not signed in'),
        '404': errorResponse('no such product of the user'),
      },
    },
    async (_req, res) => {
      const { params } = res.locals.valid;
      const u = requiredSession(res).user;
      const product = await deps.products.findForUser(u.id, params.id);
      const contents = product && (await deps.products.contents(u.id, params.id));
      if (!product || !contents) throw notFound('product');
      res.json({ ...productToWire(product), contents });
    },
  );
}

/** PATCH /api/products/{id}: a new name; the key stays. */
function renameProduct(routes: ContractRouter, deps: ProductsDeps): ContractRouter {
  return routes.route(
    {
      method: 'patch',
      path: '/api/products/{id}',
      operationId: 'renameProduct',
      summary: 'Rename a product (its key stays)',
      tags: ['Products'],
      security: SESSION_SECURITY,
      request: { params: ProductIdParams, body: RenameProductBody, headers: [CSRF_HEADER_PARAMETER] },
      responses: {
        '200': { description: 'the renamed product', body: ProductSummary },
        '400': errorResponse('invalid id or name'),
        ...BODY_PARSER_ERRORS,
        '401': errorResponse('not signed in'),
        '403': errorResponse('CSRF check failed'),
        '404': errorResponse('no such product of the user'),
      },
    },
    async (_req, res) => {
      const { params, body } = res.locals.valid;
      const renamed = await deps.products.rename(requiredSession(res).user.id, params.id, body.name);
      if (!renamed) throw notFound('product');
      res.json(productToWire(renamed));
    },
  );
}

/** DELETE /api/products/{id}: the product with everything it holds. */
function deleteProduct(routes: ContractRouter, deps: ProductsDeps): ContractRouter {
  return routes.route(
    {
      method: 'delete',
      path: '/api/products/{id}',
      operationId: 'deleteProduct',
      summary:
        'Delete a product with its key, contexts, signals, proposals and deployments; its key stops working at once on every replica',
      description: "The month's usage counters stay: deleting a product gives no quota back.",
      tags: ['Products'],
      security: SESSION_SECURITY,
      request: { params: ProductIdParams, headers: [CSRF_HEADER_PARAMETER] },
      responses: {
        '200': { description: 'what was deleted', body: DeletedProduct },
        ...PRODUCT_WRITE_ERRORS,
      },
    },
    async (_req, res) => {
      const { params } = res.locals.valid;
      const deleted = await deps.products.delete(requiredSession(res).user.id, params.id);
      if (!deleted) throw notFound('product');
      deps.onContextsChanged?.(params.id);
      res.json({ id: params.id, deleted: true, contents: deleted });
    },
  );
}

/** GET /api/products: the user's products, key prefixes only. */
function listProducts(routes: ContractRouter, deps: ProductsDeps): ContractRouter {
  return routes.route(
    {
      method: 'get',
      path: '/api/products',
      operationId: 'listProducts',
      summary: "The user's products (key prefix only)",
      tags: ['Products'],
      security: SESSION_SECURITY,
      responses: {
        '200': { description: 'products', body: z.array(ProductSummary) },
        '401': errorResponse('not signed in'),
      },
    },
    async (_req, res) => {
      res.json((await deps.products.listForUser(requiredSession(res).user.id)).map(productToWire));
    },
  );
}

/**
 * The session endpoints of products (README, "Endpoints" and "API keys"), in the order they are
 * mounted: create, rotate the key, read, rename, delete, list.
 */
export const PRODUCT_OPERATIONS: readonly ProductsOperation[] = [
  createProduct,
  rotateProductKey,
  getProduct,
  renameProduct,
  deleteProduct,
  listProducts,
];
