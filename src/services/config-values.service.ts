import { DomainError } from '../domain/errors.js';
import { configAjv } from '../domain/config/schema-rules.js';
import { effectiveConfig, oversizedModules, schemaDefaults, validateValues, type Values, type WriteScope } from '../domain/config/values.js';
import { publishLimit } from '../domain/device-protocol.js';
import type { Clock } from '../platform/clock.js';
import type { Db } from '../storage/db.js';
import type { ConfigValuesRepository } from '../repositories/config-values.repository.js';
import type { DeviceRecord } from '../repositories/devices.repository.js';
import type { ProductRecord } from '../repositories/products.repository.js';
import type { ConfigSchemaService } from './config-schema.service.js';

type Json = Record<string, unknown>;

const refused = (violations: Array<{ path: string; message: string; params?: Record<string, unknown> }>) =>
  new DomainError('invalid_configuration', `The configuration breaks ${violations.length} rule${violations.length === 1 ? '' : 's'}; nothing was changed`, { details: { message: 'Invalid configuration', violations } });

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
export function createConfigValuesService(deps: { db: Db; repo: ConfigValuesRepository; schemas: ConfigSchemaService; clock: Clock }) {
  const ajv = configAjv();
  const schemaOf = async (product: ProductRecord) => JSON.parse((await deps.schemas.current(product)).text) as Json;

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
    async setFleet(product: ProductRecord, body: unknown): Promise<{ configuration: Values }> {
      const schema = await schemaOf(product);
      const values = parseBody(body) ?? {};
      const versions = await deps.repo.fleetOsVersions(product.id);
      const limit = versions.length === 0 ? 1024 : Math.min(...versions.map((v) => publishLimit(v.system_firmware_version, v.platform_id)));
      check(schema, values, { kind: 'fleet' }, limit);
      await deps.db.transaction(async (tx) => {
        await deps.repo.replace(product.id, '', values, deps.clock.now(), tx);
        await deps.repo.fleetChanged(product.id, tx);
      });
      return { configuration: await fleetView(product, schema) };
    },

    /** The device's own values, its effective configuration and where each module comes from. */
    async device(product: ProductRecord, device: DeviceRecord) {
      const schema = await schemaOf(product);
      const own = inSchema(schema, await deps.repo.device(product.id, device.id));
      const fleet = inSchema(schema, await deps.repo.fleet(product.id));
      const deviceValuesWin = device.development || (await deps.repo.ownWins(device.id));
      return { own, ...effectiveConfig({ schema, fleet, device: own, deviceValuesWin, firmwareVersion: device.firmwareVersion }) };
    },

    /** PUT /v1/products/:p/config/:deviceId: replace the device's own values; empty resets to inheritance. */
    async setDevice(product: ProductRecord, device: DeviceRecord, body: unknown) {
      const schema = await schemaOf(product);
      const values = parseBody(body) ?? {};
      check(schema, values, { kind: 'device', development: device.development }, publishLimit(device.systemFirmwareVersion, device.platformId));
      await deps.db.transaction(async (tx) => deps.repo.replace(product.id, device.id, values, deps.clock.now(), tx));
      return this.device(product, device);
    },
  };
}

export type ConfigValuesService = ReturnType<typeof createConfigValuesService>;
