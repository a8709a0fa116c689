import { createHash } from 'node:crypto';
import { DomainError, isDomainError } from '../domain/errors.js';
import type { Bus } from '../bus/bus.js';
import type { Clock } from '../platform/clock.js';
import type { Log } from '../platform/log.js';
import type { ConfigValuesRepository } from '../repositories/config-values.repository.js';
import type { DeviceConfigStateRepository } from '../repositories/device-config-state.repository.js';
import type { DeviceRecord, DevicesRepository } from '../repositories/devices.repository.js';
import type { ProductRecord, ProductsRepository } from '../repositories/products.repository.js';
import type { ConfigValuesService } from './config-values.service.js';

type Json = Record<string, unknown>;

/** The hash of a module's value that the cloud sends with it and the device reports back. */
export const moduleHash = (value: Json): string => createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 16);

export type ModuleResult = { module: string; status: 'in_sync' } | { module: string; status: 'rejected'; code: number } | { module: string; status: 'pending'; reason: 'offline' | 'timeout' };

/**
 * Delivery of configuration to devices (docs/device-protocol.md, "Configuration"; DESIGN.md):
 * a device reports the hash of each module it holds when it connects; the cloud sends, one module
 * per message, each module whose effective value differs; the device applies it and answers a
 * status, which is recorded. Fleet changes go at once to the fleet's connected devices; others
 * get them when they next connect.
 */
export function createConfigDeliveryService(deps: {
  bus: Bus; values: ConfigValuesService; state: DeviceConfigStateRepository; valuesRepo: ConfigValuesRepository;
  devices: DevicesRepository; products: ProductsRepository; clock: Clock; log: () => Log; timeoutMs: number;
}) {
  /**
   * Sends what differs from what the device holds; stops at the first module the device does not
   * answer. `reported` is what the device said at connect; without it (a change while connected),
   * a value the device already refused is not sent again.
   */
  async function sync(product: ProductRecord, device: DeviceRecord, reported?: Record<string, string>): Promise<ModuleResult[]> {
    const { values } = await deps.values.device(product, device);
    const held = await deps.state.held(device.id);
    const results: ModuleResult[] = [];
    let unreachable: 'offline' | 'timeout' | null = null;
    for (const [module, value] of Object.entries(values)) {
      const hash = moduleHash(value);
      const holds = reported ? reported[module] : held.get(module)?.hash;
      if (holds === hash) {
        if (held.get(module)?.hash !== hash || held.get(module)?.status !== 'in_sync') await deps.state.record(device.id, { module, hash, value, status: 'in_sync', code: null }, deps.clock.now());
        continue;
      }
      if (!reported && held.get(module)?.status === 'rejected' && held.get(module)?.refusedHash === hash) continue;
      if (!reported && held.get(module)?.status === 'rejected' && held.get(module)?.refusedHash === hash) continue;
      if (unreachable) { results.push({ module, status: 'pending', reason: unreachable }); continue; }
      try {
        const answer = await deps.bus.send(device.id, { kind: 'config', module, value, hash }, deps.timeoutMs);
        const code = answer.ok ? Number(answer.value) : -1;
        if (code === 0) {
          await deps.state.record(device.id, { module, hash, value, status: 'in_sync', code: null }, deps.clock.now());
          results.push({ module, status: 'in_sync' });
        } else {
          await deps.state.record(device.id, { module, hash, value, status: 'rejected', code }, deps.clock.now());
          results.push({ module, status: 'rejected', code });
        }
      } catch (err) {
        if (!isDomainError(err) || !['device_offline', 'device_timeout', 'device_error'].includes(err.code)) throw err;
        unreachable = err.code === 'device_timeout' ? 'timeout' : 'offline';
        results.push({ module, status: 'pending', reason: unreachable });
      }
    }
    return results;
  }

  return {
    sync,

    /** `{current, pending}`: what the device confirmed, and what it has yet to take. */
    async status(product: ProductRecord, device: DeviceRecord) {
      const { values, sources, outsideFirmware } = await deps.values.device(product, device);
      const held = await deps.state.held(device.id);
      const current: Record<string, Json> = {};
      const pending: Record<string, Json> = {};
      const rejected: Record<string, number> = {};
      for (const [module, value] of Object.entries(values)) {
        const h = held.get(module);
        if (h?.status === 'in_sync' && h.value) current[module] = h.value;
        if (h?.hash !== moduleHash(value) || h.status !== 'in_sync') pending[module] = value;
        if (h?.status === 'rejected' && h.code !== null) rejected[module] = h.code;
      }
      return { configuration: { current, pending }, sources, rejected, outside_firmware_range: outsideFirmware };
    },

    /** A device connected and reported its hashes. */
    async onHello(deviceId: string, hashes: Record<string, string>): Promise<void> {
      const device = await deps.devices.findById(deviceId);
      if (!device || device.productId === null) return;
      const product = await deps.products.find({ id: device.productId });
      if (product) await sync(product, device, hashes);
    },

    /** After a fleet write: the fleet's connected devices take it now (in the background). */
    fleetChanged(product: ProductRecord): void {
      void (async () => {
        const ids = await deps.valuesRepo.onlineDevices(product.id);
        let next = 0;
        await Promise.all(Array.from({ length: Math.min(64, ids.length) }, async () => {
          while (next < ids.length) {
            const device = await deps.devices.findById(ids[next++] as string);
            if (device && device.productId === product.id) await sync(product, device).catch((err) => deps.log().warn({ err, device: device.id }, 'configuration delivery failed'));
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
