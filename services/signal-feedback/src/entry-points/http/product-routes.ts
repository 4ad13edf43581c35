import { AppError, notFound, validationError } from '@repo/errors';
import { checkUrl, type LookupFunction, type SsrfPolicy } from '@repo/ssrf-guard';
import {
  errorResponse,
  type ContractHandler,
  type ContractRouter,
  type RouteContract,
} from '@repo/service-kit';
import type { Response } from 'express';
import { z } from 'zod';
import type { ProductRecord, ProductRepository } from '../../data/products';
import type { WebhookRepository } from '../../data/webhooks';
import { signalFeedbackKeys } from '../../domain/api-keys';
import { SIGNAL_FEEDBACK_ERRORS } from '../../domain/errors';
import { PLAN_LIMITS } from '../../domain/plans';
import { generateWebhookSecret, WEBHOOK_URL_PROBLEMS, webhookUrlProblem } from '../../domain/webhooks';
import {
  CreatedProduct,
  CreateProductBody,
  DeletedProduct,
  ProductDetails,
  ProductSummary,
  RenameProductBody,
} from '../../schemas/products';
import { SetWebhookBody, WebhookSettings } from '../../schemas/webhooks';
import { requiredSession } from './auth-middleware';
import { withAccess } from './access';

/** What the product and context routes need. */
export interface ProductsDeps {
  products: ProductRepository;
  /** Called after a product's contexts or key changed in this process (drops its cached key lookup). */
  onContextsChanged?: (productId: string) => void;
  /** Product webhook settings (README, "Webhooks (signal-feedback)"). */
  webhooks: {
    repository: WebhookRepository;
    /** The outbound address policy the URL is checked against (`SSRF_ALLOWLIST`). */
    policy: SsrfPolicy;
    /** `NODE_ENV=production`: only https URLs. */
    production: boolean;
    /** Resolver instead of the system's (tests). */
    lookup?: LookupFunction;
  };
}

/** Declares one operation of `productsRoutes` on `routes` (returned, for chaining). */
export type ProductsOperation = (routes: ContractRouter, deps: ProductsDeps) => ContractRouter;

/**
 * The declarer of the operations of `productsRoutes` (README, "Endpoints") in the document's group
 * `tag`: each takes `contract` (the operation's own parts: method, path, summary, request, its other
 * responses), declares it with session access (see {@link withAccess}: every path of the router needs a
 * session), and makes the handler from the router's deps.
 * @param tag the operations' group in the document: `Products` or `Contexts`
 */
export function productsOperation(tag: 'Products' | 'Contexts') {
  return <C extends RouteContract>(
      contract: C,
      handler: (deps: ProductsDeps) => ContractHandler<C>,
    ): ProductsOperation =>
    (routes, deps) =>
      routes.route(withAccess('session', { ...contract, tags: [tag] }), handler(deps));
}

/** An operation on the user's products (group `Products`). */
const productOperation = productsOperation('Products');

function productToWire(p: ProductRecord): ProductSummary {
  return {
    id: p.id,
    name: p.name,
    api_key_prefix: p.apiKeyPrefix,
    context_count: p.contextCount,
    created_at: p.createdAt.toISOString(),
  };
}

/**
 * Answers a product with its `spk_` key (POST /api/products and its rotate-key): the key is shown this
 * once (README, "API keys"), so no cache may keep the answer.
 */
function answerWithKey(res: Response, product: { id: string; name: string }, apiKey: string): void {
  res.setHeader('cache-control', 'no-store');
  res.json({ id: product.id, name: product.name, api_key: apiKey });
}

const ProductIdParams = z.object({ id: z.uuid().meta({ description: "one of the user's products" }) });

/** The errors of an operation on one product named by its id (beside those of {@link withAccess}). */
const PRODUCT_ID_ERRORS = {
  '400': errorResponse('invalid id'),
  '404': errorResponse('no such product of the user'),
};

/** POST /api/products: a product with its `spk_` key, shown once, within the plan's product limit. */
const createProduct = productOperation(
  {
    method: 'post',
    path: '/api/products',
    operationId: 'createProduct',
    summary: 'Create a product; the spk_ key is returned this once',
    request: { body: CreateProductBody },
    responses: {
      '200': { description: 'the product with its key', body: CreatedProduct },
      '400': errorResponse('invalid name'),
      '403': errorResponse(
        'product limit of the plan reached (code product_limit_reached) or CSRF check failed (csrf_failed)',
      ),
    },
  },
  (deps) => async (_req, res) => {
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
    answerWithKey(res, created, key.key);
  },
);

/** POST /api/products/{id}/rotate-key: a new key, shown once; the old one stops working. */
const rotateProductKey = productOperation(
  {
    method: 'post',
    path: '/api/products/{id}/rotate-key',
    operationId: 'rotateProductKey',
    summary: "Replace a product's spk_ key: the new key is returned this once and the old one stops working",
    request: { params: ProductIdParams },
    responses: {
      '200': { description: 'the product with its new key', body: CreatedProduct },
      ...PRODUCT_ID_ERRORS,
    },
  },
  (deps) => async (_req, res) => {
    const { params } = res.locals.valid;
    const key = signalFeedbackKeys.generate();
    const u = requiredSession(res).user;
    const product = await deps.products.findForUser(u.id, params.id);
    if (!product || !(await deps.products.rotateKey(u.id, params.id, key.hash, key.displayPrefix)))
      throw notFound('product');
    deps.onContextsChanged?.(params.id);
    answerWithKey(res, product, key.key);
  },
);

/** GET /api/products/{id}: the product with what deleting it would remove. */
const getProduct = productOperation(
  {
    method: 'get',
    path: '/api/products/{id}',
    operationId: 'getProduct',
    summary: 'One product with what it holds (what deleting it would remove)',
    request: { params: ProductIdParams },
    responses: {
      '200': { description: 'the product and its contents', body: ProductDetails },
      ...PRODUCT_ID_ERRORS,
    },
  },
  (deps) => async (_req, res) => {
    const { params } = res.locals.valid;
    const u = requiredSession(res).user;
    const product = await deps.products.findForUser(u.id, params.id);
    const contents = product && (await deps.products.contents(u.id, params.id));
    if (!product || !contents) throw notFound('product');
    res.json({ ...productToWire(product), contents });
  },
);

/** PATCH /api/products/{id}: a new name; the key stays. */
const renameProduct = productOperation(
  {
    method: 'patch',
    path: '/api/products/{id}',
    operationId: 'renameProduct',
    summary: 'Rename a product (its key stays)',
    request: { params: ProductIdParams, body: RenameProductBody },
    responses: {
      '200': { description: 'the renamed product', body: ProductSummary },
      '400': errorResponse('invalid id or name'),
      '404': errorResponse('no such product of the user'),
    },
  },
  (deps) => async (_req, res) => {
    const { params, body } = res.locals.valid;
    const renamed = await deps.products.rename(requiredSession(res).user.id, params.id, body.name);
    if (!renamed) throw notFound('product');
    res.json(productToWire(renamed));
  },
);

/** DELETE /api/products/{id}: the product with everything it holds. */
const deleteProduct = productOperation(
  {
    method: 'delete',
    path: '/api/products/{id}',
    operationId: 'deleteProduct',
    summary:
      'Delete a product with its key, contexts, signals, proposals and deployments; its key stops working at once on every replica',
    description: "The month's usage counters stay: deleting a product gives no quota back.",
    request: { params: ProductIdParams },
    responses: {
      '200': { description: 'what was deleted', body: DeletedProduct },
      ...PRODUCT_ID_ERRORS,
    },
  },
  (deps) => async (_req, res) => {
    const { params } = res.locals.valid;
    const deleted = await deps.products.delete(requiredSession(res).user.id, params.id);
    if (!deleted) throw notFound('product');
    deps.onContextsChanged?.(params.id);
    res.json({ id: params.id, deleted: true, contents: deleted });
  },
);

/** GET /api/products: the user's products, key prefixes only. */
const listProducts = productOperation(
  {
    method: 'get',
    path: '/api/products',
    operationId: 'listProducts',
    summary: "The user's products (key prefix only)",
    responses: {
      '200': { description: 'products', body: z.array(ProductSummary) },
    },
  },
  (deps) => async (_req, res) => {
    res.json((await deps.products.listForUser(requiredSession(res).user.id)).map(productToWire));
  },
);

/** The latest deliveries a webhook answer lists. */
const LISTED_DELIVERIES = 20;

/** A product's webhook settings on the wire, with its latest deliveries. */
async function webhookToWire(
  deps: ProductsDeps,
  productId: string,
  settings: { url: string | null; secretSet: boolean },
  generatedSecret?: string,
): Promise<WebhookSettings> {
  const deliveries = await deps.webhooks.repository.recentDeliveries(productId, LISTED_DELIVERIES);
  return {
    product_id: productId,
    url: settings.url,
    secret_set: settings.secretSet,
    ...(generatedSecret !== undefined ? { secret: generatedSecret } : {}),
    deliveries: deliveries.map((d) => ({
      id: d.id,
      event_type: d.eventType,
      webhook_id: d.messageId,
      status: d.status,
      attempts: d.attempts,
      last_status: d.lastStatus,
      last_error: d.lastError,
      created_at: d.createdAt.toISOString(),
      delivered_at: d.deliveredAt?.toISOString() ?? null,
    })),
  };
}

/** GET /api/products/{id}/webhook: the URL, whether a secret is set, the latest deliveries. */
const getWebhook = productOperation(
  {
    method: 'get',
    path: '/api/products/{id}/webhook',
    operationId: 'getProductWebhook',
    summary:
      "A product's webhook: its URL, whether a signing secret is set (never the secret) and the latest deliveries",
    request: { params: ProductIdParams },
    responses: {
      '200': { description: 'the webhook settings', body: WebhookSettings },
      ...PRODUCT_ID_ERRORS,
    },
  },
  (deps) => async (_req, res) => {
    const { params } = res.locals.valid;
    const settings = await deps.webhooks.repository.settings(requiredSession(res).user.id, params.id);
    if (!settings) throw notFound('product');
    res.setHeader('cache-control', 'no-store');
    res.json(await webhookToWire(deps, params.id, settings));
  },
);

/** PUT /api/products/{id}/webhook: sets the URL (checked) and the secret (given, kept or generated). */
const setWebhook = productOperation(
  {
    method: 'put',
    path: '/api/products/{id}/webhook',
    operationId: 'setProductWebhook',
    summary: "Set a product's webhook URL and signing secret; a generated secret is returned this once",
    description:
      'The URL must be http(s) (https in production) without credentials or fragment, and its host must resolve ' +
      'to public addresses only (checked now and again at every delivery). Without `secret`, the stored secret ' +
      'is kept; when there is none, or with `rotate_secret: true`, a new one is generated and returned once.',
    request: { params: ProductIdParams, body: SetWebhookBody },
    responses: {
      '200': { description: 'the webhook settings (with `secret` when generated)', body: WebhookSettings },
      '400': errorResponse('invalid id, body or URL (invalid_request with details.issues)'),
      '404': errorResponse('no such product of the user'),
    },
  },
  (deps) => async (_req, res) => {
    const { params, body } = res.locals.valid;
    const userId = requiredSession(res).user.id;
    const problem = webhookUrlProblem(body.url, deps.webhooks.production);
    if (problem) {
      throw validationError([{ path: 'body.url', code: 'custom', message: WEBHOOK_URL_PROBLEMS[problem] }]);
    }
    const current = await deps.webhooks.repository.settings(userId, params.id);
    if (!current) throw notFound('product');
    const check = await checkUrl(body.url, deps.webhooks.policy, {
      label: 'url',
      ...(deps.webhooks.lookup ? { lookup: deps.webhooks.lookup } : {}),
    });
    if (!check.ok) {
      throw validationError([
        { path: 'body.url', code: 'custom', message: `is not allowed: ${check.error.message}` },
      ]);
    }
    const generated =
      body.secret === undefined && (body.rotate_secret === true || !current.secretSet)
        ? generateWebhookSecret()
        : undefined;
    const secret = body.secret ?? generated ?? null;
    if (!(await deps.webhooks.repository.setWebhook(userId, params.id, body.url, secret)))
      throw notFound('product');
    res.setHeader('cache-control', 'no-store');
    res.json(await webhookToWire(deps, params.id, { url: body.url, secretSet: true }, generated));
  },
);

/** DELETE /api/products/{id}/webhook: no more webhooks; deliveries not yet sent are dropped. */
const deleteWebhook = productOperation(
  {
    method: 'delete',
    path: '/api/products/{id}/webhook',
    operationId: 'deleteProductWebhook',
    summary: "Remove a product's webhook URL and secret; deliveries not yet sent are given up",
    request: { params: ProductIdParams },
    responses: {
      '200': { description: 'the webhook settings, now empty', body: WebhookSettings },
      ...PRODUCT_ID_ERRORS,
    },
  },
  (deps) => async (_req, res) => {
    const { params } = res.locals.valid;
    if (!(await deps.webhooks.repository.removeWebhook(requiredSession(res).user.id, params.id)))
      throw notFound('product');
    res.json(await webhookToWire(deps, params.id, { url: null, secretSet: false }));
  },
);

/**
 * The session endpoints of products (README, "Endpoints" and "API keys"), in the order they are
 * mounted: create, rotate the key, read, rename, delete, list, and the webhook's read, set and remove
 * (README, "Webhooks (signal-feedback)").
 */
export const PRODUCT_OPERATIONS: readonly ProductsOperation[] = [
  createProduct,
  rotateProductKey,
  getProduct,
  renameProduct,
  deleteProduct,
  listProducts,
  getWebhook,
  setWebhook,
  deleteWebhook,
];
