import type { RequestHandler } from 'express';
import request from 'supertest';
import { z } from 'zod';
import { errorHandler } from '@repo/errors';
import { contractRouter, createBaseApp, createLogger } from '../src/index';
import type { ContractInput } from '../src/contract';

// Type-level checks of how a route's handlers are typed from its contract (tsc checks this file in
// `typecheck`); the requests below show that the types say what the validation step really leaves.

/** `true` when `A` and `B` are the same type (not merely assignable either way). */
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
/** Compiles only when its type argument is `true`. */
function assertType<T extends true>(): T | undefined {
  return undefined;
}

const Query = z.object({
  limit: z.coerce.number().int().min(1).max(50).default(10),
  tag: z.string().optional(),
});
const Params = z.object({ itemId: z.string().regex(/^i_\d+$/) });
const Body = z.object({ name: z.string().transform((s) => s.trim()), qty: z.number().int() });

describe('contractRouter handler types', () => {
  it('When a route declares query, params and body, then its handler reads their parsed values without restating them', async () => {
    const seen: unknown[] = [];
    const api = contractRouter().route(
      {
        method: 'post',
        path: '/items/{itemId}',
        operationId: 'putItem',
        summary: 'x',
        request: { query: Query, params: Params, body: Body },
        responses: { '200': { description: 'ok' } },
      },
      (req, res) => {
        const { query, params, body } = res.locals.valid;
        assertType<Equal<typeof query, { limit: number; tag?: string | undefined }>>();
        assertType<Equal<typeof params, { itemId: string }>>();
        assertType<Equal<typeof body, { name: string; qty: number }>>();
        assertType<Equal<typeof req.body, { name: string; qty: number }>>();
        // Never called: what the compiler refuses.
        const refused = () => [
          // @ts-expect-error the query schema declares no `page`
          query.page,
          // @ts-expect-error `limit` is parsed to a number, not left a string
          query.limit.toUpperCase(),
          // @ts-expect-error the body's `qty` is a number
          body.qty.length,
        ];
        seen.push(typeof refused);
        seen.push(query.limit, params.itemId, body.name, req.body.qty);
        res.json({ ok: true });
      },
    );
    const app = createBaseApp({ logger: createLogger({ name: 'contract-types', level: 'silent' }) });
    app.use(api.router);
    app.use(errorHandler(createLogger({ name: 'contract-types', level: 'silent' })));
    await request(app).post('/items/i_1?limit=7').send({ name: ' a ', qty: 2 }).expect(200);
    expect(seen).toEqual(['function', 7, 'i_1', 'a', 2]);
  });
});

// `before` middleware and extra handlers stay plain express handlers: they run around the typed one.
const plain: RequestHandler = (_req, _res, next) => next();
contractRouter().route(
  {
    method: 'get',
    path: '/gated/{itemId}',
    operationId: 'gated',
    summary: 'x',
    request: { params: Params, body: Body, bodyParsedByHandler: false },
    responses: { '200': { description: 'ok' } },
    before: [plain],
  },
  plain,
  (_req, res) => {
    assertType<Equal<typeof res.locals.valid.body, { name: string; qty: number }>>();
    assertType<Equal<typeof res.locals.valid.query, ContractInput<undefined>['query']>>();
    res.end();
  },
);

// A route that declares nothing to validate has no `valid`; one whose body its handler parses
// itself gets the body untyped, and undeclared parts are express's own.
contractRouter()
  .route(
    {
      method: 'get',
      path: '/plain',
      operationId: 'plain',
      summary: 'x',
      responses: { '200': { description: 'ok' } },
    },
    (_req, res) => {
      assertType<Equal<typeof res.locals.valid, undefined>>();
      res.end();
    },
  )
  .route(
    {
      method: 'post',
      path: '/raw',
      operationId: 'raw',
      summary: 'x',
      request: { query: Query, body: Body, bodyParsedByHandler: true },
      responses: { '200': { description: 'ok' } },
    },
    (req, res) => {
      assertType<Equal<typeof res.locals.valid.body, unknown>>();
      assertType<Equal<typeof req.body, unknown>>();
      assertType<Equal<typeof res.locals.valid.params, ContractInput<undefined>['params']>>();
      res.end();
    },
  );
