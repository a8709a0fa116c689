import { queryOptions } from '@tanstack/react-query';
import { api } from '../../../lib/api-client.js';
import type { Session } from '../../../lib/session.js';
import type { ClientRecord, NewClient } from '../utils/client-kinds.js';

/**
 * Where a list of OAuth clients lives: the user's own (`/v1/clients`) or a product's
 * (`/v1/products/:p/clients`). The same calls at either path, so that one piece of the console
 * serves both.
 */
export interface ClientsAt {
  /** null: the user's own clients; else the product's slug. */
  product: string | null;
  list(token: string): Promise<{ clients: ClientRecord[] }>;
  create(token: string, body: NewClient): Promise<{ client: ClientRecord }>;
  rename(token: string, id: string, name: string): Promise<unknown>;
  remove(token: string, id: string): Promise<unknown>;
}

/** The clients' query keys: the clients of the account (null) or of a product. */
export const clientKeys = {
  at: (at: ClientsAt) => ['clients', at.product] as const,
};

export const clientsQuery = (session: Session, at: ClientsAt) => queryOptions({
  queryKey: clientKeys.at(at),
  queryFn: () => at.list(session.token),
});

export const accountClients: ClientsAt = {
  product: null,
  list: (token) => api(token).GET('/v1/clients'),
  create: (token, body) => api(token).POST('/v1/clients', { body }),
  rename: (token, clientId, name) => api(token).PUT('/v1/clients/{clientId}', { params: { path: { clientId } }, body: { name } }),
  remove: (token, clientId) => api(token).DELETE('/v1/clients/{clientId}', { params: { path: { clientId } } }),
};

export function productClients(productIdOrSlug: string): ClientsAt {
  return {
    product: productIdOrSlug,
    list: (token) => api(token).GET('/v1/products/{productIdOrSlug}/clients', { params: { path: { productIdOrSlug } } }),
    create: (token, body) => api(token).POST('/v1/products/{productIdOrSlug}/clients', { params: { path: { productIdOrSlug } }, body }),
    rename: (token, clientId, name) => api(token).PUT('/v1/products/{productIdOrSlug}/clients/{clientId}', { params: { path: { productIdOrSlug, clientId } }, body: { name } }),
    remove: (token, clientId) => api(token).DELETE('/v1/products/{productIdOrSlug}/clients/{clientId}', { params: { path: { productIdOrSlug, clientId } } }),
  };
}
