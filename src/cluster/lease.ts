import type { Log } from '../platform/log.js';
import type { SharedTable } from '../bus/shared.js';
import { every } from './ticker.js';

/**
 * A node's lease (docs/architecture.md, "Presence and node leases"): an entry in the shared table
 * `nodes`, whose lifetime is NODE_LEASE_SECONDS, written again every third of it. While it is
 * there the node is alive; once it has expired, the leader takes the node for dead and sets its
 * devices offline (presence.ts).
 *
 * A node that was cut off (from NATS) long enough for its lease to lapse finds its entry gone at
 * its next renewal, writes it again and then calls `lapsed`, to say again which devices it
 * holds (retried at each renewal until it succeeds). A leader's check that read the lease as
 * gone just before it was written again does not undo that: it sets offline only devices not
 * heard of since it read the leases (presence.ts).
 */
export interface Lease {
  /** Resolves after the first attempt to write the lease (it may have failed: it is retried). */
  readonly first: Promise<void>;
  /** Stops renewing and removes the lease: a node that leaves in order is not taken for dead. */
  close(): Promise<void>;
}

export function holdLease(options: { table: SharedTable; nodeId: string; ttlMs: number; log: () => Log; lapsed: () => Promise<void> }): Lease {
  const periodMs = Math.max(100, Math.floor(options.ttlMs / 3));
  let held = false;
  let pending = false;
  const ticks = every(periodMs, async () => {
    let had: boolean;
    try {
      had = (await options.table.get(options.nodeId)) !== null;
      await options.table.put(options.nodeId, String(Date.now()));
    } catch (err) {
      if (held) options.log().warn({ err }, 'cluster: the node lease could not be renewed');
      held = false;
      return;
    }
    if (!had) {
      if (held) options.log().warn({ node: options.nodeId }, 'cluster: this node\'s lease had lapsed; saying again which devices it holds');
      pending = true;
    }
    held = true;
    if (!pending) return;
    try {
      await options.lapsed();
      pending = false;
    } catch (err) {
      options.log().warn({ err }, 'cluster: the devices held here could not be stored online again');
    }
  });
  return {
    first: ticks.first,
    async close() {
      await ticks.stop();
      try {
        await options.table.delete(options.nodeId);
      } catch {
        // Unreachable table: the lease expires on its own.
      }
    },
  };
}
