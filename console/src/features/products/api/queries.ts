import { queryOptions } from '@tanstack/react-query';
import { api } from '../../../lib/api-client.js';
import type { Session } from '../../../lib/session.js';

/** The products' query keys: the list of the user's products, and each product. */
export const productKeys = {
  list: ['products'] as const,
  one: (slug: string) => ['product', slug] as const,
};

/** The products the user is a team member of. */
export const productsQuery = (session: Session) => queryOptions({
  queryKey: productKeys.list,
  queryFn: () => api(session.token).GET('/v1/user/products'),
});

/** One product, by id or slug. */
export const productQuery = (session: Session, slug: string) => queryOptions({
  queryKey: productKeys.one(slug),
  queryFn: () => api(session.token).GET('/v1/products/{productIdOrSlug}', { params: { path: { productIdOrSlug: slug } } }),
});
