import { queryOptions } from '@tanstack/react-query';
import { api } from '../../../lib/api-client.js';
import type { Session } from '../../../lib/session.js';

/** The devices' query keys: every page of a fleet, one page, one device, and the device gateway's address. */
export const deviceKeys = {
  fleet: (product: string) => ['devices', product] as const,
  page: (product: string, page: number, prefix: string, group: string) => ['devices', product, page, prefix, group] as const,
  one: (product: string, id: string) => ['device', product, id] as const,
  gateway: ['device-gateway'] as const,
};

export const PER_PAGE = 25;

/** A page of the fleet, its device IDs starting with `prefix` (none: all), in `group` (none: any). */
export const fleetQuery = (session: Session, product: string, page: number, prefix: string, group = '') => queryOptions({
  queryKey: deviceKeys.page(product, page, prefix, group),
  queryFn: () => api(session.token).GET('/v1/products/{productIdOrSlug}/devices', {
    params: { path: { productIdOrSlug: product }, query: { page, per_page: PER_PAGE, ...(prefix ? { deviceId: prefix } : {}), ...(group ? { groups: group } : {}) } },
  }),
});

export const deviceQuery = (session: Session, product: string, id: string) => queryOptions({
  queryKey: deviceKeys.one(product, id),
  queryFn: () => api(session.token).GET('/v1/products/{productIdOrSlug}/devices/{deviceId}', { params: { path: { productIdOrSlug: product, deviceId: id } } }),
});

/** Where devices connect (GET /v1/device_gateway); it does not change while the server runs. */
export const gatewayQuery = (session: Session) => queryOptions({
  queryKey: deviceKeys.gateway,
  queryFn: () => api(session.token).GET('/v1/device_gateway'),
  staleTime: Infinity,
});
