import { isDomainError } from '../../domain/errors.js';
import { memoHash, moduleHash, standing, type HeldHash } from '../../domain/config/module-hash.js';
import type { Values } from '../../domain/config/values.js';
import type { DeviceAnswer, DeviceCommand } from '../../bus/bus.js';
import type { Clock } from '../../platform/clock.js';
import type { Log } from '../../platform/log.js';
import type { DeviceConfigStateRepository, StateChange } from '../../repositories/device-config-state.repository.js';
import type { DevicesRepository, FleetDevice } from '../../repositories/devices.repository.js';
import { createBatcher } from '../../storage/batcher.js';
import type { ConfigReader } from './reader.js';
import { createStalenessLedger } from './staleness.js';
import { createDeviceTurns } from './turns.js';

type Json = Record<string, unknown>;

/** How one delivery runs (deliver in createConfigDelivery). */
interface Delivering {
  /** The hashes the device reported at connect. */
  reported?: Record<string, string> | undefined;
  /** The modules a write of the device's own values set, which its answer reports on. */
  answering?: ReadonlySet<string>;
  hashOf?: (value: Json) => string;
}

export type ModuleResult = { module: string; status: 'in_sync' } | { module: string; status: 'rejected'; code: number } | { module: string; status: 'pending'; reason: 'offline' | 'timeout' };

/** What became of one module a delivery had to send (the node's metrics). */
export type DeliveryOutcome = 'acknowledged' | 'refused' | 'pending_offline' | 'pending_timeout';

/**
 * The devices connected to this node (its gateway). Delivery talks to them directly, never
 * through the bus: a device is sent configuration only by the node that holds its connection.
 */
export interface HeldDevices {
  /** The products of the devices connected here. */
  products(): number[];
  /** The devices of a product connected here. */
  heldIn(productId: number): string[];
  /** Sends a command to a device connected here; rejects `device_offline` when it is not. */
  send(deviceId: string, command: Extract<DeviceCommand, { kind: 'config' }>, timeoutMs: number): Promise<DeviceAnswer>;
}

/**
 * Delivery of configuration to the devices connected to this node (docs/device-protocol.md,
 * "Configuration"): a device reports the hash of each module it holds when it connects; the
 * cloud sends, one module per message, each module whose effective value differs; the device
 * applies it and answers a status, which is recorded. A committed write reaches the devices it
 * concerns: a fleet-wide one the fleet's connected devices at once, a bounded number at a time and
 * in the background; a device write its device; others take it when they next connect. Which
 * node does the work is routing.ts's part: the node that holds the device's connection.
 *
 * One delivery at a time per device (turns.ts), and each delivery works from what is committed:
 * work prepared from an earlier read is dropped or redone in the device's turn when a newer write
 * has committed since, or another delivery changed what the device holds (staleness.ts).
 */
export function createNodeDelivery(deps: {
  here: HeldDevices; reader: ConfigReader; state: DeviceConfigStateRepository; devices: DevicesRepository; clock: Clock; log: () => Log; timeoutMs: number;
  /** Told of each module a delivery had to send, with what became of it. */
  observe?: (outcome: DeliveryOutcome) => void;
  /** How many devices a fan-out talks to at once. */
  fanOut?: number;
  /** How many devices a fan-out reads at once: the first share, and each after it (default 500, then 2,000). */
  shares?: { first: number; each: number } | undefined;
  /** How long acknowledgements and connecting devices are gathered before they are stored or read (storage/batcher.ts). */
  batchWindowMs?: number;
}) {
  const ledger = createStalenessLedger();
  const turns = createDeviceTurns(ledger.delivered);
  // Acknowledgements of a fan-out arrive together: they are stored a batch at a time.
  const records = createBatcher<StateChange>((changes) => deps.state.recordMany(changes), { maxBatch: 2000, inFlight: 2, waitMs: deps.batchWindowMs ?? 0 });
  const record = (deviceId: string, change: Omit<StateChange, 'deviceId' | 'at'>) => records.add({ deviceId, ...change, at: deps.clock.now() });

  /**
   * Sends what differs from what the device holds; stops at the first module the device does not
   * answer. `reported` is what the device said at connect; without it (a change while connected),
   * a value the device already refused is not sent again, and counts as refused in the results
   * for the modules of `answering` (those a write of the device's own values set). `hashOf` may
   * be shared by the devices of one read, which mostly take the same values.
   */
  async function deliver(deviceId: string, values: Values, held: Map<string, HeldHash>, how: Delivering = {}): Promise<ModuleResult[]> {
    const { reported, answering, hashOf = moduleHash } = how;
    const results: ModuleResult[] = [];
    let unreachable: 'offline' | 'timeout' | null = null;
    const pending = (module: string, reason: 'offline' | 'timeout'): ModuleResult => {
      deps.observe?.(reason === 'offline' ? 'pending_offline' : 'pending_timeout');
      return { module, status: 'pending', reason };
    };
    // Outcomes are stored in batches; the device's next module need not wait for the last one's.
    const saves: Array<Promise<void>> = [];
    for (const [module, value] of Object.entries(values)) {
      const hash = hashOf(value);
      const h = held.get(module);
      const holds = reported ? reported[module] : h?.hash;
      if (holds === hash) {
        if (h?.hash !== hash || h.status !== 'in_sync') saves.push(record(deviceId, { module, hash, value, status: 'in_sync', code: null }));
        continue;
      }
      if (!reported && h?.status === 'rejected' && h.refusedHash === hash) {
        // Refused already: before, or by a delivery that ran between the write's commit and its
        // turn (the device's connect). The write's answer says so for the modules it set.
        if (answering?.has(module)) results.push({ module, status: 'rejected', code: h.code ?? -1 });
        continue;
      }
      if (unreachable) { results.push(pending(module, unreachable)); continue; }
      try {
        const answer = await deps.here.send(deviceId, { kind: 'config', module, value, hash }, deps.timeoutMs);
        const code = answer.ok ? Number(answer.value) : -1;
        const ok = code === 0;
        deps.observe?.(ok ? 'acknowledged' : 'refused');
        saves.push(record(deviceId, { module, hash, value, status: ok ? 'in_sync' : 'rejected', code: ok ? null : code }));
        results.push(ok ? { module, status: 'in_sync' } : { module, status: 'rejected', code });
      } catch (err) {
        if (!isDomainError(err) || !['device_offline', 'device_timeout', 'device_error'].includes(err.code)) throw err;
        unreachable = err.code === 'device_timeout' ? 'timeout' : 'offline';
        results.push(pending(module, unreachable));
      }
    }
    await Promise.all(saves);
    return results;
  }

  /** Reads what is committed now for the device, and what it holds, and delivers: to run in the device's turn. */
  async function syncNow(productId: number, deviceId: string, how: Omit<Delivering, 'hashOf'> = {}): Promise<ModuleResult[]> {
    const device = await deps.devices.fleetDevice(deviceId);
    if (!device || device.productId !== productId) return [];
    const { values } = await deps.reader.device(productId, device);
    return deliver(deviceId, values, await deps.state.held(deviceId), how);
  }

  /**
   * Devices that connect together (a reconnect storm) are read together: their records with
   * what they are recorded to hold in one statement, and per product the schema, the fleet's
   * values and the devices' own in another, as a fan-out does. Each device's delivery then runs
   * on its own, in its turn; the batch does not wait for them.
   */
  const hellos = createBatcher<{ deviceId: string; hashes: Record<string, string> }, { done: Promise<unknown> }>(async (batch) => {
    // A device that said hello twice in one batch is answered for the last.
    const reported = new Map(batch.map((h) => [h.deviceId, h.hashes]));
    const ids = [...reported.keys()];
    const snapshot = ledger.snapshot();
    const started = new Map<string, Promise<unknown>>();
    try {
      const devices = await deps.state.connecting(ids);
      const recorded = new Map(devices.map((d) => [d.id, d.held]));
      const byProduct = new Map<number, FleetDevice[]>();
      for (const d of devices) if (d.productId !== null) byProduct.set(d.productId, [...(byProduct.get(d.productId) ?? []), d]);
      for (const [productId, group] of byProduct) {
        const effective = await deps.reader.effective(productId, group);
        const hashOf = memoHash();
        for (const { id } of group) {
          const values = effective.get(id)?.values ?? {};
          // With what the device reported, deliver needs only which modules are recorded in sync, at which hash.
          const held = new Map<string, HeldHash>(Object.entries(recorded.get(id) ?? {}).map(([module, hash]) => [module, { hash, status: 'in_sync', refusedHash: null, code: null }]));
          started.set(id, turns.run(id, async () => {
            const deliveredSince = snapshot.deliveredTo(id);
            if (!deliveredSince && !snapshot.superseded(productId, id)) return deliver(id, values, held, { reported: reported.get(id), hashOf });
            // Read again: a newer write committed since the batch read, or a delivery ran and
            // what the device reported at connect is no longer what it holds.
            return syncNow(productId, id, { reported: deliveredSince ? undefined : reported.get(id) });
          }));
        }
      }
    } finally {
      void Promise.allSettled(started.values()).then(snapshot.done);
    }
    return batch.map((h) => ({ done: started.get(h.deviceId) ?? Promise.resolve() }));
  }, { maxBatch: 1000, inFlight: 1, waitMs: deps.batchWindowMs ?? 0 });

  type Share = Awaited<ReturnType<typeof readShare>>;

  /**
   * A share of a fan-out, read: the devices, what they hold and what they take, from one
   * snapshot of the staleness ledger taken before the reads.
   */
  async function readShare(productId: number, ids: string[]) {
    const snapshot = ledger.snapshot();
    try {
      const devices = await deps.devices.fleetDevices(productId, { ids });
      const held = await deps.state.heldBy(devices.map((d) => d.id));
      // The values last, so that they are as fresh as can be when the devices' turns are queued.
      const effective = devices.length === 0 ? new Map<string, { values: Values }>() : await deps.reader.effective(productId, devices);
      return { snapshot, devices, held, effective };
    } catch (err) {
      snapshot.done();
      throw err;
    }
  }

  /** The fleet's devices connected here take what is committed now, a bounded number at a time. */
  async function fanOut(productId: number): Promise<void> {
    // The devices this node's connections hold, and only those: in a cluster each gateway holds
    // a share of the fleet, and each read the whole fleet's online devices to find its share
    // (100,000 rows on each of six gateways; docs/benchmarks.md, "Cluster"). The connections,
    // not the stored presence, say which: a connect is stored in the background after its
    // CONNACK, so one made a moment ago may still read offline. A node that holds none of the
    // fleet (an API node) reads nothing.
    const ids = deps.here.heldIn(productId);
    if (ids.length === 0) return;
    // Read in shares, the next share while the devices of this one are sent theirs: the first
    // devices need not wait for the whole fleet's reads, and the reads' time (the store's)
    // overlaps the sending (this node's and the devices'). The first share is small, so that
    // the first message leaves soon after the write (docs/benchmarks.md, "Configuration fan-out").
    const shares: string[][] = [];
    for (let i = 0, size = deps.shares?.first ?? 500; i < ids.length; i += size, size = deps.shares?.each ?? 2000) shares.push(ids.slice(i, i + size));
    const hashOf = memoHash();
    // At most `fanOut` devices are being sent theirs at once, across shares.
    const limit = deps.fanOut ?? 256;
    let active = 0;
    const waiting: Array<() => void> = [];
    /** Starts each device's delivery as a place frees; resolves once the last has started, with all of them settled. */
    const start = async ({ snapshot, devices, held, effective }: Share): Promise<{ settled: Promise<void> }> => {
      const mine: Array<Promise<unknown>> = [];
      for (const { id } of devices) {
        while (active >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
        active += 1;
        const values = effective.get(id)?.values ?? {};
        mine.push(turns.run(id, async () => {
          // A newer write committed since the read: its own delivery (behind this turn, or done
          // already) carries what this would have sent, or newer.
          if (snapshot.superseded(productId, id)) return [];
          return deliver(id, values, snapshot.deliveredTo(id) ? await deps.state.held(id) : held.get(id) ?? new Map(), { hashOf });
        }).catch((err) => deps.log().warn({ err, device: id }, 'configuration delivery failed')).finally(() => {
          active -= 1;
          waiting.shift()?.();
        }));
      }
      return { settled: Promise.allSettled(mine).then(() => snapshot.done()) };
    };
    // A share whose reads fail is left out (its devices take their configuration when they next
    // connect); the caught promise keeps a failure of the read ahead from going unhandled.
    const read = (ids: string[]) => readShare(productId, ids).catch((err: unknown) => {
      deps.log().warn({ err, product: productId }, 'configuration fan-out failed');
      return undefined;
    });
    const sending: Array<Promise<void>> = [];
    let reading = read(shares[0] as string[]);
    for (let k = 1; ; k++) {
      const share = await reading;
      const ahead = k < shares.length ? read(shares[k] as string[]) : undefined;
      if (share) sending.push((await start(share)).settled);
      if (!ahead) break;
      reading = ahead;
    }
    await Promise.all(sending);
  }

  /**
   * A write of one device's own values has committed: the device takes it now if connected here;
   * resolves with each module's outcome (`modules`: those the write set, which it answers for).
   */
  function deviceWritten(productId: number, deviceId: string, modules: ReadonlySet<string> = new Set()): Promise<ModuleResult[]> {
    ledger.deviceWritten(deviceId);
    return turns.run(deviceId, () => syncNow(productId, deviceId, { answering: modules }));
  }

  return {
    /**
     * A write that concerns the product's whole fleet (its values, its schema) has committed: the
     * fleet's devices connected here take it now. Resolves when the fan-out is done.
     */
    fleetWritten(productId: number): Promise<void> {
      ledger.fleetWritten(productId);
      return fanOut(productId).catch((err) => deps.log().warn({ err, product: productId }, 'configuration fan-out failed'));
    },

    deviceWritten,

    /**
     * The node holding the device did not answer a sync in time (it died mid-delivery): each
     * module of what is committed for the device that it is not recorded to hold stays pending.
     * Nothing is sent.
     */
    async unanswered(productId: number, deviceId: string): Promise<ModuleResult[]> {
      const device = await deps.devices.fleetDevice(deviceId);
      if (!device || device.productId !== productId) return [];
      const { values } = await deps.reader.device(productId, device);
      return Object.entries(standing(values, await deps.state.held(deviceId))).filter(([, s]) => s === 'pending').map(([module]) => ({ module, status: 'pending', reason: 'timeout' }));
    },

    /**
     * A device connected here and reported its hashes. Resolves once what differed was delivered
     * (or the device stopped answering).
     */
    async onHello(deviceId: string, hashes: Record<string, string>): Promise<void> {
      const delivery = await hellos.add({ deviceId, hashes });
      await delivery.done;
    },

    /** Devices with a delivery running or queued here now. */
    inProgress: (): number => turns.size,
    /** The products of the devices connected here. */
    productsHere: (): number[] => deps.here.products(),
  };
}

export type NodeDelivery = ReturnType<typeof createNodeDelivery>;
