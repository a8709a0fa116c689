import type { Log } from '../platform/log.js';
import type { Hello } from '../domain/device-protocol.js';
import type { Clock } from '../platform/clock.js';
import type { PresenceChange, PresenceRepository } from '../repositories/presence.repository.js';
import { createBatcher } from '../storage/batcher.js';
import { isStoreUnavailable } from '../storage/unavailable.js';
import type { StoreWatch } from '../storage/watch.js';

/**
 * Presence of devices (docs/device-protocol.md, "Presence"), written in batches so that a storm
 * of connects costs a few statements, not one per device. One flush at a time keeps a device's
 * connect and disconnect in order. Failures are logged: presence is advisory, the gateway's
 * connection table is the truth for calls. What could not be stored because the store was
 * unreachable is kept, the newest per device, and written once the store is back, so that a
 * device that left during an outage is not shown online after it (docs/operations.md, "When the
 * store goes away").
 */
export function createPresenceService(deps: {
  repo: PresenceRepository; clock: Clock; log: () => Log; changed?: (id: string) => void; batchWindowMs?: number;
  /** The node whose gateway reports (the bus's nodeId): the store names it for each connected device. */
  node?: string;
  /** Tells when the store is reachable again after an outage (storage/watch.ts). */
  store?: Pick<StoreWatch, 'whenBack'>;
}) {
  const changed = deps.changed ?? (() => undefined);
  const node = deps.node ?? 'local';
  const batcher = createBatcher<PresenceChange>((changes) => deps.repo.apply(changes, node), { maxBatch: 2000, inFlight: 1, waitMs: deps.batchWindowMs ?? 0 });
  const hellos = createBatcher<{ id: string; hello: Hello; at: Date }>((list) => deps.repo.describeMany(list), { maxBatch: 1000, inFlight: 1, waitMs: deps.batchWindowMs ?? 0 });
  const outstanding = new Set<Promise<void>>();
  /** The latest `hello` write per device, so that what depends on it (configuration) can wait. */
  const describing = new Map<string, Promise<void>>();
  /** The latest connect or disconnect write per device, so that what answers the device after it can wait. */
  const connecting = new Map<string, Promise<void>>();
  /** Per device, the number of its newest connect or disconnect handed in, until one is stored. */
  const turns = new Map<string, number>();
  let turn = 0;
  /** What the store was unreachable for, the newest per device, to write once it is back. */
  const unsaved = new Map<string, PresenceChange>();
  const unsavedHellos = new Map<string, { hello: Hello; at: Date }>();

  function track(p: Promise<void>, what: string): Promise<void> {
    const tracked = p.catch((err) => deps.log().warn({ err }, `presence: ${what} not stored`)).finally(() => outstanding.delete(tracked));
    outstanding.add(tracked);
    return tracked;
  }

  function write(change: PresenceChange): void {
    const { id } = change;
    const what = change.online === null ? 'last_heard' : change.online ? 'connect' : 'disconnect';
    // A connect or disconnect supersedes whatever of the device is kept; a last_heard does not.
    const mine = change.online === null ? turns.get(id) : (turn += 1);
    if (change.online !== null) {
      turns.set(id, mine as number);
      unsaved.delete(id);
    }
    const newest = () => turns.get(id) === mine;
    // The cached record is dropped once the row changed: a write that failed changed nothing (and
    // a drop would send the callers of a connected device to a store that is away).
    const done = track(batcher.add(change).then(
      () => {
        if (change.online !== null && newest()) turns.delete(id);
        changed(id);
      },
      (err: unknown) => {
        if (isStoreUnavailable(err) && newest() && (change.online !== null || !unsaved.has(id))) unsaved.set(id, change);
        throw err;
      },
    ), what);
    if (change.online === null) return;
    connecting.set(id, done);
    void done.finally(() => { if (connecting.get(id) === done) connecting.delete(id); });
  }

  function describe(id: string, hello: Hello, at: Date): void {
    unsavedHellos.delete(id);
    const stored = hellos.add({ id, hello, at }).then(() => changed(id), (err: unknown) => {
      if (isStoreUnavailable(err) && describing.get(id) === done) unsavedHellos.set(id, { hello, at });
      throw err;
    });
    const done = track(stored, 'hello');
    describing.set(id, done);
    void done.finally(() => { if (describing.get(id) === done) describing.delete(id); });
  }

  deps.store?.whenBack(() => {
    const kept = [...unsaved.values()];
    const keptHellos = [...unsavedHellos];
    unsaved.clear();
    unsavedHellos.clear();
    for (const change of kept) write(change);
    for (const [id, h] of keptHellos) describe(id, h.hello, h.at);
  });

  return {
    connected(id: string, ip: string): void {
      write({ id, online: true, at: deps.clock.now(), ip });
    },
    disconnected(id: string): void {
      write({ id, online: false, at: deps.clock.now() });
    },
    heard(id: string): void {
      write({ id, online: null, at: deps.clock.now() });
    },
    describe(id: string, hello: Hello): void {
      describe(id, hello, deps.clock.now());
    },
    /**
     * Resolves once the device's last connect or disconnect is stored (or could not be): a claim
     * answers the device after it, so that a phone told "claimed" finds the device online.
     */
    stored: (id: string): Promise<void> => connecting.get(id) ?? Promise.resolve(),
    /**
     * Resolves once every connect and disconnect handed in so far is stored (or could not be):
     * what the API lists after it shows them, though they are stored after their CONNACK.
     */
    written: (): Promise<void> => Promise.all([...connecting.values()]).then(() => undefined),
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

/** What the API's device reads and a device's updates wait for: this node's presence writes not stored yet. */
export type PendingPresence = Pick<PresenceService, 'stored' | 'written' | 'described'>;
