import { queryOptions } from '@tanstack/react-query';
import { api } from '../../../lib/api-client.js';
import type { Session } from '../../../lib/session.js';

/** The customers' query keys: every page of a product's customers, and one page. */
export const customerKeys = {
  of: (product: string) => ['customers', product] as const,
  page: (product: string, page: number) => ['customers', product, page] as const,
};

export const PER_PAGE = 25;

export const customersQuery = (session: Session, product: string, page: number) => queryOptions({
  queryKey: customerKeys.page(product, page),
  queryFn: () => api(session.token).GET('/v1/products/{productIdOrSlug}/customers', { params: { path: { productIdOrSlug: product }, query: { page, per_page: PER_PAGE } } }),
});
