import { DomainError, isDomainError } from '../../domain/errors.js';
import { defaultSchema, schemaVersion } from '../../domain/config/default-schema.js';
import { configAjv } from '../../domain/config/schema-rules.js';
import type { Values } from '../../domain/config/values.js';
import type { DeviceConfigView } from '../../domain/config/views.js';
import { moduleNames, outsideSchema, schemaOfWrite, valuesOfWrite } from '../../domain/config/writes.js';
import { publishLimit } from '../../domain/device-protocol.js';
import type { Clock } from '../../platform/clock.js';
import type { Db, Tx } from '../../storage/db.js';
import type { ConfigHistoryRepository, HistoryEntry } from '../../repositories/config-history.repository.js';
import type { ConfigSchemasRepository } from '../../repositories/config-schemas.repository.js';
import type { ConfigValuesRepository } from '../../repositories/config-values.repository.js';
import type { DevicesRepository } from '../../repositories/devices.repository.js';
import type { ProductRecord, ProductsRepository } from '../../repositories/products.repository.js';
import type { AuditService } from '../audit.service.js';
import type { ModuleResult } from './delivery.js';
import { documentOf } from './history.js';
import { deviceNotInProduct, type ConfigReader, type SchemaInForce } from './reader.js';
import type { ConfigDelivery } from './routing.js';
import type { ConfigStatus } from './status.js';

type Json = Record<string, unknown>;

/** Who makes a change: the account (a user or a product token) and the address it came from. */
export interface Author { account: { kind: 'user' | 'product' | 'customer'; id: string }; ip: string }

/** A device write's outcome: `applied` when the connected device took every module, else it is offline and takes it at its next connect. */
export interface DeviceWrite { applied: boolean; view: DeviceConfigView & { version: number } }

/** A schema write's outcome: its version, the history version, and the stored values it sets aside. */
export interface SchemaWrite { version?: number | null; history_version: number; kept_aside: string[] }

/** What a rollback did: the same as the write it repeats. */
export type Rollback =
  | { scope: 'schema'; version: number; answer: SchemaWrite }
  | { scope: 'fleet'; answer: { configuration: Values; version: number } }
  | { scope: 'device'; answer: DeviceWrite };

function rejectedError(results: ModuleResult[]): DomainError {
  return new DomainError('device_rejected_configuration', 'The device refused part of the configuration', { details: { results } });
}

/**
 * Every change of a product's configuration as one use case (docs/architecture.md,
 * "Configuration"): in one transaction, under the product's lock, validate against the schema in
 * force once the write has its turn, store, and append to the history; once committed, hand the
 * change to delivery. Routes call one operation each, and never deliver themselves.
 */
export function createConfigWrites(deps: {
  db: Db; reader: ConfigReader; status: ConfigStatus; delivery: ConfigDelivery; audit: AuditService; clock: Clock;
  values: ConfigValuesRepository; schemas: ConfigSchemasRepository; history: ConfigHistoryRepository; products: ProductsRepository; devices: DevicesRepository;
}) {
  const ajv = configAjv();

  /** A write's transaction: the product's lock first, then the schema in force, read inside it. */
  const write = <T>(productId: number, work: (tx: Tx, inForce: SchemaInForce) => Promise<T>): Promise<T> =>
    deps.db.transaction(async (tx) => {
      await deps.products.lockForConfiguration(productId, tx);
      return work(tx, await deps.reader.schema(productId, tx));
    });

  function record(tx: Tx, productId: number, scope: { kind: 'values'; deviceId: string | null } | { kind: 'schema' }, document: string | null, reset: boolean, by: Author, rolledBackFrom?: number): Promise<number> {
    const entry: Omit<HistoryEntry, 'version'> = {
      productId, kind: scope.kind, deviceId: scope.kind === 'values' ? scope.deviceId : null, document,
      action: rolledBackFrom !== undefined ? 'rollback' : reset ? 'reset' : 'write',
      rolledBackFrom: rolledBackFrom ?? null, actor: by.account, createdAt: deps.clock.now(),
    };
    return deps.history.append(tx, entry);
  }

  const keptAside = async (productId: number, schema: Json, tx: Tx): Promise<string[]> => outsideSchema(schema, await deps.values.storedModules(productId, tx));

  async function replaceFleetValues(product: ProductRecord, body: unknown, by: Author, rolledBackFrom?: number) {
    return write(product.id, async (tx, { schema }) => {
      const values = valuesOfWrite(schema, body, { kind: 'fleet' }, await deps.reader.fleetPublishLimit(product.id, tx), ajv);
      await deps.values.replace(product.id, '', values, moduleNames(schema), deps.clock.now(), tx);
      // Regular devices follow the fleet again (docs/api.md, "Effective configuration").
      await deps.devices.followFleet(product.id, tx);
      const version = await record(tx, product.id, { kind: 'values', deviceId: null }, JSON.stringify(values), Object.keys(values).length === 0, by, rolledBackFrom);
      tx.afterCommit(() => void deps.delivery.fleetWriteCommitted(product.id));
      return { configuration: deps.reader.fleetView(schema, values), version };
    });
  }

  async function replaceDeviceValues(product: ProductRecord, deviceId: string, body: unknown, by: Author, rolledBackFrom?: number): Promise<DeviceWrite> {
    let delivered: Promise<ModuleResult[]> = Promise.resolve([]);
    const version = await write(product.id, async (tx, { schema }) => {
      // Whether it is a development device decides what it may take: read under the lock too.
      const device = await deps.devices.findById(deviceId, tx);
      if (!device || device.productId !== product.id) throw deviceNotInProduct();
      const values = valuesOfWrite(schema, body, { kind: 'device', development: device.development }, publishLimit(device.systemFirmwareVersion, device.platformId), ajv);
      await deps.values.replace(product.id, device.id, values, moduleNames(schema), deps.clock.now(), tx);
      const v = await record(tx, product.id, { kind: 'values', deviceId: device.id }, JSON.stringify(values), Object.keys(values).length === 0, by, rolledBackFrom);
      tx.afterCommit(() => { delivered = deps.delivery.deviceWriteCommitted(product.id, device.id, new Set(Object.keys(values))); });
      return v;
    });
    // The answer says what the device did with it (docs/api.md, "Delivery"); the write stands either way.
    const results = await delivered;
    if (results.some((r) => r.status === 'rejected')) throw rejectedError(results);
    if (results.some((r) => r.status === 'pending' && r.reason === 'timeout')) {
      throw new DomainError('device_timeout', 'The device did not acknowledge the configuration in time; the change is stored and stays pending');
    }
    const view = await deps.status.device(product.id, deviceId);
    return { applied: !results.some((r) => r.status === 'pending'), view: { ...view, version } };
  }

  async function replaceSchema(product: ProductRecord, body: string, by: Author, rolledBackFrom?: number): Promise<SchemaWrite> {
    // The rules of a schema do not depend on what is stored: checked before the lock.
    const schema = schemaOfWrite(body, ajv);
    const text = JSON.stringify(schema);
    const done = await write(product.id, async (tx) => {
      await deps.schemas.upsert({ productId: product.id, schemaText: text, updatedAt: deps.clock.now(), updatedBy: `${by.account.kind}:${by.account.id}` }, tx);
      const historyVersion = await record(tx, product.id, { kind: 'schema' }, text, false, by, rolledBackFrom);
      tx.afterCommit(() => void deps.delivery.fleetWriteCommitted(product.id));
      return { history_version: historyVersion, kept_aside: await keptAside(product.id, schema, tx) };
    });
    await deps.audit.record({ account: by.account, type: 'config.schema_replaced', ip: by.ip, details: { product_id: product.id, version: schemaVersion(schema) } });
    return { version: schemaVersion(schema), ...done };
  }

  async function restoreDefaultSchema(product: ProductRecord, by: Author, rolledBackFrom?: number): Promise<SchemaWrite> {
    const done = await write(product.id, async (tx) => {
      if (!(await deps.schemas.delete(product.id, tx))) throw new DomainError('not_found', 'The schema is already the default');
      const historyVersion = await record(tx, product.id, { kind: 'schema' }, null, true, by, rolledBackFrom);
      tx.afterCommit(() => void deps.delivery.fleetWriteCommitted(product.id));
      return { history_version: historyVersion, kept_aside: await keptAside(product.id, defaultSchema(), tx) };
    });
    await deps.audit.record({ account: by.account, type: 'config.schema_restored', ip: by.ip, details: { product_id: product.id } });
    return done;
  }

  return {
    /** PUT /v1/products/:p/config (values): replace the fleet's values; an empty body resets to defaults. */
    replaceFleetValues: (product: ProductRecord, body: unknown, by: Author) => replaceFleetValues(product, body, by),
    /** PUT /v1/products/:p/config/:deviceId: replace the device's own values; an empty body resets to inheritance. */
    replaceDeviceValues: (product: ProductRecord, deviceId: string, body: unknown, by: Author) => replaceDeviceValues(product, deviceId, body, by),
    /** PUT /v1/products/:p/config with Content-Type application/schema+json. */
    replaceSchema: (product: ProductRecord, body: string, by: Author) => replaceSchema(product, body, by),
    /** DELETE /v1/products/:p/config with Content-Type application/schema+json: back to the default (404 when it is). */
    restoreDefaultSchema: (product: ProductRecord, by: Author) => restoreDefaultSchema(product, by),

    /** Writes the document of a history version again to its scope: a new change, delivered like any write. */
    async rollback(product: ProductRecord, version: number, by: Author): Promise<Rollback> {
      const entry = await deps.history.find(product.id, version);
      if (!entry) throw new DomainError('not_found', `The product has no configuration version ${version}`);
      if (entry.kind === 'schema') {
        const answer = entry.document === null
          ? await restoreDefaultSchema(product, by, entry.version).catch((err: unknown) => {
            if (isDomainError(err) && err.code === 'not_found') throw new DomainError('invalid_request', 'The schema is already the default: nothing to roll back');
            throw err;
          })
          : await replaceSchema(product, entry.document, by, entry.version);
        return { scope: 'schema', version: entry.version, answer };
      }
      const document = documentOf(entry);
      if (entry.deviceId === null) return { scope: 'fleet', answer: await replaceFleetValues(product, document, by, entry.version) };
      return { scope: 'device', answer: await replaceDeviceValues(product, entry.deviceId, document, by, entry.version) };
    },
  };
}

export type ConfigWrites = ReturnType<typeof createConfigWrites>;
