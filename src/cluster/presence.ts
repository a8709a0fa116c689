import type { Bus, CloudEvent } from '../bus/bus.js';
import type { SharedTable } from '../bus/shared.js';
import type { Clock } from '../platform/clock.js';
import type { Log } from '../platform/log.js';
import type { PresenceOwnerRow, PresenceRepository } from '../repositories/presence.repository.js';

/** The notice that tells every node to drop its cached rows of devices whose presence changed here. */
export const PRESENCE_NOTICE = 'presence.changed';
/** Ids per notice: a dead gateway's tens of thousands of devices go in several, each well under NATS's message size. */
const IDS_PER_NOTICE = 1000;

/**
 * Tells every node to drop its cached rows of devices whose presence this node stored (a connect
 * or a disconnect), so that GET /v1/devices/:id on any node says at once what the store says:
 * the ids of one turn of the event loop go in one notice (a reconnect storm's batches of
 * thousands cost a few notices, not one each).
 */
export function forgetEverywhere(bus: Pick<Bus, 'notify'>): (id: string) => void {
  let ids: string[] = [];
  const send = () => {
    const sent = ids;
    ids = [];
    for (let i = 0; i < sent.length; i += IDS_PER_NOTICE) bus.notify(PRESENCE_NOTICE, sent.slice(i, i + IDS_PER_NOTICE));
  };
  return (id) => {
    if (ids.length === 0) setImmediate(send);
    ids.push(id);
  };
}

/**
 * Presence across nodes (docs/architecture.md, "Presence and node leases"). Each gateway writes
 * its own devices' presence, naming itself (services/presence.service.ts); this is what the
 * cluster adds: the leader's check for nodes gone without a goodbye, a node's own devices said
 * again after its lease lapsed, and a restarted node's leftovers. Each change publishes the
 * devices' `spark/status` events and tells every node to forget its cached rows.
 */
export function createClusterPresence(deps: {
  repo: Pick<PresenceRepository, 'onlineNodes' | 'release' | 'reassert'>;
  /** The node leases (lease.ts). */
  leases: SharedTable;
  bus: Pick<Bus, 'nodeId' | 'publish' | 'notify'>;
  /** The devices this node's gateway holds now. */
  held: () => string[];
  clock: Clock;
  log: () => Log;
}) {
  const announce = (rows: PresenceOwnerRow[], status: 'online' | 'offline') => {
    const at = deps.clock.now().toISOString();
    for (const d of rows) {
      deps.bus.publish({ name: 'spark/status', data: status, ttl: 60, published_at: at, coreid: d.id, private: true, owner: d.owner, productId: d.productId } satisfies CloudEvent);
    }
    for (let i = 0; i < rows.length; i += IDS_PER_NOTICE) deps.bus.notify(PRESENCE_NOTICE, rows.slice(i, i + IDS_PER_NOTICE).map((d) => d.id));
  };

  return {
    /**
     * The leader's check: the nodes that the store says hold online devices and whose lease has
     * lapsed (or that name no node) have their devices set offline. Answers how many.
     */
    async releaseLapsed(): Promise<number> {
      const { nodes, at } = await deps.repo.onlineNodes();
      const lapsed: Array<string | null> = [];
      for (const node of nodes) {
        if (node === null || (await deps.leases.get(node)) === null) lapsed.push(node);
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
      const rows = await deps.repo.release([deps.bus.nodeId]);
      announce(rows, 'offline');
      return rows.length;
    },
  };
}

export type ClusterPresence = ReturnType<typeof createClusterPresence>;
