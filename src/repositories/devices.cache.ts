import type { CacheHub } from '../platform/cache-hub.js';
import { afterCommit, type Queryable } from '../storage/db.js';
import type { DeviceOwner, DeviceRecord, DeviceScope, DevicesRepository } from './devices.repository.js';

/**
 * What other parts of the node do about a committed change of devices' owner or product (the
 * gateway re-scopes their connections). Called once the write has committed, never after a
 * rollback, with the scope the write left.
 */
export interface DeviceChanges {
  /** These devices' owner or product may have changed: what they are now. */
  moved?(devices: DeviceScope[]): void;
  /** Every device of an owner was released. */
  released?(owner: DeviceOwner): void;
}

/**
 * The devices repository with reads by id served from memory: every call, read, ping and
 * device-scoped stream starts with "which device, and may this token reach it", and on the
 * embedded store each read costs as much as the round trip to the device itself. Every write
 * through this object drops what it touches (all entries, when a write names an owner rather
 * than devices); presence and `hello` writes call `forget`. Drops reach every node
 * (docs/architecture.md, "Caches in a cluster").
 */
export function cacheDevices(repo: DevicesRepository, caches: CacheHub, ttlMs = 30_000, changes: DeviceChanges = {}): DevicesRepository & { forget(id: string): void } {
  // Reads in flight, by id: a change reported while one runs (here, or by another node's notice)
  // marks it, and what it read is then not kept, since it may be the row from before the change.
  const reading = new Map<string, Set<{ stale: boolean }>>();
  const markStale = (key: string | null) => {
    if (key === null) for (const set of reading.values()) for (const r of set) r.stale = true;
    else for (const r of reading.get(key) ?? []) r.stale = true;
  };
  const cache = caches.cache<DeviceRecord>('devices', ttlMs, { dropped: markStale });
  /** Drops a device here and on the other nodes. */
  const forget = (id: string) => {
    const key = id.toLowerCase();
    cache.delete(key);
    markStale(key);
  };
  const forgetAll = () => {
    cache.clear();
    markStale(null);
  };
  /** Drops here only: before a write, which the other nodes hear of once it has committed. */
  const forgetHere = (ids: string[] | 'all') => {
    if (ids === 'all') {
      cache.dropAll();
      markStale(null);
    } else {
      for (const key of ids.map((id) => id.toLowerCase())) {
        cache.drop(key);
        markStale(key);
      }
    }
  };
  /**
   * Runs a write and drops what it touches once it has committed: dropped earlier (inside a
   * transaction, before COMMIT), a read in between would fetch and keep the row from before the
   * write. The drop before the write, on this node only, keeps its readers from being served
   * the old row from memory while the write is under way.
   */
  async function write<T>(q: Queryable | undefined, ids: string[] | 'all', run: () => Promise<T>, committed?: (result: T) => void): Promise<T> {
    forgetHere(ids);
    const result = await run();
    const effect = () => {
      if (ids === 'all') forgetAll();
      else ids.forEach(forget);
      committed?.(result);
    };
    // Without a store given, the write ran on its own and committed when it returned.
    if (q === undefined) effect();
    else afterCommit(q, effect);
    return result;
  }
  const moved = (scopes: Array<DeviceScope | undefined>) => {
    const devices = scopes.filter((d): d is DeviceScope => d !== undefined);
    if (devices.length > 0) changes.moved?.(devices);
  };
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
    insertMany: (devices, tx) => write(tx, devices.map((d) => d.id), () => repo.insertMany(devices, tx)),
    setProduct: (ids, productId, tx) => write(tx, ids, () => repo.setProduct(ids, productId, tx), moved),
    removeFromProduct: (id, productId, tx) => write(tx, [id], () => repo.removeFromProduct(id, productId, tx), (d) => moved([d])),
    setOwner: (id, owner, q) => write(q, [id], () => repo.setOwner(id, owner, q), (d) => moved([d])),
    releaseOwner: (owner, tx) => write(tx, 'all', () => repo.releaseOwner(owner, tx), () => changes.released?.(owner)),
    leaveDeletedProduct: (productId, tx) => write(tx, 'all', () => repo.leaveDeletedProduct(productId, tx), moved),
    update: (id, change, at, q) => write(q, [id], () => repo.update(id, change, at, q)),
  };
}
