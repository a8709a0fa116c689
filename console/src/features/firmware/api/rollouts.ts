import { queryOptions } from '@tanstack/react-query';
import { api, type ApiAnswer, type ApiBody } from '../../../lib/api-client.js';
import type { Session } from '../../../lib/session.js';

/** A staged rollout as the API answers it (docs/firmware.md, "Staged rollouts"). */
export type Rollout = ApiAnswer<'/v1/products/{productIdOrSlug}/firmware/rollouts'>['rollouts'][number];
export type Wave = Rollout['waves'][number];
export type Progress = Rollout['progress'];
/** What POST …/firmware/rollouts takes. */
export type RolloutStart = ApiBody<'/v1/products/{productIdOrSlug}/firmware/rollouts', 'post'>;
/** Running or paused: a product has one such rollout at most, and the steps act on it. */
export const underWay = (r: Pick<Rollout, 'state'>): boolean => r.state === 'running' || r.state === 'paused';

/** A person's steps on a rollout. */
export type Step = 'pause' | 'resume' | 'next' | 'abort';

/** The rollouts' query keys, by product (a step or a start refreshes them, and the firmware list). */
export const rolloutKeys = {
  of: (product: string) => ['rollouts', product] as const,
};

const at = (product: string) => ({ params: { path: { productIdOrSlug: product } } });

/** The product's rollouts, newest first, each with its progress (GET …/firmware/rollouts). */
export const rolloutsQuery = (session: Session, product: string) => queryOptions({
  queryKey: rolloutKeys.of(product),
  queryFn: async () => (await api(session.token).GET('/v1/products/{productIdOrSlug}/firmware/rollouts', at(product))).rollouts,
});

export const startRollout = (session: Session, product: string, body: RolloutStart): Promise<Rollout> =>
  api(session.token).POST('/v1/products/{productIdOrSlug}/firmware/rollouts', { ...at(product), body });

/** POST …/rollouts/:id/pause|resume|next|abort; pause and abort carry the person's reason when one is given. */
export function stepRollout(session: Session, product: string, id: number, step: Step, reason?: string): Promise<Rollout> {
  const params = { path: { productIdOrSlug: product, id } };
  const body = reason ? { reason } : {};
  const a = api(session.token);
  switch (step) {
    case 'pause': return a.POST('/v1/products/{productIdOrSlug}/firmware/rollouts/{id}/pause', { params, body });
    case 'abort': return a.POST('/v1/products/{productIdOrSlug}/firmware/rollouts/{id}/abort', { params, body });
    case 'resume': return a.POST('/v1/products/{productIdOrSlug}/firmware/rollouts/{id}/resume', { params, body: {} });
    case 'next': return a.POST('/v1/products/{productIdOrSlug}/firmware/rollouts/{id}/next', { params, body: {} });
  }
}
