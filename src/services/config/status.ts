import { memoHash, moduleHash, standing } from '../../domain/config/module-hash.js';
import type { Source } from '../../domain/config/values.js';
import type { DeviceConfigView, ExplainView, ModuleDelivery, RolloutView } from '../../domain/config/views.js';
import type { ConfigValuesRepository } from '../../repositories/config-values.repository.js';
import type { DeviceConfigStateRepository } from '../../repositories/device-config-state.repository.js';
import type { DevicesRepository } from '../../repositories/devices.repository.js';
import type { ConfigReader } from './reader.js';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Where configuration stands: one device's (what it confirmed, what it has yet to take, where
 * each setting comes from) and a fleet's rollout (docs/api.md, "Delivery", "Rollout", "Explain").
 */
export function createConfigStatus(deps: { reader: ConfigReader; state: DeviceConfigStateRepository; values: ConfigValuesRepository; devices: DevicesRepository }) {
  return {
    /** `{current, pending}`: what the device confirmed, and what it has yet to take. */
    async device(productId: number, deviceId: string): Promise<DeviceConfigView> {
      const device = await deps.reader.fleetDevice(productId, deviceId);
      const { own, values, sources, outsideFirmware } = await deps.reader.device(productId, device);
      const held = await deps.state.held(device.id);
      const written = await deps.values.writtenAt(productId, device.id);
      const view: DeviceConfigView = { configuration: { current: {}, pending: {} }, own, sources, rejected: {}, delivery: {}, outside_firmware_range: outsideFirmware };
      const states = standing(values, held);
      for (const [module, value] of Object.entries(values)) {
        const h = held.get(module);
        const state = states[module] ?? 'pending';
        if (h?.status === 'in_sync' && h.value) view.configuration.current[module] = h.value;
        if (state !== 'in_sync') view.configuration.pending[module] = value;
        if (h?.status === 'rejected' && h.code !== null) view.rejected[module] = h.code;
        // Pending since the write that made the value the device has yet to take (null: a
        // default the device never took, since it joined).
        const since = state === 'pending' ? written.get(`${sources[module] === 'device' ? device.id : ''}/${module}`) ?? null : h?.updatedAt ?? null;
        const delivery: ModuleDelivery = {
          state, desired_hash: moduleHash(value), held_hash: h?.hash ?? null,
          code: state === 'rejected' ? h?.code ?? null : null, since: since ? since.toISOString() : null,
        };
        view.delivery[module] = delivery;
      }
      return view;
    },

    /** The fleet's rollout: devices (and modules) in sync, pending, or refused by the device. */
    async rollout(productId: number): Promise<RolloutView> {
      const fleet = await deps.devices.fleetDevices(productId);
      const effective = await deps.reader.effective(productId, fleet);
      const held = await deps.state.heldByProduct(productId);
      const hashOf = memoHash();
      const out: RolloutView = { devices: fleet.length, in_sync: 0, pending: 0, pending_online: 0, rejected: 0, modules: {} };
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
     * Explain: every setting of the device's effective configuration, as a JSON pointer, with its
     * value and where it comes from: the device's own values, the fleet's, or the schema default
     * (a key a chosen module object leaves out takes its default).
     */
    async explain(productId: number, deviceId: string): Promise<ExplainView> {
      const device = await deps.reader.fleetDevice(productId, deviceId);
      const { own, fleet, deviceValuesWin, ...eff } = await deps.reader.device(productId, device);
      const settings: Array<{ path: string; value: unknown; source: Source }> = [];
      const walk = (value: unknown, raw: unknown, source: Source, path: string) => {
        if (isObject(value) && Object.keys(value).length > 0) {
          for (const [k, v] of Object.entries(value)) walk(v, isObject(raw) ? raw[k] : undefined, source, `${path}/${k}`);
        } else settings.push({ path, value, source: raw === undefined ? 'default' : source });
      };
      for (const [m, value] of Object.entries(eff.values)) {
        const source = eff.sources[m] as Source;
        walk(value, source === 'device' ? own[m] : source === 'fleet' ? fleet[m] : undefined, source, `/${m}`);
      }
      return {
        development: device.development, device_values_win: deviceValuesWin, firmware_version: device.firmwareVersion,
        modules: eff.sources, settings, outside_firmware_range: eff.outsideFirmware,
      };
    },
  };
}

export type ConfigStatus = ReturnType<typeof createConfigStatus>;
