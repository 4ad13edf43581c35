import { contractRouter, type ContractRouter } from '@repo/service-kit';
import { requireSession } from './auth-middleware';
import { CONTEXT_OPERATIONS } from './context-routes';
import { PRODUCT_OPERATIONS, type ProductsDeps } from './product-routes';

/**
 * Session endpoints for products and contexts (README, "Endpoints" and "API keys"): POST/GET
 * /api/products, GET/PATCH/DELETE /api/products/{id} (what it holds, rename, delete with everything it
 * holds), POST /api/products/{id}/rotate-key (a new key, shown once; the old one stops working) and
 * POST/GET/PATCH/DELETE /api/context. A user sees and changes only their own (others' are 404).
 * Every path below /api/products and /api/context needs a session (401 `unauthorized`), an unknown
 * one too: the check runs before any route of the router.
 */
export function productsRoutes(deps: ProductsDeps): ContractRouter {
  const routes = contractRouter();
  routes.router.use(['/api/products', '/api/context'], requireSession);
  // In this order: it is the express matching order and the OpenAPI document's operation order.
  return [...PRODUCT_OPERATIONS, ...CONTEXT_OPERATIONS].reduce(
    (declared, declare) => declare(declared, deps),
    routes,
  );
}
