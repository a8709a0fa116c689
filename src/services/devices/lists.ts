import { DomainError } from '../../domain/errors.js';
import { sortColumnOf } from '../../domain/devices.js';
import { parseGroupNames } from '../../domain/firmware.js';
import { pageMeta } from '../../domain/paging.js';
import type { DevicesRepository } from '../../repositories/devices.repository.js';
import type { ProductRecord } from '../../repositories/products.repository.js';
import type { AccessTokenRecord } from '../../repositories/tokens.repository.js';
import type { PendingPresence } from '../presence.service.js';
import { ownerOf } from './access.js';
import type { DeviceView, DeviceViews } from './view.js';

export interface FleetPageQuery { deviceId?: string; deviceName?: string; groups?: string; sortAttr?: string; sortDir?: string; page: number; perPage: number }

/** Lists of devices: a page of a product's fleet, the caller's own devices. */
export function createDeviceLists(deps: {
  repo: Pick<DevicesRepository, 'listByProduct' | 'listByOwner'>;
  views: DeviceViews;
  /** This node's presence writes not stored yet: a list waits for those handed in before it (access.ts, `current`). */
  presence?: Pick<PendingPresence, 'written'>;
}) {
  const { repo, views } = deps;
  return {
    /** A page of the fleet; only the product's id is used, so a remembered product will do (the total is read with the page). */
    async listFleet(product: Pick<ProductRecord, 'id'>, q: FleetPageQuery) {
      if (q.sortDir !== undefined && q.sortDir !== 'asc' && q.sortDir !== 'desc') throw new DomainError('invalid_request', 'sortDir must be asc or desc');
      if (q.deviceId !== undefined && !/^[0-9a-f]{0,24}$/i.test(q.deviceId)) throw new DomainError('invalid_request', 'deviceId must be (the start of) a 24-hex device id');
      await deps.presence?.written();
      const { devices, total } = await repo.listByProduct(product.id, {
        // Devices in any of the groups named, separated by commas (as particle-api-js's listDevices sends them).
        idPrefix: q.deviceId, name: q.deviceName, groups: parseGroupNames(q.groups), sort: sortColumnOf(q.sortAttr), descending: q.sortDir === 'desc',
        limit: q.perPage, offset: (q.page - 1) * q.perPage,
      });
      // The page's owners serve both the devices and the `customers` list.
      return { ...(await views.page(devices)), meta: pageMeta(q.page, q.perPage, total) };
    },

    /** GET /v1/devices: the caller's own devices (a product token: its fleet's first 1,000). */
    async listMine(auth: AccessTokenRecord): Promise<DeviceView[]> {
      await deps.presence?.written();
      const owner = ownerOf(auth);
      if (owner) return views.views(await repo.listByOwner(owner));
      const productId = Number((auth.subject as { productId: string }).productId);
      const fleet = await repo.listByProduct(productId, { sort: 'id', descending: false, limit: 1000, offset: 0 });
      return views.views(fleet.devices);
    },
  };
}

export type DeviceLists = ReturnType<typeof createDeviceLists>;
