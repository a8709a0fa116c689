import { queryOptions } from '@tanstack/react-query';
import { api, schemaApi } from '../../../lib/api-client.js';
import type { Session } from '../../../lib/session.js';
import type { ConfigSchema } from '../utils/config-form.js';

/**
 * The configuration's query keys, by product: the schema in force, the fleet's values, the
 * rollout, the history (every page, one page), diffs and versions, and a device's schema,
 * configuration and explain.
 */
export const configKeys = {
  schema: (product: string) => ['schema', product] as const,
  fleetValues: (product: string) => ['fleet-values', product] as const,
  rollout: (product: string) => ['rollout', product] as const,
  history: (product: string) => ['config-history', product] as const,
  historyPage: (product: string, page: number) => ['config-history', product, page] as const,
  /** What `version` changed, against `against` (null: the version before it in its scope). */
  diff: (product: string, version: number, against: number | null) => ['config-diff', product, version, against] as const,
  version: (product: string, version: number) => ['config-version', product, version] as const,
  deviceSchema: (product: string, id: string) => ['device-schema', product, id] as const,
  device: (product: string, id: string) => ['device-config', product, id] as const,
  explain: (product: string, id: string) => ['device-explain', product, id] as const,
};

const at = (product: string) => ({ params: { path: { productIdOrSlug: product } } });
const atDevice = (product: string, id: string) => ({ params: { path: { productIdOrSlug: product, deviceId: id } } });
const atVersion = (product: string, version: number) => ({ params: { path: { productIdOrSlug: product, version } } });

// The schema is a JSON Schema document: react-jsonschema-form's type says more of it than the API's.
export const schemaQuery = (session: Session, product: string) => queryOptions({
  queryKey: configKeys.schema(product),
  queryFn: async () => (await schemaApi(session.token).GET('/v1/products/{productIdOrSlug}/config', at(product))) as ConfigSchema,
});

export const fleetValuesQuery = (session: Session, product: string) => queryOptions({
  queryKey: configKeys.fleetValues(product),
  queryFn: () => api(session.token).GET('/v1/products/{productIdOrSlug}/config', at(product)),
});

export const rolloutQuery = (session: Session, product: string) => queryOptions({
  queryKey: configKeys.rollout(product),
  queryFn: () => api(session.token).GET('/v1/products/{productIdOrSlug}/config/rollout', at(product)),
});

export const HISTORY_PER_PAGE = 20;

export const historyQuery = (session: Session, product: string, page: number) => queryOptions({
  queryKey: configKeys.historyPage(product, page),
  queryFn: () => api(session.token).GET('/v1/products/{productIdOrSlug}/config/history', { params: { ...at(product).params, query: { page, per_page: HISTORY_PER_PAGE } } }),
});

export const diffQuery = (session: Session, product: string, version: number, against: number | null) => queryOptions({
  queryKey: configKeys.diff(product, version, against),
  queryFn: () => api(session.token).GET('/v1/products/{productIdOrSlug}/config/history/{version}/diff', {
    params: { ...atVersion(product, version).params, ...(against === null ? {} : { query: { against } }) },
  }),
});

export const versionQuery = (session: Session, product: string, version: number) => queryOptions({
  queryKey: configKeys.version(product, version),
  queryFn: () => api(session.token).GET('/v1/products/{productIdOrSlug}/config/history/{version}', atVersion(product, version)),
});

export const deviceSchemaQuery = (session: Session, product: string, id: string) => queryOptions({
  queryKey: configKeys.deviceSchema(product, id),
  queryFn: async () => (await schemaApi(session.token).GET('/v1/products/{productIdOrSlug}/config/{deviceId}', atDevice(product, id))) as ConfigSchema,
});

export const deviceConfigQuery = (session: Session, product: string, id: string) => queryOptions({
  queryKey: configKeys.device(product, id),
  queryFn: () => api(session.token).GET('/v1/products/{productIdOrSlug}/config/{deviceId}', atDevice(product, id)),
});

export const explainQuery = (session: Session, product: string, id: string) => queryOptions({
  queryKey: configKeys.explain(product, id),
  queryFn: () => api(session.token).GET('/v1/products/{productIdOrSlug}/config/{deviceId}/explain', atDevice(product, id)),
});
