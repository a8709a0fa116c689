import { queryOptions } from '@tanstack/react-query';
import { api, type ApiAnswer } from './api-client.js';
import type { Session } from './session.js';

/**
 * A product's device groups (docs/firmware.md, "Groups"): shared here because three parts of the
 * console read them: the Groups page, the fleet (its filter and the devices' groups) and
 * firmware releases (the groups a version goes to).
 */
export type Group = ApiAnswer<'/v1/products/{productIdOrSlug}/groups'>['groups'][number];

/** The groups' query keys: a product's list. A change of groups or of devices' groups invalidates it (device counts). */
export const groupKeys = {
  of: (product: string) => ['groups', product] as const,
};

export const groupsQuery = (session: Session, product: string) => queryOptions({
  queryKey: groupKeys.of(product),
  queryFn: () => api(session.token).GET('/v1/products/{productIdOrSlug}/groups', { params: { path: { productIdOrSlug: product } } }),
});

/** What a person reads of a group's name rules (the API's: docs/firmware.md, "Groups"). */
export const GROUP_NAME_RULES = 'Lower-case letters a–z, digits, dashes and underscores, at most 64 characters.';