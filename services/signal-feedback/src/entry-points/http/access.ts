import type { OpenApiParameter } from '@repo/schemas';
import type { RequestHandler } from 'express';
import { errorResponse, type ContractRouter, type RouteContract } from '@repo/service-kit';
import { CSRF_HEADER_PARAMETER, KEY_SECURITY, SESSION_SECURITY } from './openapi';

/**
 * What each way of calling an operation documents (README, "API keys" and "Sessions and CSRF"): the
 * security requirement, the 401 without credentials, and for a write the 403 of the CSRF check, with
 * the `x-csrf-token` header parameter where every caller is a session (a key caller sends no CSRF
 * token, so the key-or-session writes do not list the header as required).
 */
const ACCESS: Record<
  'session' | 'keyOrSession',
  {
    security: NonNullable<RouteContract['security']>;
    unauthorized: string;
    csrfFailed: string;
    writeHeaders: OpenApiParameter[];
  }
> = {
  session: {
    security: SESSION_SECURITY,
    unauthorized: 'not signed in',
    csrfFailed: 'CSRF check failed',
    writeHeaders: [CSRF_HEADER_PARAMETER],
  },
  keyOrSession: {
    security: [...KEY_SECURITY, ...SESSION_SECURITY],
    unauthorized: 'no key and no session',
    csrfFailed: 'session write without x-csrf-token',
    writeHeaders: [],
  },
};

/**
 * Who may call an operation: `session`, a dashboard session only (`requireSession`); `keyOrSession`,
 * a product key or a session (`keyOrSession`). The middleware itself is mounted by the routes.
 */
export type Access = keyof typeof ACCESS;

/**
 * `contract` with what follows from who may call it (see {@link Access}): its `security`, the `401`
 * and, for any method but GET, the `403` of the CSRF check and, for a session-only write, the
 * `x-csrf-token` header parameter. A status the contract documents itself wins over the added one
 * (POST /api/products' 403 also names the product limit).
 * @param contract the operation's own parts: method, path, summary, tags, request, its other responses
 * @returns the contract to declare with `ContractRouter.route`
 */
export function withAccess<C extends RouteContract>(access: Access, contract: C): C {
  const { security, unauthorized, csrfFailed, writeHeaders } = ACCESS[access];
  const writes = contract.method !== 'get';
  const headers = writes ? writeHeaders : [];
  return {
    ...contract,
    security,
    ...(headers.length > 0
      ? { request: { ...contract.request, headers: [...(contract.request?.headers ?? []), ...headers] } }
      : {}),
    responses: {
      '401': errorResponse(unauthorized),
      ...(writes ? { '403': errorResponse(csrfFailed) } : {}),
      ...contract.responses,
    },
  };
}

/**
 * `routes` as a router for operations that one kind of caller may call (see {@link Access}): each
 * contract declared through it gets what follows from `access` (see {@link withAccess}) and `before`,
 * the middleware that checks it, run before validation. The operations are declared on `routes`
 * itself, in the order they are declared here.
 */
export function accessRoutes(routes: ContractRouter, access: Access, before: RequestHandler): ContractRouter {
  const declared: ContractRouter = {
    router: routes.router,
    operations: routes.operations,
    route(contract, ...handlers) {
      routes.route(withAccess(access, { ...contract, before: [before] }), ...handlers);
      return declared;
    },
  };
  return declared;
}
