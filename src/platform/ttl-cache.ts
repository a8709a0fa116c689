import type { Clock } from './clock.js';

/** A bounded map whose entries expire; the oldest entry goes first when it is full. */
export class TtlCache<V> {
  private readonly map = new Map<string, { value: V; until: number }>();

  constructor(private readonly clock: Clock, private readonly ttlMs: number, private readonly maxEntries = 100_000) {}

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

  set(key: string, value: V): void {
    if (this.ttlMs <= 0) return;
    if (!this.map.has(key) && this.map.size >= this.maxEntries) {
      const oldest = this.map.keys().next().value;
      if (oldest !== undefined) this.map.delete(oldest);
    }
    this.map.set(key, { value, until: this.clock.nowMs() + this.ttlMs });
  }

  delete(key: string): void {
    this.map.delete(key);
  }

  clear(): void {
    this.map.clear();
  }
}
