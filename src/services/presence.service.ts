import type { Log } from '../platform/log.js';
import type { Hello } from '../domain/device-protocol.js';
import type { Clock } from '../platform/clock.js';
import type { PresenceChange, PresenceRepository } from '../repositories/presence.repository.js';
import { createBatcher } from '../storage/batcher.js';

/**
 * Presence of devices (docs/device-protocol.md, "Presence"), written in batches so that a storm
 * of connects costs a few statements, not one per device. One flush at a time keeps a device's
 * connect and disconnect in order. Failures are logged: presence is advisory, the gateway's
 * connection table is the truth for calls.
 */
export function createPresenceService(deps: {
  repo: PresenceRepository; clock: Clock; log: () => Log; changed?: (id: string) => void; batchWindowMs?: number;
  /** The node whose gateway reports (the bus's nodeId): the store names it for each connected device. */
  node?: string;
}) {
  const changed = deps.changed ?? (() => undefined);
  const node = deps.node ?? 'local';
  const batcher = createBatcher<PresenceChange>((changes) => deps.repo.apply(changes, node), { maxBatch: 2000, inFlight: 1, waitMs: deps.batchWindowMs ?? 0 });
  const hellos = createBatcher<{ id: string; hello: Hello; at: Date }>((list) => deps.repo.describeMany(list), { maxBatch: 1000, inFlight: 1, waitMs: deps.batchWindowMs ?? 0 });
  const outstanding = new Set<Promise<void>>();
  /** The latest `hello` write per device, so that what depends on it (configuration) can wait. */
  const describing = new Map<string, Promise<void>>();

  function track(p: Promise<void>, what: string): Promise<void> {
    const tracked = p.catch((err) => deps.log().warn({ err }, `presence: ${what} not stored`)).finally(() => outstanding.delete(tracked));
    outstanding.add(tracked);
    return tracked;
  }

  return {
    connected(id: string, ip: string): void {
      track(batcher.add({ id, online: true, at: deps.clock.now(), ip }).finally(() => changed(id)), 'connect');
    },
    disconnected(id: string): void {
      track(batcher.add({ id, online: false, at: deps.clock.now() }).finally(() => changed(id)), 'disconnect');
    },
    heard(id: string): void {
      track(batcher.add({ id, online: null, at: deps.clock.now() }).finally(() => changed(id)), 'last_heard');
    },
    describe(id: string, hello: Hello): void {
      const done = track(hellos.add({ id, hello, at: deps.clock.now() }).finally(() => changed(id)), 'hello');
      describing.set(id, done);
      void done.finally(() => { if (describing.get(id) === done) describing.delete(id); });
    },
    /** Resolves once the device's last `hello` (firmware versions, functions) is stored. */
    described: (id: string): Promise<void> => describing.get(id) ?? Promise.resolve(),
    markAllOffline: () => deps.repo.markAllOffline(),
    /** Waits for every write handed in so far. */
    async settle(): Promise<void> {
      while (outstanding.size > 0) await Promise.all([...outstanding]);
    },
  };
}

export type PresenceService = ReturnType<typeof createPresenceService>;
