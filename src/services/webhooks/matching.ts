import type { CloudEvent } from '../../bus/bus.js';
import type { WebhookRecord } from '../../repositories/webhooks.repository.js';
import { triggers } from './spec.js';

/** The cloud's own webhook events come from this id; they never trigger a webhook (Particle's rule). */
export const INTERNAL_SOURCE = 'particle-internal';

/**
 * Every node keeps all webhooks in memory, by scope, to find those an event triggers without a
 * statement per event; a change on any node reloads it everywhere (bus notice `webhooks`).
 */
export function createWebhookIndex() {
  let byId = new Map<string, WebhookRecord>();
  let byOwner = new Map<string, WebhookRecord[]>();
  let byProduct = new Map<number, WebhookRecord[]>();
  const push = <K>(m: Map<K, WebhookRecord[]>, k: K, w: WebhookRecord) => {
    const list = m.get(k);
    if (list) list.push(w);
    else m.set(k, [w]);
  };
  return {
    replace(all: WebhookRecord[]): void {
      byId = new Map(all.map((w) => [w.id, w]));
      byOwner = new Map();
      byProduct = new Map();
      for (const w of all) {
        if (w.scope.kind === 'product') push(byProduct, w.scope.productId, w);
        else push(byOwner, `${w.scope.owner.kind}:${w.scope.owner.id}`, w);
      }
    },
    get: (id: string): WebhookRecord | undefined => byId.get(id),
    get size(): number { return byId.size; },
    /**
     * The webhooks an event triggers: a user's for events of the devices they own and what they
     * publish, a product's for its fleet's events and what is published to it.
     */
    match(event: CloudEvent): WebhookRecord[] {
      if (event.coreid === INTERNAL_SOURCE || byId.size === 0) return [];
      const out: WebhookRecord[] = [];
      const consider = (list: WebhookRecord[] | undefined) => {
        for (const w of list ?? []) if (w.disabledReason === null && triggers(w.spec, event)) out.push(w);
      };
      if (event.owner) consider(byOwner.get(`${event.owner.kind}:${event.owner.id}`));
      if (event.productId !== null) consider(byProduct.get(event.productId));
      return out;
    },
  };
}

export type WebhookIndex = ReturnType<typeof createWebhookIndex>;
