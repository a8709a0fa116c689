import { createHash } from 'node:crypto';
import { DomainError, isDomainError } from '../domain/errors.js';
import type { Bus } from '../bus/bus.js';
import type { Clock } from '../platform/clock.js';
import type { Log } from '../platform/log.js';
import type { ConfigValuesRepository, FleetDevice } from '../repositories/config-values.repository.js';
import type { DeviceConfigStateRepository, HeldHash, StateChange } from '../repositories/device-config-state.repository.js';
import { createBatcher } from '../storage/batcher.js';
import type { Values } from '../domain/config/values.js';
import type { DeviceRecord, DevicesRepository } from '../repositories/devices.repository.js';
import type { ProductRecord, ProductsRepository } from '../repositories/products.repository.js';
import type { ConfigValuesService } from './config-values.service.js';

type Json = Record<string, unknown>;

/** The hash of a module's value that the cloud sends with it and the device reports back. */
export const moduleHash = (value: Json): string => createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 16);

/**
 * moduleHash remembered per module object: devices that take the same configuration share the
 * same objects (ConfigValuesService.devices), so a fan-out hashes each distinct value once.
 */
function memoHash(): (value: Json) => string {
  const seen = new WeakMap<Json, string>();
  return (value) => {
    let h = seen.get(value);
    if (h === undefined) seen.set(value, (h = moduleHash(value)));
    return h;
  };
}

export type ModuleResult = { module: string; status: 'in_sync' } | { module: string; status: 'rejected'; code: number } | { module: string; status: 'pending'; reason: 'offline' | 'timeout' };

/** Where one module of one device stands, and since when. */
export interface ModuleDelivery { state: 'in_sync' | 'pending' | 'rejected'; desired_hash: string; held_hash: string | null; code: number | null; since: string | null }

/** Where a product's fleet stands: how many devices hold their configuration, and how many do not yet. */
export interface Rollout { devices: number; in_sync: number; pending: number; pending_online: number; rejected: number; modules: Record<string, { in_sync: number; pending: number; rejected: number }> }

/**
 * Delivery of configuration to devices (docs/device-protocol.md, "Configuration"; DESIGN.md):
 * a device reports the hash of each module it holds when it connects; the cloud sends, one module
 * per message, each module whose effective value differs; the device applies it and answers a
 * status, which is recorded. Fleet changes go at once to the fleet's connected devices, a bounded
 * number at a time and in the background; others get them when they next connect.
 */
export function createConfigDeliveryService(deps: {
  bus: Bus; values: ConfigValuesService; state: DeviceConfigStateRepository; valuesRepo: ConfigValuesRepository;
  devices: DevicesRepository; products: ProductsRepository; clock: Clock; log: () => Log; timeoutMs: number;
  /** How many devices a fan-out talks to at once. */
  fanOut?: number;
  /** How long acknowledgements and connecting devices are gathered before they are stored or read (storage/batcher.ts). */
  batchWindowMs?: number;
}) {
  // Acknowledgements of a fan-out arrive together: they are stored a batch at a time.
  const records = createBatcher<StateChange>((changes) => deps.state.recordMany(changes), { maxBatch: 2000, inFlight: 2, waitMs: deps.batchWindowMs ?? 0 });
  const record = (deviceId: string, change: Omit<StateChange, 'deviceId' | 'at'>) => records.add({ deviceId, ...change, at: deps.clock.now() });

  /**
   * Sends what differs from what the device holds; stops at the first module the device does not
   * answer. `reported` is what the device said at connect; without it (a change while connected),
   * a value the device already refused is not sent again.
   */
  async function deliver(deviceId: string, values: Values, held: Map<string, HeldHash>, reported?: Record<string, string>, hashOf: (value: Json) => string = moduleHash): Promise<ModuleResult[]> {
    const results: ModuleResult[] = [];
    let unreachable: 'offline' | 'timeout' | null = null;
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
      if (!reported && h?.status === 'rejected' && h.refusedHash === hash) continue;
      if (unreachable) { results.push({ module, status: 'pending', reason: unreachable }); continue; }
      try {
        const answer = await deps.bus.send(deviceId, { kind: 'config', module, value, hash }, deps.timeoutMs);
        const code = answer.ok ? Number(answer.value) : -1;
        const ok = code === 0;
        saves.push(record(deviceId, { module, hash, value, status: ok ? 'in_sync' : 'rejected', code: ok ? null : code }));
        results.push(ok ? { module, status: 'in_sync' } : { module, status: 'rejected', code });
      } catch (err) {
        if (!isDomainError(err) || !['device_offline', 'device_timeout', 'device_error'].includes(err.code)) throw err;
        unreachable = err.code === 'device_timeout' ? 'timeout' : 'offline';
        results.push({ module, status: 'pending', reason: unreachable });
      }
    }
    await Promise.all(saves);
    return results;
  }

  // One delivery at a time per device: a fleet change and a connect (or a device write) at the
  // same moment would otherwise both send the same module. `generation` counts each device's
  // deliveries, so that work which read the device's state at generation `since` knows whether
  // a delivery ran in between and what it read is stale.
  const chains = new Map<string, Promise<unknown>>();
  const generation = new Map<string, number>();
  const gen = (deviceId: string) => generation.get(deviceId) ?? 0;
  function serial<T>(deviceId: string, work: (stale: boolean) => Promise<T>, since = gen(deviceId)): Promise<T> {
    const run = (chains.get(deviceId) ?? Promise.resolve()).catch(() => undefined).then(() => work(gen(deviceId) !== since));
    const tail: Promise<unknown> = run.catch(() => undefined).finally(() => {
      generation.set(deviceId, gen(deviceId) + 1);
      if (chains.get(deviceId) === tail) chains.delete(deviceId);
    });
    chains.set(deviceId, tail);
    return run;
  }

  /** Reads the device's configuration and what it holds, and delivers: to run in the device's turn. */
  async function syncNow(product: ProductRecord, device: DeviceRecord, reported?: Record<string, string>): Promise<ModuleResult[]> {
    const { values } = await deps.values.device(product, device);
    return deliver(device.id, values, await deps.state.held(device.id), reported);
  }

  // What the device reported at connect is out of date once a delivery ran since.
  const sync = (product: ProductRecord, device: DeviceRecord, reported?: Record<string, string>): Promise<ModuleResult[]> =>
    serial(device.id, (stale) => syncNow(product, device, stale ? undefined : reported));

  /** Whether a device holds `values`: in sync, pending, or refusing one of them. */
  function standing(values: Values, held: Map<string, HeldHash> | undefined, hashOf: (value: Json) => string = moduleHash): Record<string, 'in_sync' | 'pending' | 'rejected'> {
    const out: Record<string, 'in_sync' | 'pending' | 'rejected'> = {};
    for (const [module, value] of Object.entries(values)) {
      const hash = hashOf(value);
      const h = held?.get(module);
      out[module] = h?.status === 'in_sync' && h.hash === hash ? 'in_sync' : h?.status === 'rejected' && h.refusedHash === hash ? 'rejected' : 'pending';
    }
    return out;
  }

  /**
   * Devices that connect together (a reconnect storm) are read together: their records, what
   * they are recorded to hold and their own values in one statement each, and the product,
   * schema and fleet values once per product, as a fan-out does. Each device's delivery then
   * runs on its own, in its turn (`serial`); the batch does not wait for them.
   */
  const hellos = createBatcher<{ deviceId: string; hashes: Record<string, string> }, { done: Promise<unknown> }>(async (batch) => {
    // A device that said hello twice in one batch is answered for the last.
    const reported = new Map(batch.map((h) => [h.deviceId, h.hashes]));
    const ids = [...reported.keys()];
    const since = new Map(ids.map((id) => [id, gen(id)]));
    const devices = await deps.state.connecting(ids);
    const recorded = new Map(devices.map((d) => [d.id, d.held]));
    const byProduct = new Map<number, FleetDevice[]>();
    for (const d of devices) if (d.productId !== null) byProduct.set(d.productId, [...(byProduct.get(d.productId) ?? []), d]);
    const started = new Map<string, Promise<unknown>>();
    for (const [productId, group] of byProduct) {
      const product = await deps.products.find({ id: productId });
      if (!product) continue;
      const effective = await deps.values.devices(product, group);
      const hashOf = memoHash();
      for (const { id } of group) {
        const values = effective.get(id)?.values ?? {};
        // With what the device reported, deliver needs only which modules are recorded in sync, at which hash.
        const held = new Map<string, HeldHash>(Object.entries(recorded.get(id) ?? {}).map(([module, hash]) => [module, { hash, status: 'in_sync', refusedHash: null }]));
        started.set(id, serial(id, async (stale) => {
          if (!stale) return deliver(id, values, held, reported.get(id), hashOf);
          // A delivery ran since the batch read: what was read may be out of date, so read again.
          const device = await deps.devices.findById(id);
          return device && device.productId === product.id ? syncNow(product, device) : [];
        }, since.get(id)));
      }
    }
    return batch.map((h) => ({ done: started.get(h.deviceId) ?? Promise.resolve() }));
  }, { maxBatch: 1000, inFlight: 1, waitMs: deps.batchWindowMs ?? 0 });

  return {
    sync,

    /** `{current, pending}`: what the device confirmed, and what it has yet to take. */
    async status(product: ProductRecord, device: DeviceRecord) {
      const { own, values, sources, outsideFirmware } = await deps.values.device(product, device);
      const held = await deps.state.held(device.id);
      const written = await deps.valuesRepo.writtenAt(product.id, device.id);
      const current: Record<string, Json> = {};
      const pending: Record<string, Json> = {};
      const rejected: Record<string, number> = {};
      const delivery: Record<string, ModuleDelivery> = {};
      const states = standing(values, held);
      for (const [module, value] of Object.entries(values)) {
        const h = held.get(module);
        const state = states[module] ?? 'pending';
        if (h?.status === 'in_sync' && h.value) current[module] = h.value;
        if (state !== 'in_sync') pending[module] = value;
        if (h?.status === 'rejected' && h.code !== null) rejected[module] = h.code;
        // Pending since the write that made the value the device has yet to take (null: a
        // default the device never took, since it joined).
        const since = state === 'pending' ? written.get(`${sources[module] === 'device' ? device.id : ''}/${module}`) ?? null : h?.updatedAt ?? null;
        delivery[module] = {
          state, desired_hash: moduleHash(value), held_hash: h?.hash ?? null,
          code: state === 'rejected' ? h?.code ?? null : null, since: since ? since.toISOString() : null,
        };
      }
      return { configuration: { current, pending }, own, sources, rejected, delivery, outside_firmware_range: outsideFirmware };
    },

    /** The fleet's rollout: devices (and modules) in sync, pending, or refused by the device. */
    async rollout(product: ProductRecord): Promise<Rollout> {
      const fleet = await deps.valuesRepo.fleetDevices(product.id, { onlineOnly: false });
      const effective = await deps.values.devices(product, fleet);
      const held = await deps.state.heldByProduct(product.id);
      const hashOf = memoHash();
      const out: Rollout = { devices: fleet.length, in_sync: 0, pending: 0, pending_online: 0, rejected: 0, modules: {} };
      for (const d of fleet) {
        const byModule = standing(effective.get(d.id)?.values ?? {}, held.get(d.id), hashOf);
        const states = Object.values(byModule);
        if (states.includes('rejected')) out.rejected += 1;
        else if (states.includes('pending')) { out.pending += 1; if (d.online) out.pending_online += 1; }
        else out.in_sync += 1;
        for (const [module, st] of Object.entries(byModule)) {
          const m = out.modules[module] ?? (out.modules[module] = { in_sync: 0, pending: 0, rejected: 0 });
          m[st] += 1;
        }
      }
      return out;
    },

    /**
     * A device connected and reported its hashes. Resolves once what differed was delivered (or
     * the device stopped answering).
     */
    async onHello(deviceId: string, hashes: Record<string, string>): Promise<void> {
      const delivery = await hellos.add({ deviceId, hashes });
      await delivery.done;
    },

    /**
     * After a fleet write: the fleet's connected devices take it now, in the background and a
     * bounded number at a time, so that the API answers at once whatever the fleet's size.
     */
    fleetChanged(product: ProductRecord): void {
      void (async () => {
        const online = await deps.valuesRepo.fleetDevices(product.id, { onlineOnly: true });
        if (online.length === 0) return;
        const since = new Map(online.map((d) => [d.id, gen(d.id)]));
        const effective = await deps.values.devices(product, online);
        const held = await deps.state.heldByProduct(product.id);
        const hashOf = memoHash();
        let next = 0;
        await Promise.all(Array.from({ length: Math.min(deps.fanOut ?? 256, online.length) }, async () => {
          while (next < online.length) {
            const id = (online[next++] as { id: string }).id;
            const values = effective.get(id)?.values ?? {};
            await serial(id, async (stale) => deliver(id, values, stale ? await deps.state.held(id) : held.get(id) ?? new Map(), undefined, hashOf), since.get(id))
              .catch((err) => deps.log().warn({ err, device: id }, 'configuration delivery failed'));
          }
        }));
      })().catch((err) => deps.log().warn({ err, product: product.id }, 'configuration fan-out failed'));
    },
  };
}

export type ConfigDeliveryService = ReturnType<typeof createConfigDeliveryService>;

export function rejectedError(results: ModuleResult[]): DomainError {
  return new DomainError('device_rejected_configuration', 'The device refused part of the configuration', { details: { results } });
}
