import { DomainError } from '../domain/errors.js';
import { configAjv } from '../domain/config/schema-rules.js';
import { effectiveConfig, oversizedModules, schemaDefaults, validateValues, type Source, type Values, type WriteScope } from '../domain/config/values.js';
import { publishLimit } from '../domain/device-protocol.js';
import type { Clock } from '../platform/clock.js';
import type { Db } from '../storage/db.js';
import type { ConfigValuesRepository, FleetDevice } from '../repositories/config-values.repository.js';
import type { ConfigHistoryRepository, HistoryEntry } from '../repositories/config-history.repository.js';
import type { DeviceRecord } from '../repositories/devices.repository.js';
import type { ProductRecord } from '../repositories/products.repository.js';
import type { ConfigSchemaService } from './config-schema.service.js';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

const refused = (violations: Array<{ path: string; message: string; params?: Record<string, unknown> }>) =>
  new DomainError('invalid_configuration', `The configuration breaks ${violations.length} rule${violations.length === 1 ? '' : 's'}; nothing was changed`, { details: { message: 'Invalid configuration', violations } });

/** Who makes a change, and whether it restores an earlier version (history). */
export interface ChangeInfo { actor: { kind: string; id: string }; rolledBackFrom?: number }

/** What a write would do: the values it would leave, and the devices whose configuration would change. */
export interface Preview {
  dry_run: true;
  configuration: Values;
  devices: { changed: number; online: number; modules: Record<string, number> };
}

type Effective = ReturnType<typeof effectiveConfig>;

function preview(configuration: Values, devices: FleetDevice[], before: Map<string, Effective>, after: Map<string, Effective>): Preview {
  const out: Preview = { dry_run: true, configuration, devices: { changed: 0, online: 0, modules: {} } };
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

const moduleNames = (schema: Json): string[] => Object.keys((schema.properties ?? {}) as Json);

/** Only the modules the schema in force has: values of removed modules are kept aside. */
function inSchema(schema: Json, values: Values): Values {
  const props = (schema.properties ?? {}) as Json;
  return Object.fromEntries(Object.entries(values).filter(([m]) => m in props));
}

/**
 * Configuration values of a product's fleet and of its devices (SPEC.md §2.5, §3.2, §4.6):
 * whole-object writes checked against the schema in force, the development-device rules, resets,
 * and the effective configuration of a device. Delivery to devices is the gateway's (next).
 */
export function createConfigValuesService(deps: { db: Db; repo: ConfigValuesRepository; history: ConfigHistoryRepository; schemas: ConfigSchemaService; clock: Clock }) {
  const entryOf = (product: ProductRecord, deviceId: string | null, values: Values, change: ChangeInfo): Omit<HistoryEntry, 'version'> => ({
    productId: product.id, kind: 'values', deviceId, document: JSON.stringify(values),
    action: change.rolledBackFrom !== undefined ? 'rollback' : Object.keys(values).length === 0 ? 'reset' : 'write',
    rolledBackFrom: change.rolledBackFrom ?? null, actor: change.actor, createdAt: deps.clock.now(),
  });

  const ajv = configAjv();
  // Parsed schemas by their text: a reconnect storm reads the same schema for every device.
  const parsed = new Map<string, Json>();
  const schemaOf = async (product: ProductRecord): Promise<Json> => {
    const { text } = await deps.schemas.current(product);
    let schema = parsed.get(text);
    if (!schema) {
      if (parsed.size >= 32) parsed.delete(parsed.keys().next().value as string);
      parsed.set(text, (schema = JSON.parse(text) as Json));
    }
    return schema;
  };

  /** A body as written: empty means reset; otherwise a JSON object of modules. */
  function parseBody(body: unknown): Values | null {
    if (body === undefined || body === null || body === '') return null;
    if (typeof body !== 'object' || Array.isArray(body)) throw refused([{ path: '', message: 'Configuration values are a JSON object of modules' }]);
    return Object.keys(body).length === 0 ? null : (body as Values);
  }

  function check(schema: Json, values: Values, scope: WriteScope, limit: number): void {
    const violations = validateValues(schema, values, scope, ajv);
    for (const o of oversizedModules(values, limit)) {
      violations.push({ path: `/${o.module}`, message: `Module ${o.module} is ${o.bytes} bytes in one device message; the limit is ${o.limit}`, params: { bytes: o.bytes, limit: o.limit } });
    }
    if (violations.length > 0) throw refused(violations);
  }

  /** What a device's configuration is made of (its own values, the fleet's, whose win), and the result. */
  async function deviceInputs(product: ProductRecord, device: DeviceRecord) {
    const schema = await schemaOf(product);
    const own = inSchema(schema, await deps.repo.device(product.id, device.id));
    const fleet = inSchema(schema, await deps.repo.fleet(product.id));
    const deviceValuesWin = device.development || (await deps.repo.ownWins(device.id));
    return { own, fleet, deviceValuesWin, ...effectiveConfig({ schema, fleet, device: own, deviceValuesWin, firmwareVersion: device.firmwareVersion }) };
  }

  /** The smallest publish limit among the fleet's devices: a fleet module must reach them all. */
  async function fleetLimit(product: ProductRecord): Promise<number> {
    const versions = await deps.repo.fleetOsVersions(product.id);
    return versions.length === 0 ? 1024 : Math.min(...versions.map((v) => publishLimit(v.system_firmware_version, v.platform_id)));
  }

  async function fleetView(product: ProductRecord, schema: Json): Promise<Values> {
    const stored = inSchema(schema, await deps.repo.fleet(product.id));
    const defaults = schemaDefaults(schema, { deviceLevelOnly: false });
    return Object.fromEntries(Object.entries(defaults).map(([m, d]) => [m, stored[m] ? { ...d, ...stored[m] } : d]));
  }

  return {
    /** GET /v1/products/:p/config: the fleet's values, device-level-only modules never shown. */
    async fleet(product: ProductRecord): Promise<{ configuration: Values }> {
      return { configuration: await fleetView(product, await schemaOf(product)) };
    },

    /** PUT /v1/products/:p/config: replace the fleet's values; an empty body resets to defaults. */
    async setFleet(product: ProductRecord, body: unknown, change: ChangeInfo): Promise<{ configuration: Values; version: number }> {
      const schema = await schemaOf(product);
      const values = parseBody(body) ?? {};
      check(schema, values, { kind: 'fleet' }, await fleetLimit(product));
      const version = await deps.db.transaction(async (tx) => {
        await deps.repo.lockProduct(product.id, tx);
        await deps.repo.replace(product.id, '', values, moduleNames(schema), deps.clock.now(), tx);
        await deps.repo.fleetChanged(product.id, tx);
        return deps.history.append(tx, entryOf(product, null, values, change));
      });
      return { configuration: await fleetView(product, schema), version };
    },

    /** A fleet write checked (sizes too) and what it would change, without storing anything. */
    async previewFleet(product: ProductRecord, body: unknown): Promise<Preview> {
      const schema = await schemaOf(product);
      const values = parseBody(body) ?? {};
      check(schema, values, { kind: 'fleet' }, await fleetLimit(product));
      const fleet = await deps.repo.fleetDevices(product.id, { onlineOnly: false });
      const [before, after] = await Promise.all([this.devices(product, fleet), this.devices(product, fleet, { fleet: values })]);
      const view = Object.fromEntries(Object.entries(schemaDefaults(schema, { deviceLevelOnly: false })).map(([m, d]) => [m, values[m] ? { ...d, ...values[m] } : d]));
      return preview(view, fleet, before, after);
    },

    /** The device's own values, its effective configuration and where each module comes from. */
    async device(product: ProductRecord, device: DeviceRecord) {
      const { own, values, sources, outsideFirmware } = await deviceInputs(product, device);
      return { own, values, sources, outsideFirmware };
    },

    /**
     * The effective configuration of many devices of a product: the schema, the fleet and the
     * devices' own values are read once, not once per device (a fan-out to thousands). `instead`
     * puts values not (yet) stored in place of the stored ones, for a dry run.
     */
    async devices(product: ProductRecord, devices: FleetDevice[], instead: { fleet?: Values; device?: { id: string; values: Values } } = {}) {
      const schema = await schemaOf(product);
      const fleet = inSchema(schema, instead.fleet ?? await deps.repo.fleet(product.id));
      // A few devices (a batch of connects, a dry run) read their own values; a fleet reads all at once.
      const owns = await deps.repo.devicesValues(product.id, devices.length <= 1000 ? devices.map((d) => d.id) : undefined);
      if (instead.device) owns.set(instead.device.id, instead.device.values);
      // A fleet write returns regular devices to the fleet (SPEC.md §3.2).
      const ownWins = (d: FleetDevice) => d.development || (d.ownWins && !instead.fleet);
      // Devices without values of their own and with the same firmware take the same
      // configuration: computed once, and shared (the same objects, so hashes are too).
      const shared = new Map<string, Effective>();
      return new Map(devices.map((d) => {
        const mine = owns.get(d.id);
        if (!mine) {
          const key = String(d.firmwareVersion);
          let e = shared.get(key);
          if (!e) shared.set(key, (e = effectiveConfig({ schema, fleet, device: {}, deviceValuesWin: false, firmwareVersion: d.firmwareVersion })));
          return [d.id, e];
        }
        return [d.id, effectiveConfig({ schema, fleet, device: inSchema(schema, mine), deviceValuesWin: ownWins(d), firmwareVersion: d.firmwareVersion })];
      }));
    },

    /**
     * Explain: every setting of the device's effective configuration, as a JSON pointer, with its
     * value and where it comes from: the device's own values, the fleet's, or the schema default
     * (a key a chosen module object leaves out takes its default).
     */
    async explain(product: ProductRecord, device: DeviceRecord) {
      const { own, fleet, deviceValuesWin, ...eff } = await deviceInputs(product, device);
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

    /** PUT /v1/products/:p/config/:deviceId: replace the device's own values; empty resets to inheritance. */
    async setDevice(product: ProductRecord, device: DeviceRecord, body: unknown, change: ChangeInfo) {
      const schema = await schemaOf(product);
      const values = parseBody(body) ?? {};
      check(schema, values, { kind: 'device', development: device.development }, publishLimit(device.systemFirmwareVersion, device.platformId));
      const version = await deps.db.transaction(async (tx) => {
        await deps.repo.lockProduct(product.id, tx);
        await deps.repo.replace(product.id, device.id, values, moduleNames(schema), deps.clock.now(), tx);
        return deps.history.append(tx, entryOf(product, device.id, values, change));
      });
      return { ...(await this.device(product, device)), version };
    },

    /** A device write checked and what it would change on the device, without storing anything. */
    async previewDevice(product: ProductRecord, device: DeviceRecord, body: unknown): Promise<Preview> {
      const schema = await schemaOf(product);
      const values = parseBody(body) ?? {};
      check(schema, values, { kind: 'device', development: device.development }, publishLimit(device.systemFirmwareVersion, device.platformId));
      const one = (await deps.repo.fleetDevices(product.id, { onlineOnly: false })).filter((d) => d.id === device.id);
      const [before, after] = await Promise.all([this.devices(product, one), this.devices(product, one, { device: { id: device.id, values } })]);
      return preview(after.get(device.id)?.values ?? {}, one, before, after);
    },
  };
}

export type ConfigValuesService = ReturnType<typeof createConfigValuesService>;
