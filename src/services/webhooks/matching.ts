import type { CloudEvent } from '../../bus/bus.js';
import type { DeviceOwner } from '../../repositories/devices.repository.js';
import type { WebhookRecord, WebhookScope } from '../../repositories/webhooks.repository.js';
import { triggers } from './spec.js';

/** The cloud's own webhook events come from this id; they never trigger a webhook (Particle's rule). */
export const INTERNAL_SOURCE = 'particle-internal';

/**
 * Every node keeps all webhooks in memory, by scope, to find those an event triggers without a
 * statement per event; a change on any node reloads that webhook everywhere (bus notice `webhooks.changed`).
 */
export function createWebhookIndex() {
  let byId = new Map<string, WebhookRecord>();
  let byOwner = new Map<string, WebhookRecord[]>();
  let byProduct = new Map<number, WebhookRecord[]>();
  /** A scope's webhooks are kept in the order of their ids, as the store lists them. */
  const place = <K>(m: Map<K, WebhookRecord[]>, k: K, w: WebhookRecord, add: boolean) => {
    const list = (m.get(k) ?? []).filter((x) => x.id !== w.id);
    if (add) {
      const at = list.findIndex((x) => x.id > w.id);
      list.splice(at === -1 ? list.length : at, 0, w);
    }
    if (list.length > 0) m.set(k, list);
    else m.delete(k);
  };
  const ownerKey = (owner: DeviceOwner) => `${owner.kind}:${owner.id}`;
  const file = (w: WebhookRecord, add: boolean) => {
    if (w.scope.kind === 'product') place(byProduct, w.scope.productId, w, add);
    else place(byOwner, ownerKey(w.scope.owner), w, add);
  };
  const remove = (id: string) => {
    const old = byId.get(id);
    if (!old) return;
    byId.delete(id);
    file(old, false);
  };
  const put = (w: WebhookRecord) => {
    remove(w.id);
    byId.set(w.id, w);
    file(w, true);
  };
  return {
    replace(all: WebhookRecord[]): void {
      byId = new Map();
      byOwner = new Map();
      byProduct = new Map();
      for (const w of all) put(w);
    },
    /** One webhook as it is stored now (created or changed). */
    put,
    /** One webhook gone. */
    remove,
    get: (id: string): WebhookRecord | undefined => byId.get(id),
    /** The ids of a scope's webhooks: a product's, or an account's own. */
    of: (scope: WebhookScope): string[] => (scope.kind === 'product' ? byProduct.get(scope.productId) : byOwner.get(ownerKey(scope.owner)))?.map((w) => w.id) ?? [],
    get size(): number { return byId.size; },
    all: (): IterableIterator<WebhookRecord> => byId.values(),
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
      if (event.owner) consider(byOwner.get(ownerKey(event.owner)));
      if (event.productId !== null) consider(byProduct.get(event.productId));
      return out;
    },
  };
}

export type WebhookIndex = ReturnType<typeof createWebhookIndex>;
