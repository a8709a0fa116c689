import type { Bus } from '../../bus/bus.js';
import type { Clock } from '../../platform/clock.js';
import type { Log } from '../../platform/log.js';
import type { ConfigHistoryRepository } from '../../repositories/config-history.repository.js';
import type { ConfigSchemasRepository } from '../../repositories/config-schemas.repository.js';
import type { ConfigValuesRepository } from '../../repositories/config-values.repository.js';
import type { DeviceConfigStateRepository } from '../../repositories/device-config-state.repository.js';
import type { DevicesRepository } from '../../repositories/devices.repository.js';
import type { ProductsRepository } from '../../repositories/products.repository.js';
import type { Db } from '../../storage/db.js';
import type { StoreWatch } from '../../storage/watch.js';
import type { AuditService } from '../audit.service.js';
import { createNodeDelivery, type DeliveryOutcome, type HeldDevices } from './delivery.js';
import { createConfigHistoryService, type UserNames } from './history.js';
import { createConfigPreviews } from './previews.js';
import { createConfigReader, type ConfigReader } from './reader.js';
import { createConfigDelivery } from './routing.js';
import { createConfigStatus } from './status.js';
import { createConfigWrites } from './writes.js';

/**
 * A product's configuration: reads of what is committed, the writes (one use case each), dry
 * runs, history, where devices stand, and delivery to devices. The parts depend on each other
 * only as drawn in docs/architecture.md ("Configuration").
 */
export function createConfiguration(deps: {
  db: Db; bus: Bus; audit: AuditService; clock: Clock; log: () => Log; timeoutMs: number; batchWindowMs: number;
  schemas: ConfigSchemasRepository; values: ConfigValuesRepository; history: ConfigHistoryRepository; state: DeviceConfigStateRepository;
  products: ProductsRepository; devices: DevicesRepository;
  /** The devices connected to this node: configuration is delivered by the node that holds the device. */
  here: HeldDevices;
  /** Told of each module a delivery had to send, with what became of it (the node's metrics). */
  observe?: (outcome: DeliveryOutcome) => void;
  /** Who made a change, by name, in the history's answers. */
  userNames?: UserNames;
  /** Tells when the store is reachable again after an outage (deliveries that failed meanwhile are made again). */
  store?: Pick<StoreWatch, 'whenBack'>;
  /** Puts something between delivery and its reads (tests: holding a read back to order it after a later write). */
  wrapReader?: (reader: ConfigReader) => ConfigReader;
  /** How many devices a fan-out reads at once: the first share, and each after it (delivery.ts). */
  shares?: { first: number; each: number } | undefined;
}) {
  const reader = createConfigReader(deps);
  const status = createConfigStatus({ reader, state: deps.state, values: deps.values, devices: deps.devices });
  const node = createNodeDelivery({
    here: deps.here, reader: deps.wrapReader ? deps.wrapReader(reader) : reader, state: deps.state, devices: deps.devices,
    clock: deps.clock, log: deps.log, timeoutMs: deps.timeoutMs, batchWindowMs: deps.batchWindowMs, observe: deps.observe, shares: deps.shares,
  });
  const delivery = createConfigDelivery({ bus: deps.bus, node, log: deps.log, timeoutMs: deps.timeoutMs, store: deps.store });
  return {
    reader,
    status,
    delivery,
    writes: createConfigWrites({ ...deps, reader, status, delivery }),
    previews: createConfigPreviews({ reader, values: deps.values, devices: deps.devices }),
    history: createConfigHistoryService({ repo: deps.history, userNames: deps.userNames }),
  };
}

export type Configuration = ReturnType<typeof createConfiguration>;
