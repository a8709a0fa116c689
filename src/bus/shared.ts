import type { Clock } from '../platform/clock.js';

/**
 * Small tables every node of a cluster reads and writes: failure counters of logins and device
 * connects (domain/failure-limiter.ts), node leases and the leader of once-per-cluster work
 * (cluster/lease.ts, cluster/leader.ts). On one node they live in memory; in a cluster they are
 * NATS key-value buckets whose entries expire on their own (bus/nats.ts). Values are short strings.
 */
export interface SharedEntry {
  value: string;
  /** Changes with every write; `swap` compares it. */
  revision: number;
}

export interface SharedTable {
  get(key: string): Promise<SharedEntry | null>;
  /**
   * Writes `value` when the key is still at `revision` (null: when it is absent); false when
   * another writer came first, and the caller reads again (optimistic concurrency).
   */
  swap(key: string, value: string, revision: number | null): Promise<boolean>;
  put(key: string, value: string): Promise<void>;
  delete(key: string): Promise<void>;
  /** Every key present now. */
  keys(): Promise<string[]>;
}

export interface SharedTables {
  /** The table `name`, whose entries expire `ttlMs` after their last write. */
  table(name: string, ttlMs: number): Promise<SharedTable>;
}

/** Keeps the tables bounded under a flood of distinct keys (a spray of usernames or addresses). */
const MAX_ENTRIES = 100_000;

/** Tables in this process's memory: the single-node default. */
export function memoryTables(clock: Clock): SharedTables {
  const tables = new Map<string, SharedTable>();
  return {
    async table(name, ttlMs) {
      const existing = tables.get(name);
      if (existing) return existing;
      const rows = new Map<string, SharedEntry & { until: number }>();
      let revision = 0;
      const live = (key: string) => {
        const row = rows.get(key);
        if (row && row.until <= clock.nowMs()) rows.delete(key);
        return row && row.until > clock.nowMs() ? row : undefined;
      };
      const write = (key: string, value: string) => {
        rows.delete(key);
        if (rows.size >= MAX_ENTRIES) {
          const oldest = rows.keys().next().value;
          if (oldest !== undefined) rows.delete(oldest);
        }
        rows.set(key, { value, revision: ++revision, until: clock.nowMs() + ttlMs });
      };
      const table: SharedTable = {
        async get(key) {
          const row = live(key);
          return row ? { value: row.value, revision: row.revision } : null;
        },
        async swap(key, value, expected) {
          const row = live(key);
          if ((row?.revision ?? null) !== expected) return false;
          write(key, value);
          return true;
        },
        async put(key, value) {
          write(key, value);
        },
        async delete(key) {
          rows.delete(key);
        },
        async keys() {
          return [...rows.keys()].filter((k) => live(k) !== undefined);
        },
      };
      tables.set(name, table);
      return table;
    },
  };
}
