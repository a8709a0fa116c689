import { DomainError } from '../../domain/errors.js';
import { defaultSchema } from '../../domain/config/default-schema.js';
import { publishLimit } from '../../domain/device-protocol.js';
import { effectiveConfig, schemaDefaults, type Values } from '../../domain/config/values.js';
import { inSchema } from '../../domain/config/writes.js';
import type { Queryable } from '../../storage/db.js';
import type { ConfigHistoryRepository } from '../../repositories/config-history.repository.js';
import type { ConfigSchemasRepository } from '../../repositories/config-schemas.repository.js';
import type { ConfigValuesRepository } from '../../repositories/config-values.repository.js';
import type { DevicesRepository, FleetDevice } from '../../repositories/devices.repository.js';

type Json = Record<string, unknown>;

export const deviceNotInProduct = () => new DomainError('not_found', 'Device not found for this product');

/** The schema in force for a product: its text as stored (key order is display order), parsed. */
export interface SchemaInForce { text: string; custom: boolean; schema: Json }

/** What a device's configuration is made of, and the result (effectiveConfig). */
export type Effective = ReturnType<typeof effectiveConfig>;

/**
 * Reads a product's configuration as it is committed: the schema in force, the fleet's values,
 * devices' own values, and from them the effective configuration of one device or of many. Every
 * read takes an optional `q`, so that a write reads inside its own transaction (under the
 * product's lock) what it validates against.
 */
export function createConfigReader(deps: { schemas: ConfigSchemasRepository; values: ConfigValuesRepository; devices: DevicesRepository; history: ConfigHistoryRepository }) {
  const defaultText = JSON.stringify(defaultSchema());
  // Parsed schemas by their text: a reconnect storm reads the same schema for every device.
  const parsed = new Map<string, Json>();
  const parse = (text: string): Json => {
    let schema = parsed.get(text);
    if (!schema) {
      if (parsed.size >= 32) parsed.delete(parsed.keys().next().value as string);
      parsed.set(text, (schema = JSON.parse(text) as Json));
    }
    return schema;
  };

  async function schema(productId: number, q?: Queryable): Promise<SchemaInForce> {
    const stored = await deps.schemas.find(productId, q);
    const text = stored ? stored.schemaText : defaultText;
    return { text, custom: stored !== undefined, schema: parse(text) };
  }

  /** The fleet's stored values of the modules the schema has. */
  const fleetValues = async (productId: number, s: Json, q?: Queryable): Promise<Values> => inSchema(s, await deps.values.fleet(productId, q));

  /** The fleet's values as the API shows them: every fleet module, filled with its defaults; device-level-only modules never. */
  function fleetView(s: Json, stored: Values): Values {
    const defaults = schemaDefaults(s, { deviceLevelOnly: false });
    return Object.fromEntries(Object.entries(defaults).map(([m, d]) => [m, stored[m] ? { ...d, ...stored[m] } : d]));
  }

  /** What one device's configuration is made of (its own values, the fleet's, whose win) and the result. */
  async function device(productId: number, d: FleetDevice) {
    // The schema, the fleet's values and the device's own in one read, as for many devices.
    const inputs = await deps.values.inputs(productId, [d.id]);
    const s = parse(inputs.schemaText ?? defaultText);
    const own = inSchema(s, inputs.devices.get(d.id) ?? {});
    const fleet = inSchema(s, inputs.fleet);
    const deviceValuesWin = d.development || d.ownWins;
    return { own, fleet, deviceValuesWin, ...effectiveConfig({ schema: s, fleet, device: own, deviceValuesWin, firmwareVersion: d.firmwareVersion }) };
  }

  return {
    schema,
    fleetValues,
    fleetView,
    device,

    /** The product's newest configuration version: read before values, it says which later writes a reader may have missed. */
    version: (productId: number): Promise<number> => deps.history.latest(productId),

    /** A device of the product as configuration sees it; not_found once it is not in the product. */
    async fleetDevice(productId: number, deviceId: string): Promise<FleetDevice> {
      const d = await deps.devices.fleetDevice(deviceId);
      if (!d || d.productId !== productId) throw deviceNotInProduct();
      return d;
    },

    /** The smallest publish limit among the fleet's devices: a fleet module must reach them all. */
    async fleetPublishLimit(productId: number, q?: Queryable): Promise<number> {
      const versions = await deps.devices.deviceOsVersions(productId, q);
      return versions.length === 0 ? 1024 : Math.min(...versions.map((v) => publishLimit(v.systemFirmwareVersion, v.platformId)));
    },

    /**
     * The effective configuration of many devices of a product: the schema, the fleet and the
     * devices' own values are read once, not once per device (a fan-out to thousands). `instead`
     * puts values not (yet) stored in place of the stored ones, for a dry run.
     */
    async effective(productId: number, devices: FleetDevice[], instead: { fleet?: Values; device?: { id: string; values: Values } } = {}): Promise<Map<string, Effective>> {
      // The schema and the values in one read. A few devices (a batch of connects, a dry run)
      // read their own values; a fleet reads all at once.
      const inputs = await deps.values.inputs(productId, devices.length <= 1000 ? devices.map((d) => d.id) : undefined);
      const s = parse(inputs.schemaText ?? defaultText);
      const fleet = inSchema(s, instead.fleet ?? inputs.fleet);
      const owns = inputs.devices;
      if (instead.device) owns.set(instead.device.id, instead.device.values);
      // A fleet write returns regular devices to the fleet (docs/api.md, "Effective configuration").
      const ownWins = (d: FleetDevice) => d.development || (d.ownWins && !instead.fleet);
      // Devices without values of their own and with the same firmware take the same
      // configuration: computed once, and shared (the same objects, so hashes are too).
      const shared = new Map<string, Effective>();
      return new Map(devices.map((d) => {
        const mine = owns.get(d.id);
        if (!mine) {
          const key = String(d.firmwareVersion);
          let e = shared.get(key);
          if (!e) shared.set(key, (e = effectiveConfig({ schema: s, fleet, device: {}, deviceValuesWin: false, firmwareVersion: d.firmwareVersion })));
          return [d.id, e];
        }
        return [d.id, effectiveConfig({ schema: s, fleet, device: inSchema(s, mine), deviceValuesWin: ownWins(d), firmwareVersion: d.firmwareVersion })];
      }));
    },
  };
}

export type ConfigReader = ReturnType<typeof createConfigReader>;
