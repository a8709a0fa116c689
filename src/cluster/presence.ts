import type { Bus, CloudEvent } from '../bus/bus.js';
import type { SharedTable } from '../bus/shared.js';
import type { Clock } from '../platform/clock.js';
import type { Log } from '../platform/log.js';
import type { DeviceScope } from '../repositories/devices.repository.js';
import type { PresenceRepository } from '../repositories/presence.repository.js';

/**
 * Presence across nodes (docs/architecture.md, "Presence and node leases"). Each gateway writes
 * its own devices' presence, naming itself (services/presence.service.ts); this is what the
 * cluster adds: the leader's check for nodes gone without a goodbye, a node's own devices said
 * again after its lease lapsed, and a restarted node's leftovers. Each change publishes the
 * devices' `spark/status` events and drops every node's cached rows of them.
 */
export function createClusterPresence(deps: {
  repo: Pick<PresenceRepository, 'namedNodes' | 'release' | 'releaseOwn' | 'reassert'>;
  /** The node leases (lease.ts). */
  leases: SharedTable;
  bus: Pick<Bus, 'nodeId' | 'publish'>;
  /** The devices this node's gateway holds now. */
  held: () => string[];
  /** Drops the cached rows of a device on every node (the devices cache announces its drops). */
  forget: (id: string) => void;
  clock: Clock;
  log: () => Log;
}) {
  const announce = (rows: DeviceScope[], status: 'online' | 'offline') => {
    const at = deps.clock.now().toISOString();
    for (const d of rows) {
      deps.bus.publish({ name: 'spark/status', data: status, ttl: 60, published_at: at, coreid: d.id, private: true, owner: d.owner, productId: d.productId } satisfies CloudEvent);
    }
    for (const d of rows) deps.forget(d.id);
  };

  return {
    /**
     * The leader's check: the nodes that the store's rows name and whose lease has lapsed have
     * their devices set offline. Answers how many were online.
     */
    async releaseLapsed(): Promise<number> {
      const { nodes, at } = await deps.repo.namedNodes();
      const lapsed: string[] = [];
      for (const node of nodes) {
        if ((await deps.leases.get(node)) === null) lapsed.push(node);
      }
      if (lapsed.length === 0) return 0;
      // Only devices not heard of since the leases were read: a node whose lease came back
      // meanwhile and said its devices again keeps them (the store's clock on both sides).
      const rows = await deps.repo.release(lapsed, at);
      if (rows.length > 0) deps.log().warn({ nodes: lapsed, devices: rows.length }, 'cluster: nodes gone without a goodbye; their devices are offline');
      announce(rows, 'offline');
      return rows.length;
    },

    /** After this node's lease lapsed: the devices it still holds are online again, here. */
    async reassert(): Promise<number> {
      const rows = await deps.repo.reassert(deps.bus.nodeId, deps.held());
      announce(rows, 'online');
      return rows.length;
    },

    /**
     * At start, before the gateway listens: devices that the store says this node holds are
     * left over from an earlier run under the same NODE_ID (which held them when it died).
     */
    async releaseOwn(): Promise<number> {
      const rows = await deps.repo.releaseOwn(deps.bus.nodeId);
      announce(rows, 'offline');
      return rows.length;
    },
  };
}

export type ClusterPresence = ReturnType<typeof createClusterPresence>;
