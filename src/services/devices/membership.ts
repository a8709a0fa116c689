import { Type, type Static } from '@sinclair/typebox';
import { isDeviceId } from '../../domain/devices.js';
import type { DevicesRepository } from '../../repositories/devices.repository.js';
import type { ProductRecord, ProductsRepository } from '../../repositories/products.repository.js';
import type { AccessTokenRecord } from '../../repositories/tokens.repository.js';
import type { Db } from '../../storage/db.js';
import type { AuditService } from '../audit.service.js';
import { accountOf } from '../audit-account.js';
import { deviceNotInProduct, type DeviceAccess } from './access.js';

/** The answer of an import (Particle's shape): every array always present. */
export const ImportResultSchema = Type.Object({
  updated: Type.Integer(),
  updatedDeviceIds: Type.Array(Type.String()),
  existingDeviceIds: Type.Array(Type.String()),
  nonmemberDeviceIds: Type.Array(Type.String()),
  invalidDeviceIds: Type.Array(Type.String()),
  protectedDeviceIds: Type.Array(Type.String()),
});

export type ImportResult = Static<typeof ImportResultSchema>;

/**
 * Which product a device is in: known devices imported into a fleet, a device taken out of one.
 * Each change of devices and the fleets' counts is one transaction; the devices' connections
 * take their new scope once it has committed (devices.cache.ts).
 */
export function createFleetMembership(deps: {
  db: Db;
  repo: Pick<DevicesRepository, 'findManyForUpdate' | 'setProduct' | 'removeFromProduct'>;
  products: Pick<ProductsRepository, 'isMember'>;
  access: Pick<DeviceAccess, 'inProduct'>;
  audit: AuditService;
}) {
  const { db, repo, audit } = deps;
  return {
    /**
     * POST /v1/products/:p/devices: adds known devices to the product. Devices owned by accounts
     * outside the team, or in another product, are not moved (nonmember); unknown ids, ids of
     * the wrong shape and devices of another platform are invalid (docs/api.md, "Devices").
     */
    async importToProduct(product: ProductRecord, rawIds: string[], auth: AccessTokenRecord, ip: string): Promise<ImportResult> {
      const result: ImportResult = { updated: 0, updatedDeviceIds: [], existingDeviceIds: [], nonmemberDeviceIds: [], invalidDeviceIds: [], protectedDeviceIds: [] };
      const wanted = new Map<string, string>();
      for (const raw of rawIds) {
        if (!isDeviceId(raw)) result.invalidDeviceIds.push(raw.slice(0, 64));
        else wanted.set(raw.toLowerCase(), raw);
      }
      await db.transaction(async (tx) => {
        const found = new Map((await repo.findManyForUpdate([...wanted.keys()], tx)).map((d) => [d.id, d]));
        const move: string[] = [];
        for (const id of wanted.keys()) {
          const d = found.get(id);
          if (!d || d.platformId !== product.platformId) result.invalidDeviceIds.push(id);
          else if (d.productId === product.id) result.existingDeviceIds.push(id);
          else if (d.productId !== null) result.nonmemberDeviceIds.push(id);
          else if (d.owner && !(d.owner.kind === 'user' && (await deps.products.isMember(product.id, d.owner.id, tx)))) result.nonmemberDeviceIds.push(id);
          else move.push(id);
        }
        await repo.setProduct(move, product.id, tx);
        result.updatedDeviceIds = move;
        result.updated = move.length;
      });
      if (result.updated > 0) await audit.record({ account: accountOf(auth.subject), type: 'device.imported', ip, details: { product_id: product.id, count: result.updated } });
      return result;
    },

    /** DELETE /v1/products/:p/devices/:id: out of the product, its owner released, the fleet's count with it. */
    async removeFromProduct(product: ProductRecord, id: string, auth: AccessTokenRecord, ip: string): Promise<void> {
      const d = await deps.access.inProduct(product, id);
      const removed = await db.transaction((tx) => repo.removeFromProduct(d.id, product.id, tx));
      // Another request took it out first.
      if (!removed) throw deviceNotInProduct();
      await audit.record({ account: accountOf(auth.subject), type: 'device.removed', ip, details: { device_id: d.id, product_id: product.id } });
    },
  };
}

export type FleetMembership = ReturnType<typeof createFleetMembership>;
