import type { FastifyInstance, FastifyRequest, preHandlerHookHandler } from 'fastify';
import { DomainError } from '../domain/errors.js';
import type { ProductRecord } from '../repositories/products.repository.js';
import type { ProductService } from '../services/products.service.js';
import { authOf } from './auth.js';

/**
 * How a route under /v1/products/:productIdOrSlug reaches its product:
 * - `team`: the token is a team member's or the product's own, checked afresh (writes);
 * - `team-read`: the same, remembered for a short while (reads and device calls, which need
 *   only the product's id; docs/architecture.md, "Requests");
 * - `lookup`: the product by id or slug, whatever the credentials; the route judges them.
 */
export type ProductAccess = 'team' | 'team-read' | 'lookup';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** How the route reaches its product (product routes only; `team` when left out). */
    productAccess?: ProductAccess;
  }
  interface FastifyRequest {
    /** The product of a route under /v1/products/:productIdOrSlug, once resolved. */
    product: ProductRecord | null;
  }
}

export const PRODUCT_PREFIX = '/v1/products/:productIdOrSlug';

/**
 * Every route under /v1/products/:productIdOrSlug is registered inside this one plugin, which
 * resolves the product once per request, after the route's own guard has verified the token, as
 * the route asks (`config.productAccess`). Handlers read it with `productOf(req)`; a product the
 * token may not reach never gets as far as the handler.
 */
export function productScope(app: FastifyInstance, products: ProductService, routes: (scope: FastifyInstance) => void): void {
  const idOrSlug = (req: FastifyRequest) => (req.params as { productIdOrSlug: string }).productIdOrSlug;
  const resolvers: Record<ProductAccess, (req: FastifyRequest) => Promise<ProductRecord | null>> = {
    team: (req) => products.access(authOf(req), idOrSlug(req)),
    'team-read': (req) => products.accessCached(authOf(req), idOrSlug(req)),
    lookup: async (req) => (await products.lookup(idOrSlug(req))) ?? null,
  };
  app.register(async (scope) => {
    scope.decorateRequest('product', null);
    scope.addHook('onRoute', (route) => {
      const resolve = resolvers[route.config?.productAccess ?? 'team'];
      const resolveProduct: preHandlerHookHandler = async (req) => { req.product = await resolve(req); };
      const own = route.preHandler === undefined ? [] : Array.isArray(route.preHandler) ? route.preHandler : [route.preHandler];
      route.preHandler = [...own, resolveProduct];
    });
    routes(scope);
  }, { prefix: PRODUCT_PREFIX });
}

/** The product of a team route (`team`, `team-read`). */
export function productOf(req: FastifyRequest): ProductRecord {
  if (!req.product) throw new DomainError('server_error', 'the route is not a team route under /v1/products/:productIdOrSlug');
  return req.product;
}
