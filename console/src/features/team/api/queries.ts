import { queryOptions } from '@tanstack/react-query';
import { api } from '../../../lib/api-client.js';
import type { Session } from '../../../lib/session.js';

/** The team's query keys: a product's members. */
export const teamKeys = {
  of: (product: string) => ['team', product] as const,
};

export const teamQuery = (session: Session, product: string) => queryOptions({
  queryKey: teamKeys.of(product),
  queryFn: () => api(session.token).GET('/v1/products/{productIdOrSlug}/team', { params: { path: { productIdOrSlug: product } } }),
});
