import { schemaVersion } from '../../domain/config/default-schema.js';
import { configAjv } from '../../domain/config/schema-rules.js';
import type { Values } from '../../domain/config/values.js';
import type { PreviewView } from '../../domain/config/views.js';
import { outsideSchema, schemaOfWrite, valuesOfWrite } from '../../domain/config/writes.js';
import { publishLimit } from '../../domain/device-protocol.js';
import type { ConfigValuesRepository } from '../../repositories/config-values.repository.js';
import type { DevicesRepository, FleetDevice } from '../../repositories/devices.repository.js';
import { deviceNotInProduct, type ConfigReader, type Effective } from './reader.js';


function preview(configuration: Values, devices: FleetDevice[], before: Map<string, Effective>, after: Map<string, Effective>): PreviewView {
  const out: PreviewView = { dry_run: true, configuration, devices: { changed: 0, online: 0, modules: {} } };
  for (const d of devices) {
    const a = before.get(d.id)?.values ?? {};
    const b = after.get(d.id)?.values ?? {};
    const modules = Object.keys(b).filter((m) => JSON.stringify(a[m]) !== JSON.stringify(b[m]));
    if (modules.length === 0) continue;
    out.devices.changed += 1;
    if (d.online) out.devices.online += 1;
    for (const m of modules) out.devices.modules[m] = (out.devices.modules[m] ?? 0) + 1;
  }
  return out;
}

/**
 * Dry runs (`?dry_run=true`, docs/api.md): a write checked exactly as it would be, and what it
 * would change, without storing, recording or sending anything.
 */
export function createConfigPreviews(deps: { reader: ConfigReader; values: ConfigValuesRepository; devices: DevicesRepository }) {
  const ajv = configAjv();
  return {
    /** A fleet write: the values it would leave, and the devices whose configuration would change. */
    async fleet(productId: number, body: unknown): Promise<PreviewView> {
      const { schema } = await deps.reader.schema(productId);
      const values = valuesOfWrite(schema, body, { kind: 'fleet' }, await deps.reader.fleetPublishLimit(productId), ajv);
      const fleet = await deps.devices.fleetDevices(productId);
      const [before, after] = await Promise.all([deps.reader.effective(productId, fleet), deps.reader.effective(productId, fleet, { fleet: values })]);
      return preview(deps.reader.fleetView(schema, values), fleet, before, after);
    },

    /** A device write: what it would change on the device. */
    async device(productId: number, deviceId: string, body: unknown): Promise<PreviewView> {
      const one = await deps.reader.fleetDevice(productId, deviceId);
      const device = await deps.devices.findById(deviceId);
      if (!device) throw deviceNotInProduct();
      const { schema } = await deps.reader.schema(productId);
      const values = valuesOfWrite(schema, body, { kind: 'device', development: device.development }, publishLimit(device.systemFirmwareVersion, device.platformId), ajv);
      const [before, after] = await Promise.all([deps.reader.effective(productId, [one]), deps.reader.effective(productId, [one], { device: { id: deviceId, values } })]);
      return preview(after.get(deviceId)?.values ?? {}, [one], before, after);
    },

    /** A schema: checked, and the stored values it would set aside. */
    async schema(productId: number, body: string) {
      const parsed = schemaOfWrite(body, ajv);
      return { dry_run: true as const, version: schemaVersion(parsed), kept_aside: outsideSchema(parsed, await deps.values.storedModules(productId)) };
    },
  };
}

export type ConfigPreviews = ReturnType<typeof createConfigPreviews>;
