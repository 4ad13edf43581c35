import { AppError, notFound } from '@repo/errors';
import { errorResponse } from '@repo/service-kit';
import { z } from 'zod';
import type { ContextRecord } from '../../data/products';
import { Context, ContextIdQuery, CreateContextBody, UpdateContextBody } from '../../schemas/contexts';
import { requiredSession } from './auth-middleware';
import { productsOperation, type ProductsOperation } from './product-routes';

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

const unique = (list: string[] | undefined) => (list ? [...new Set(list)] : undefined);

/** An operation on the contexts of the user's products (group `Contexts`). */
const contextOperation = productsOperation('Contexts');

/** POST /api/context: a context in one of the user's products. */
const createContext = contextOperation(
  {
    method: 'post',
    path: '/api/context',
    operationId: 'createContext',
    summary: "Create a context in one of the user's products",
    request: { body: CreateContextBody },
    responses: {
      '201': { description: 'the created context', body: Context },
      '400': errorResponse('invalid body'),
      '404': errorResponse('no such product of the user'),
    },
  },
  (deps) => async (_req, res) => {
    const { body } = res.locals.valid;
    const u = requiredSession(res).user;
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
);

/** GET /api/context: every context of the user's products. */
const listContexts = contextOperation(
  {
    method: 'get',
    path: '/api/context',
    operationId: 'listContexts',
    summary: "All contexts of the user's products",
    responses: {
      '200': { description: 'contexts', body: z.array(Context) },
    },
  },
  (deps) => async (_req, res) => {
    res.json((await deps.products.listContexts(requiredSession(res).user.id)).map(contextToWire));
  },
);

/** PATCH /api/context: changed fields of one of the user's contexts. */
const updateContext = contextOperation(
  {
    method: 'patch',
    path: '/api/context',
    operationId: 'updateContext',
    summary: "Change fields of one of the user's contexts",
    request: { body: UpdateContextBody },
    responses: {
      '200': { description: 'the updated context', body: Context },
      '400': errorResponse('invalid body'),
      '404': errorResponse('no such context of the user'),
    },
  },
  (deps) => async (_req, res) => {
    const { body } = res.locals.valid;
    const u = requiredSession(res).user;
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
);

/** DELETE /api/context: one of the user's contexts, with its proposals. */
const deleteContext = contextOperation(
  {
    method: 'delete',
    path: '/api/context',
    operationId: 'deleteContext',
    summary: "Delete one of the user's contexts with its proposals (its signals stay, unrouted)",
    request: { query: ContextIdQuery },
    responses: {
      '200': { description: 'deleted', body: z.object({ id: z.uuid(), deleted: z.literal(true) }) },
      '400': errorResponse('invalid id'),
      '404': errorResponse('no such context of the user'),
    },
  },
  (deps) => async (_req, res) => {
    const { query } = res.locals.valid;
    const existing = await deps.products.findContext(requiredSession(res).user.id, query.id);
    if (!existing || !(await deps.products.deleteContext(requiredSession(res).user.id, query.id)))
      throw notFound('context');
    deps.onContextsChanged?.(existing.productId);
    res.json({ id: query.id, deleted: true });
  },
);

/**
 * The session endpoints of contexts (README, "Endpoints"), in the order they are mounted: create,
 * list, change, delete.
 */
export const CONTEXT_OPERATIONS: readonly ProductsOperation[] = [
  createContext,
  listContexts,
  updateContext,
  deleteContext,
];
