import type { CloudEvent } from '../../bus/bus.js';
import type { DeviceRecord } from '../../repositories/devices.repository.js';
import type { Clock } from '../../platform/clock.js';
import type { Tx } from '../../storage/db.js';

/** Who asks for a change: the account of the token and the request's address, for the audit log. */
export interface Actor {
  account: { kind: 'user' | 'product' | 'customer'; id: string };
  ip: string | null;
}

/** Puts an event on the product's stream (and its webhooks); resolves once its deliveries are stored. */
export type Publish = (event: CloudEvent) => Promise<void>;

/**
 * A cloud event of the product's stream, as Particle's `particle/firmware/*` events are: from
 * `api`, private, data as JSON text.
 */
export function productEvent(clock: Clock, productId: number, name: string, data: unknown): CloudEvent {
  return { name, data: JSON.stringify(data), ttl: 60, private: true, published_at: clock.now().toISOString(), coreid: 'api', owner: null, productId };
}

/** An event about one device (`particle/device/updates/forced`): on its stream, its owner's and its product's. */
export function deviceEvent(clock: Clock, d: Pick<DeviceRecord, 'id' | 'owner' | 'productId'>, name: string, data: string): CloudEvent {
  return { name, data, ttl: 60, private: true, published_at: clock.now().toISOString(), coreid: d.id, owner: d.owner, productId: d.productId };
}

/** Firmware writes of a product take turns on its row: two releases never both become the default, a rollout's tick and a release never cross. */
export const takeProductTurn = (productId: number, tx: Tx) => tx.query('SELECT 1 FROM products WHERE id = $1 FOR NO KEY UPDATE', [productId]);
