import { queryOptions } from '@tanstack/react-query';
import { api, type ApiAnswer, type ApiBody } from '../../../lib/api-client.js';
import type { Session } from '../../../lib/session.js';

/** A webhook as the list shows it; with `counts` as one webhook's page shows it. */
export type Webhook = ApiAnswer<'/v1/webhooks'>[number];
export type WebhookDetail = ApiAnswer<'/v1/webhooks/{id}'>;
/** What a create or an edit sends (Particle's fields). */
export type WebhookFields = ApiBody<'/v1/webhooks', 'post'>;
export type Created = ApiAnswer<'/v1/webhooks', 'post'>;
export type Sample = NonNullable<ApiBody<'/v1/webhooks/preview', 'post'>['sample']>;
export type Preview = ApiAnswer<'/v1/webhooks/preview', 'post'>;
export type DeliveryPage = ApiAnswer<'/v1/webhooks/{id}/deliveries'>;
export type Delivery = DeliveryPage['deliveries'][number];
export type Rotated = ApiAnswer<'/v1/webhooks/{id}/secret', 'post'>;

/** Deliveries a page of the log shows. */
export const LOG_PAGE = 10;

/**
 * Where a set of webhooks lives: the user's own (`/v1/webhooks`) or a product's
 * (`/v1/products/:p/webhooks`). The same calls at either path, so that one piece of the console
 * serves both (docs/api.md, "Webhooks").
 */
export interface WebhooksAt {
  /** null: the user's own webhooks; else the product's slug. */
  product: string | null;
  list(token: string): Promise<Webhook[]>;
  get(token: string, id: string): Promise<WebhookDetail>;
  create(token: string, body: WebhookFields): Promise<Created>;
  update(token: string, id: string, body: WebhookFields): Promise<unknown>;
  remove(token: string, id: string): Promise<unknown>;
  preview(token: string, body: WebhookFields & { sample?: Sample }): Promise<Preview>;
  deliveries(token: string, id: string, before: string | null): Promise<DeliveryPage>;
  resend(token: string, id: string, deliveryId: string): Promise<{ delivery_id: string }>;
  replay(token: string, id: string, from: string, to: string): Promise<{ count: number }>;
  test(token: string, id: string, data: string | null): Promise<{ delivery_id: string }>;
  rotate(token: string, id: string): Promise<Rotated>;
}

/** The webhooks' query keys: everything of an owner's (to refresh after a change), the list, one webhook, a page of its log. */
export const webhookKeys = {
  at: (at: WebhooksAt) => ['webhooks', at.product] as const,
  list: (at: WebhooksAt) => ['webhooks', at.product, 'list'] as const,
  one: (at: WebhooksAt, id: string) => ['webhooks', at.product, 'one', id] as const,
  log: (at: WebhooksAt, id: string, before: string | null) => ['webhooks', at.product, 'log', id, before] as const,
};

export const webhooksQuery = (session: Session, at: WebhooksAt) => queryOptions({
  queryKey: webhookKeys.list(at),
  queryFn: () => at.list(session.token),
});

export const webhookQuery = (session: Session, at: WebhooksAt, id: string) => queryOptions({
  queryKey: webhookKeys.one(at, id),
  queryFn: () => at.get(session.token, id),
});

export const deliveriesQuery = (session: Session, at: WebhooksAt, id: string, before: string | null) => queryOptions({
  queryKey: webhookKeys.log(at, id, before),
  queryFn: () => at.deliveries(session.token, id, before),
});

const logQuery = (before: string | null) => ({ limit: LOG_PAGE, ...(before === null ? {} : { before }) });

export const userWebhooks: WebhooksAt = {
  product: null,
  list: (token) => api(token).GET('/v1/webhooks'),
  get: (token, id) => api(token).GET('/v1/webhooks/{id}', { params: { path: { id } } }),
  create: (token, body) => api(token).POST('/v1/webhooks', { body }),
  update: (token, id, body) => api(token).PUT('/v1/webhooks/{id}', { params: { path: { id } }, body }),
  remove: (token, id) => api(token).DELETE('/v1/webhooks/{id}', { params: { path: { id } } }),
  preview: (token, body) => api(token).POST('/v1/webhooks/preview', { body }),
  deliveries: (token, id, before) => api(token).GET('/v1/webhooks/{id}/deliveries', { params: { path: { id }, query: logQuery(before) } }),
  resend: (token, id, deliveryId) => api(token).POST('/v1/webhooks/{id}/deliveries/{deliveryId}/resend', { params: { path: { id, deliveryId } } }),
  replay: (token, id, from, to) => api(token).POST('/v1/webhooks/{id}/replay', { params: { path: { id } }, body: { from, to } }),
  test: (token, id, data) => api(token).POST('/v1/webhooks/{id}/test', { params: { path: { id } }, body: { data } }),
  rotate: (token, id) => api(token).POST('/v1/webhooks/{id}/secret', { params: { path: { id } } }),
};

export function productWebhooks(productIdOrSlug: string): WebhooksAt {
  const at = (id: string) => ({ productIdOrSlug, id });
  return {
    product: productIdOrSlug,
    list: (token) => api(token).GET('/v1/products/{productIdOrSlug}/webhooks', { params: { path: { productIdOrSlug } } }),
    get: (token, id) => api(token).GET('/v1/products/{productIdOrSlug}/webhooks/{id}', { params: { path: at(id) } }),
    create: (token, body) => api(token).POST('/v1/products/{productIdOrSlug}/webhooks', { params: { path: { productIdOrSlug } }, body }),
    update: (token, id, body) => api(token).PUT('/v1/products/{productIdOrSlug}/webhooks/{id}', { params: { path: at(id) }, body }),
    remove: (token, id) => api(token).DELETE('/v1/products/{productIdOrSlug}/webhooks/{id}', { params: { path: at(id) } }),
    preview: (token, body) => api(token).POST('/v1/products/{productIdOrSlug}/webhooks/preview', { params: { path: { productIdOrSlug } }, body }),
    deliveries: (token, id, before) => api(token).GET('/v1/products/{productIdOrSlug}/webhooks/{id}/deliveries', { params: { path: at(id), query: logQuery(before) } }),
    resend: (token, id, deliveryId) => api(token).POST('/v1/products/{productIdOrSlug}/webhooks/{id}/deliveries/{deliveryId}/resend', { params: { path: { ...at(id), deliveryId } } }),
    replay: (token, id, from, to) => api(token).POST('/v1/products/{productIdOrSlug}/webhooks/{id}/replay', { params: { path: at(id) }, body: { from, to } }),
    test: (token, id, data) => api(token).POST('/v1/products/{productIdOrSlug}/webhooks/{id}/test', { params: { path: at(id) }, body: { data } }),
    rotate: (token, id) => api(token).POST('/v1/products/{productIdOrSlug}/webhooks/{id}/secret', { params: { path: at(id) } }),
  };
}
