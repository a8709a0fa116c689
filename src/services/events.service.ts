import { DomainError } from '../domain/errors.js';
import { MAX_NAME_LENGTH, isEventName } from '../domain/device-protocol.js';
import type { Bus, CloudEvent } from '../bus/bus.js';
import type { Clock } from '../platform/clock.js';
import type { DeviceOwner, DeviceRecord } from '../repositories/devices.repository.js';
import type { ProductRecord } from '../repositories/products.repository.js';
import type { AccessTokenRecord } from '../repositories/tokens.repository.js';

/** Largest event data the API takes: the largest a device takes (docs/device-protocol.md). */
export const MAX_EVENT_DATA_BYTES = 1024;

export type EventFilter = (event: CloudEvent) => boolean;

const sameOwner = (a: DeviceOwner | null, b: DeviceOwner) => a !== null && a.kind === b.kind && a.id === b.id;

function ownerOf(auth: AccessTokenRecord): DeviceOwner | null {
  const s = auth.subject;
  if (s.kind === 'user') return { kind: 'user', id: s.userId };
  if (s.kind === 'customer') return { kind: 'customer', id: s.customerId };
  return null;
}

function withPrefix(prefix: string | undefined, filter: EventFilter): EventFilter {
  if (prefix === undefined || prefix === '') return filter;
  if (prefix.length > MAX_NAME_LENGTH) throw new DomainError('invalid_request', `An event prefix is at most ${MAX_NAME_LENGTH} characters`);
  return (e) => e.name.startsWith(prefix) && filter(e);
}

/**
 * Events (docs/particle-compatibility.md#events): applications publish through the API, devices
 * through the gateway; both go on the bus. A stream sees the events of its scope: "mine" (the
 * caller's devices and what the caller published), one device, or one product's fleet. Which
 * devices a token reaches is decided before, as for every device route.
 */
export function createEventService(deps: { bus: Bus; clock: Clock; enqueue?: (event: CloudEvent) => Promise<void> | null }) {
  /** To the streams, and stored for the webhooks that take it: resolves once its deliveries are stored. */
  async function emit(event: CloudEvent): Promise<void> {
    deps.bus.publish(event);
    await deps.enqueue?.(event);
  }
  return {
    emit,
    /**
     * POST /v1/devices/events (product: null) and /v1/products/:p/events. Resolves once the
     * webhook deliveries the event makes are stored (docs/webhooks.md, "At least once"): the
     * caller's 200 means none is lost.
     */
    async publish(auth: AccessTokenRecord, body: { name?: unknown; data?: unknown; ttl?: unknown; private?: unknown }, product: ProductRecord | null): Promise<void> {
      if (!isEventName(body.name)) throw new DomainError('invalid_request', `name is required: 1-${MAX_NAME_LENGTH} characters, without + # or control characters`);
      if (body.name.startsWith('spark/')) throw new DomainError('invalid_request', 'Event names that start with spark/ are reserved for the cloud');
      const data = body.data === undefined || body.data === null ? null : String(body.data);
      if (data !== null && Buffer.byteLength(data) > MAX_EVENT_DATA_BYTES) throw new DomainError('invalid_request', `data is at most ${MAX_EVENT_DATA_BYTES} bytes`);
      let ttl = 60;
      if (body.ttl !== undefined && body.ttl !== '') {
        ttl = Number(body.ttl);
        if (!Number.isInteger(ttl) || ttl < 0 || ttl > 16_777_215) throw new DomainError('invalid_request', 'ttl must be a whole number of seconds');
      }
      // Particle treats a missing, empty or "false" private as public
      // (docs/particle-compatibility.md#events).
      const isPrivate = body.private === true || body.private === 'true';
      const s = auth.subject;
      const productId = product ? product.id : s.kind === 'product' ? Number(s.productId) : null;
      const event: CloudEvent = {
        name: body.name, data, ttl, private: isPrivate, published_at: deps.clock.now().toISOString(), coreid: 'api',
        owner: product ? null : ownerOf(auth), productId,
      };
      await emit(event);
    },

    /** GET /v1/devices/events[/:prefix]: the caller's own devices (a product token: its fleet). */
    mine(auth: AccessTokenRecord, prefix?: string): EventFilter {
      const owner = ownerOf(auth);
      const s = auth.subject;
      if (owner) return withPrefix(prefix, (e) => sameOwner(e.owner, owner));
      const productId = s.kind === 'product' ? Number(s.productId) : NaN;
      return withPrefix(prefix, (e) => e.productId === productId);
    },

    /** GET /v1/devices/:id/events[/:prefix]: one device's events. */
    device(d: DeviceRecord, prefix?: string): EventFilter {
      return withPrefix(prefix, (e) => e.coreid === d.id);
    },

    /** GET /v1/products/:p/events[/:prefix]: the fleet's events and what was published to the product. */
    product(p: ProductRecord, prefix?: string): EventFilter {
      return withPrefix(prefix, (e) => e.productId === p.id);
    },

    subscribe: (listener: (e: CloudEvent) => void) => deps.bus.subscribe(listener),
  };
}

export type EventService = ReturnType<typeof createEventService>;
