import type { Bus } from '../bus/bus.js';
import type { Clock } from '../platform/clock.js';
import type { Log } from '../platform/log.js';
import type { PresenceRepository } from '../repositories/presence.repository.js';
import { startLeader, type Leader } from './leader.js';
import { holdLease } from './lease.js';
import { createClusterPresence } from './presence.js';

/**
 * What a node of a cluster does beside serving (docs/architecture.md, "Presence and node
 * leases", "Once per cluster"): it keeps its lease, takes part in electing the leader, and, while
 * it leads, sets offline the devices of nodes whose lease has lapsed. `leader` also tells the
 * composition root whether to run the other once-per-cluster work (expiry sweeps).
 */
export interface ClusterDuties {
  readonly leader: Leader;
  close(): Promise<void>;
}

export async function startClusterDuties(deps: {
  bus: Bus;
  leaseSeconds: number;
  presence: Pick<PresenceRepository, 'namedNodes' | 'release' | 'releaseOwn' | 'reassert'>;
  /** The devices this node's gateway holds now. */
  held: () => string[];
  /** Drops the cached rows of a device on every node (its presence changed). */
  forget: (id: string) => void;
  clock: Clock;
  log: () => Log;
}): Promise<ClusterDuties> {
  const ttlMs = deps.leaseSeconds * 1000;
  const [leases, leaders] = await Promise.all([deps.bus.shared.table('nodes', ttlMs), deps.bus.shared.table('leader', ttlMs)]);
  const presence = createClusterPresence({ repo: deps.presence, leases, bus: deps.bus, held: deps.held, forget: deps.forget, clock: deps.clock, log: deps.log });
  // This node holds nothing yet: what the store says it holds is left from its last run.
  await presence.releaseOwn();
  const lease = holdLease({ table: leases, nodeId: deps.bus.nodeId, ttlMs, log: deps.log, lapsed: async () => { await presence.reassert(); } });
  await lease.first;
  const leader = startLeader({ table: leaders, nodeId: deps.bus.nodeId, ttlMs, log: deps.log, led: async () => { await presence.releaseLapsed(); } });
  return {
    leader,
    async close() {
      await leader.close();
      await lease.close();
    },
  };
}
