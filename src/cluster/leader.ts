import type { Log } from '../platform/log.js';
import type { SharedTable } from '../bus/shared.js';
import { every } from './ticker.js';

/**
 * The leader of once-per-cluster work (docs/architecture.md, "Once per cluster"): at most one
 * node at a time, elected on a shared table (bus.shared; memory on one node, a NATS key-value
 * bucket in a cluster) by compare-and-swap, and kept by renewing its entry every third of the
 * table's lifetime. A leader that dies stops renewing: its entry expires and the next node to
 * try takes it. A leader that closes gives it up at once.
 *
 * A node takes itself for leader only while its last renewal is recent (two thirds of the
 * lifetime): one cut off from the table stops leading before another can be elected.
 */
export interface Leader {
  /** Whether this node leads now. */
  leads(): boolean;
  /** Gives the lead up (when held) and stops trying. */
  close(): Promise<void>;
}

export interface LeaderOptions {
  table: SharedTable;
  /** This node's name, the entry's value. */
  nodeId: string;
  /** The table's lifetime: how long a dead leader keeps the lead. */
  ttlMs: number;
  log: () => Log;
  /** The entry's key: one per kind of work that needs its own leader. */
  key?: string;
  /** Work of the leader, run after each renewal while it leads (every third of the lifetime). */
  led?: () => Promise<void>;
}

export function startLeader(options: LeaderOptions): Leader {
  const key = options.key ?? 'leader';
  const periodMs = Math.max(100, Math.floor(options.ttlMs / 3));
  let renewedAt = -Infinity;
  let leading = false;
  const fresh = () => leading && performance.now() - renewedAt < (options.ttlMs * 2) / 3;

  async function attempt(): Promise<boolean> {
    const entry = await options.table.get(key);
    if (entry && entry.value !== options.nodeId) return false;
    return options.table.swap(key, options.nodeId, entry?.revision ?? null);
  }

  const ticks = every(periodMs, async () => {
    const started = performance.now();
    let won: boolean;
    try {
      won = await attempt();
    } catch (err) {
      if (leading) options.log().warn({ err }, 'cluster: the leader could not renew its lead; stepping down');
      leading = false;
      return;
    }
    if (won && !leading) options.log().info({ node: options.nodeId }, 'cluster: this node leads once-per-cluster work');
    leading = won;
    if (!won) return;
    renewedAt = started;
    try {
      await options.led?.();
    } catch (err) {
      options.log().warn({ err }, 'cluster: leader work failed');
    }
  });

  return {
    leads: fresh,
    async close() {
      await ticks.stop();
      if (!leading) return;
      leading = false;
      try {
        const entry = await options.table.get(key);
        if (entry?.value === options.nodeId) await options.table.delete(key);
      } catch {
        // Unreachable table: the entry expires on its own.
      }
    },
  };
}
