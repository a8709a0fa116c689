import type { Clock } from './clock.js';

/**
 * Where a cache tells the other nodes of a cluster what it dropped (platform/cache-hub.ts;
 * docs/architecture.md, "Caches in a cluster").
 */
export interface CacheChannel {
  deleted(key: string): void;
  cleared(): void;
}

/**
 * A bounded map whose entries expire; the oldest entry goes first when it is full. Given a
 * channel, `delete` and `clear` are announced to the other nodes, which `drop` their own copies.
 */
export class TtlCache<V> {
  private readonly map = new Map<string, { value: V; until: number }>();
  /** Counts deletions, so that `load` can tell whether one happened while it read. */
  private deletions = 0;

  constructor(private readonly clock: Clock, private readonly ttlMs: number, private readonly maxEntries = 100_000, private readonly channel?: CacheChannel) {}

  get(key: string): V | undefined {
    if (this.ttlMs <= 0) return undefined;
    const hit = this.map.get(key);
    if (!hit) return undefined;
    if (hit.until <= this.clock.nowMs()) {
      this.map.delete(key);
      return undefined;
    }
    return hit.value;
  }

  /**
   * The entry, or else what `read` finds, kept for next time unless an entry was deleted (or the
   * cache cleared) while it read, here or on another node: the read may have seen the row from
   * before that change.
   */
  async load(key: string, read: () => Promise<V | undefined>): Promise<V | undefined> {
    const hit = this.get(key);
    if (hit !== undefined) return hit;
    const before = this.deletions;
    const found = await read();
    if (found !== undefined && before === this.deletions) this.set(key, found);
    return found;
  }

  set(key: string, value: V): void {
    if (this.ttlMs <= 0) return;
    if (!this.map.has(key) && this.map.size >= this.maxEntries) {
      const oldest = this.map.keys().next().value;
      if (oldest !== undefined) this.map.delete(oldest);
    }
    this.map.set(key, { value, until: this.clock.nowMs() + this.ttlMs });
  }

  /** Drops an entry that a change made stale, here and on the other nodes. */
  delete(key: string): void {
    this.drop(key);
    // A cache that keeps nothing (TOKEN_CACHE_SECONDS=0) has nothing to drop elsewhere either.
    if (this.ttlMs > 0) this.channel?.deleted(key);
  }

  clear(): void {
    this.dropAll();
    if (this.ttlMs > 0) this.channel?.cleared();
  }

  /** Drops an entry on this node only: another node announced it, or it merely expired. */
  drop(key: string): void {
    this.deletions += 1;
    this.map.delete(key);
  }

  dropAll(): void {
    this.deletions += 1;
    this.map.clear();
  }
}
