import { DomainError } from '../../domain/errors.js';
import { claimedByOther, isDeviceId } from '../../domain/devices.js';
import type { DeviceOwner, DeviceRecord, DevicesRepository } from '../../repositories/devices.repository.js';
import type { ProductRecord, ProductsRepository } from '../../repositories/products.repository.js';
import type { AccessTokenRecord } from '../../repositories/tokens.repository.js';
import type { Db, Tx } from '../../storage/db.js';
import type { AuditService } from '../audit.service.js';
import { accountOf } from '../audit-account.js';
import { deviceNotInProduct, ownerOf, sameOwner, type DeviceAccess } from './access.js';

/**
 * Who owns a device, through the API: a user claims one by id, an owner unclaims it, a product
 * releases its owner (claim codes, presented by the device, are claims.service). Each change
 * reads the device's row locked and decides on it, in the transaction that writes: a decision
 * taken on a remembered record (devices.cache.ts) could undo a change made meanwhile.
 */
export function createOwnership(deps: {
  db: Db;
  repo: Pick<DevicesRepository, 'findManyForUpdate' | 'setOwner'>;
  products: Pick<ProductsRepository, 'isMember'>;
  access: Pick<DeviceAccess, 'mustReach' | 'inProduct'>;
  audit: AuditService;
}) {
  const { db, repo, audit } = deps;

  /** The device's row, locked until the transaction ends. */
  async function locked(id: string, tx: Tx): Promise<DeviceRecord | undefined> {
    return (await repo.findManyForUpdate([id.toLowerCase()], tx))[0];
  }

  const notTheOwner = () => new DomainError('forbidden', 'Only the owner of a device can unclaim it; product devices are released with DELETE /v1/products/:p/devices/:id/owner');

  return {
    /**
     * POST /v1/devices {id}: a user claims a device by id. The device must be unowned (or the
     * user's), and either outside any product or in a product whose team the user is in.
     */
    async claimById(auth: AccessTokenRecord, rawId: string, ip: string): Promise<{ ok: true; deviceID: string; claimed: true }> {
      if (auth.subject.kind !== 'user') throw new DomainError('forbidden', 'Customers claim devices with a claim code');
      const user: DeviceOwner = { kind: 'user', id: auth.subject.userId };
      const deviceId = await db.transaction(async (tx) => {
        const d = isDeviceId(rawId) ? await locked(rawId, tx) : undefined;
        if (!d) throw new DomainError('not_found', 'device not found');
        if (d.owner && !sameOwner(d.owner, user)) throw claimedByOther();
        if (d.productId !== null && !(await deps.products.isMember(d.productId, user.id, tx))) throw claimedByOther();
        await repo.setOwner(d.id, user, tx);
        return d.id;
      });
      await audit.record({ account: user, type: 'device.claimed', ip, details: { device_id: deviceId, via: 'id' } });
      return { ok: true, deviceID: deviceId, claimed: true };
    },

    /** DELETE /v1/devices/:id: the owner gives the device up. */
    async unclaim(auth: AccessTokenRecord, idOrName: string, ip: string): Promise<void> {
      const d = await deps.access.mustReach(auth, idOrName);
      const owner = ownerOf(auth);
      if (!sameOwner(d.owner, owner)) throw notTheOwner();
      await db.transaction(async (tx) => {
        if (!sameOwner((await locked(d.id, tx))?.owner ?? null, owner)) throw notTheOwner();
        await repo.setOwner(d.id, null, tx);
      });
      await audit.record({ account: accountOf(auth.subject), type: 'device.unclaimed', ip, details: { device_id: d.id } });
    },

    /** DELETE /v1/products/:p/devices/:id/owner: the product releases a fleet device's owner. */
    async releaseOwnerInProduct(product: ProductRecord, id: string, auth: AccessTokenRecord, ip: string): Promise<void> {
      const d = await deps.access.inProduct(product, id);
      await db.transaction(async (tx) => {
        if ((await locked(d.id, tx))?.productId !== product.id) throw deviceNotInProduct();
        await repo.setOwner(d.id, null, tx);
      });
      await audit.record({ account: accountOf(auth.subject), type: 'device.unclaimed', ip, details: { device_id: d.id, product_id: product.id } });
    },
  };
}

export type Ownership = ReturnType<typeof createOwnership>;
