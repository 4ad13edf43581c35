import { AppError, notFound } from '@repo/errors';
import {
  BODY_PARSER_ERRORS,
  contractRouter,
  errorResponse,
  validated,
  type ContractRouter,
} from '@repo/service-kit';
import { z } from 'zod';
import type { ContextRecord, ProductRecord, ProductRepository } from '../../data/products';
import { signalFeedbackKeys } from '../../domain/api-keys';
import { PLAN_LIMITS } from '../../domain/plans';
import {
  Context,
  ContextIdQuery,
  CreateContextBody,
  CreatedProduct,
  CreateProductBody,
  DeletedProduct,
  ProductDetails,
  ProductSummary,
  RenameProductBody,
  UpdateContextBody,
} from '../../schemas';
import { requireSession } from './auth-middleware';
import type { SessionRecord } from '../../data/accounts';
import { CSRF_HEADER_PARAMETER, SESSION_SECURITY } from './openapi';
import { SIGNAL_FEEDBACK_ERRORS } from '../../domain/errors';

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

function productToWire(p: ProductRecord): ProductSummary {
  return {
    id: p.id,
    name: p.name,
    api_key_prefix: p.apiKeyPrefix,
    context_count: p.contextCount,
    created_at: p.createdAt.toISOString(),
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

const ProductIdParams = z.object({ id: z.uuid().meta({ description: "one of the user's products" }) });

/** The errors of a session write to one product. */
const PRODUCT_WRITE_ERRORS = {
  '400': errorResponse('invalid id'),
  '401': errorResponse('not signed in'),
  '403': errorResponse('CSRF check failed'),
  '404': errorResponse('no such product of the user'),
};

const unique = (list: string[] | undefined) => (list ? [...new Set(list)] : undefined);

/**
 * Session endpoints for products and contexts (README, "Endpoints" and "API keys"): POST/GET
 * /api/products, GET/PATCH/DELETE /api/products/{id} (what it holds, rename, delete with everything it
 * holds), POST /api/products/{id}/rotate-key (a new key, shown once; the old one stops working) and
 * POST/GET/PATCH/DELETE /api/context. A user sees and changes only their own (others' are 404).
 * Every path below /api/products and /api/context needs a session (401 `unauthorized`), an unknown
 * one too: the check runs before any route of the router.
 */
export function productsRoutes(deps: {
  products: ProductRepository;
  /** Called after a product's contexts or key changed in this process (drops its cached key lookup). */
  onContextsChanged?: (productId: string) => void;
}): ContractRouter {
  const routes = contractRouter();
  routes.router.use(['/api/products', '/api/context'], requireSession);
  const user = (locals: Record<string, unknown>) => (locals.session as SessionRecord).user;

  return routes
    .route(
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
    )
    .route(
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
        const { params } = validated<unknown, z.infer<typeof ProductIdParams>>(res.locals);
        const key = signalFeedbackKeys.generate();
        const u = user(res.locals);
        const product = await deps.products.findForUser(u.id, params.id);
        if (!product || !(await deps.products.rotateKey(u.id, params.id, key.hash, key.displayPrefix)))
          throw notFound('product');
        deps.onContextsChanged?.(params.id);
        res.setHeader('cache-control', 'no-store');
        res.json({ id: product.id, name: product.name, api_key: key.key });
      },
    )
    .route(
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
        const { params } = validated<unknown, z.infer<typeof ProductIdParams>>(res.locals);
        const u = user(res.locals);
        const product = await deps.products.findForUser(u.id, params.id);
        const contents = product && (await deps.products.contents(u.id, params.id));
        if (!product || !contents) throw notFound('product');
        res.json({ ...productToWire(product), contents });
      },
    )
    .route(
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
        const { params, body } = validated<
          unknown,
          z.infer<typeof ProductIdParams>,
          z.infer<typeof RenameProductBody>
        >(res.locals);
        const renamed = await deps.products.rename(user(res.locals).id, params.id, body.name);
        if (!renamed) throw notFound('product');
        res.json(productToWire(renamed));
      },
    )
    .route(
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
        const { params } = validated<unknown, z.infer<typeof ProductIdParams>>(res.locals);
        const deleted = await deps.products.delete(user(res.locals).id, params.id);
        if (!deleted) throw notFound('product');
        deps.onContextsChanged?.(params.id);
        res.json({ id: params.id, deleted: true, contents: deleted });
      },
    )
    .route(
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
        res.json((await deps.products.listForUser(user(res.locals).id)).map(productToWire));
      },
    )
    .route(
      {
        method: 'post',
        path: '/api/context',
        operationId: 'createContext',
        summary: "Create a context in one of the user's products",
        tags: ['Contexts'],
        security: SESSION_SECURITY,
        request: { body: CreateContextBody, headers: [CSRF_HEADER_PARAMETER] },
        responses: {
          '201': { description: 'the created context', body: Context },
          '400': errorResponse('invalid body'),
          ...BODY_PARSER_ERRORS,
          '401': errorResponse('not signed in'),
          '403': errorResponse('CSRF check failed'),
          '404': errorResponse('no such product of the user'),
        },
      },
      async (_req, res) => {
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
      },
    )
    .route(
      {
        method: 'get',
        path: '/api/context',
        operationId: 'listContexts',
        summary: "All contexts of the user's products",
        tags: ['Contexts'],
        security: SESSION_SECURITY,
        responses: {
          '200': { description: 'contexts', body: z.array(Context) },
          '401': errorResponse('not signed in'),
        },
      },
      async (_req, res) => {
        res.json((await deps.products.listContexts(user(res.locals).id)).map(contextToWire));
      },
    )
    .route(
      {
        method: 'patch',
        path: '/api/context',
        operationId: 'updateContext',
        summary: "Change fields of one of the user's contexts",
        tags: ['Contexts'],
        security: SESSION_SECURITY,
        request: { body: UpdateContextBody, headers: [CSRF_HEADER_PARAMETER] },
        responses: {
          '200': { description: 'the updated context', body: Context },
          '400': errorResponse('invalid body'),
          ...BODY_PARSER_ERRORS,
          '401': errorResponse('not signed in'),
          '403': errorResponse('CSRF check failed'),
          '404': errorResponse('no such context of the user'),
        },
      },
      async (_req, res) => {
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
      },
    )
    .route(
      {
        method: 'delete',
        path: '/api/context',
        operationId: 'deleteContext',
        summary: "Delete one of the user's contexts with its proposals (its signals stay, unrouted)",
        tags: ['Contexts'],
        security: SESSION_SECURITY,
        request: { query: ContextIdQuery, headers: [CSRF_HEADER_PARAMETER] },
        responses: {
          '200': { description: 'deleted', body: z.object({ id: z.uuid(), deleted: z.literal(true) }) },
          '400': errorResponse('invalid id'),
          '401': errorResponse('not signed in'),
          '403': errorResponse('CSRF check failed'),
          '404': errorResponse('no such context of the user'),
        },
      },
      async (_req, res) => {
        const { query } = validated<z.infer<typeof ContextIdQuery>>(res.locals);
        const existing = await deps.products.findContext(user(res.locals).id, query.id);
        if (!existing || !(await deps.products.deleteContext(user(res.locals).id, query.id)))
          throw notFound('context');
        deps.onContextsChanged?.(existing.productId);
        res.json({ id: query.id, deleted: true });
      },
    );
}
