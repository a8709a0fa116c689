import type { Clock } from '../platform/clock.js';
import { TtlCache } from '../platform/ttl-cache.js';
import type { DeviceOwner, DeviceRecord, DevicesRepository } from './devices.repository.js';

/**
 * The devices repository with reads by id served from memory: every call, read, ping and
 * device-scoped stream starts with "which device, and may this token reach it", and on the
 * embedded store each read costs as much as the round trip to the device itself. Every write
 * through this object drops what it touches (all entries, when a write names an owner rather
 * than devices); presence and `hello` writes call `forget`. Other nodes see a change within
 * `ttlMs`, as for cached tokens (TOKEN_CACHE_SECONDS).
 */
export interface DeviceChanges {
  /**
   * After a write that may have changed these devices' owner or product; `inTransaction` when the
   * write was part of a transaction that may not have committed yet.
   */
  moved?(ids: string[], inTransaction: boolean): void;
  /** After every device of an owner was released. */
  released?(owner: DeviceOwner): void;
}

export function cacheDevices(repo: DevicesRepository, clock: Clock, ttlMs = 30_000, changes: DeviceChanges = {}): DevicesRepository & { forget(id: string): void } {
  const cache = new TtlCache<DeviceRecord>(clock, ttlMs);
  // Reads in flight, by id: a change reported while one runs (`forget`) marks it, and what it
  // read is then not kept, since it may be the row from before the change.
  const reading = new Map<string, Set<{ stale: boolean }>>();
  const forget = (id: string) => {
    const key = id.toLowerCase();
    cache.delete(key);
    for (const r of reading.get(key) ?? []) r.stale = true;
  };
  const forgetAll = () => {
    cache.clear();
    for (const set of reading.values()) for (const r of set) r.stale = true;
  };
  /** Drops the entries before the write and again after it, so a read racing the write cannot keep the old row. */
  async function around<T>(ids: string[] | 'all', write: () => Promise<T>): Promise<T> {
    const drop = () => (ids === 'all' ? forgetAll() : ids.forEach(forget));
    drop();
    try {
      return await write();
    } finally {
      drop();
    }
  }
  return {
    ...repo,
    forget,
    async findById(id, q) {
      if (q !== undefined) return repo.findById(id, q);
      const key = id.toLowerCase();
      const hit = cache.get(key);
      if (hit) return hit;
      const mark = { stale: false };
      const marks = reading.get(key) ?? new Set();
      reading.set(key, marks.add(mark));
      let found: DeviceRecord | undefined;
      try {
        found = await repo.findById(key);
      } finally {
        marks.delete(mark);
        if (marks.size === 0) reading.delete(key);
      }
      if (found && !mark.stale) cache.set(key, found);
      return found;
    },
    insertMany: (devices, q) => around(devices.map((d) => d.id), () => repo.insertMany(devices, q)),
    setProduct: (ids, productId, q) => around(ids, () => repo.setProduct(ids, productId, q)).finally(() => changes.moved?.(ids, q !== undefined)),
    removeFromProduct: (id, productId, q) => around([id], () => repo.removeFromProduct(id, productId, q)).finally(() => changes.moved?.([id], q !== undefined)),
    setOwner: (id, owner, q) => around([id], () => repo.setOwner(id, owner, q)).finally(() => changes.moved?.([id], q !== undefined)),
    releaseOwner: (owner, q) => around('all', () => repo.releaseOwner(owner, q)).finally(() => changes.released?.(owner)),
    update: (id, change, at) => around([id], () => repo.update(id, change, at)),
  };
}
