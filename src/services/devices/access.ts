import { DomainError } from '../../domain/errors.js';
import { isDeviceId } from '../../domain/devices.js';
import type { DeviceOwner, DeviceRecord, DevicesRepository } from '../../repositories/devices.repository.js';
import type { ProductRecord } from '../../repositories/products.repository.js';
import type { AccessTokenRecord } from '../../repositories/tokens.repository.js';

export function permissionDenied(): DomainError {
  // Unknown and foreign devices answer alike (docs/api.md, "Devices"; particle-cli matches `info`).
  return new DomainError('permission_denied', "I didn't recognize that device name or ID, or you may not reach it", {
    details: { info: "I didn't recognize that device name or ID, try opening /v1/devices to see the devices you can reach" },
  });
}

export const deviceNotInProduct = (): DomainError => new DomainError('not_found', 'Device not found for this product');

/** The owner a token speaks for: a user or a customer; a product token owns nothing. */
export function ownerOf(auth: AccessTokenRecord): DeviceOwner | null {
  const s = auth.subject;
  if (s.kind === 'user') return { kind: 'user', id: s.userId };
  if (s.kind === 'customer') return { kind: 'customer', id: s.customerId };
  return null;
}

export const sameOwner = (a: DeviceOwner | null, b: DeviceOwner | null): boolean => a !== null && b !== null && a.kind === b.kind && a.id === b.id;

/**
 * Who may reach which device, the one place every device route asks (checked for every route
 * and kind of credential by test/authorization-matrix.test.ts, shown in docs/security.md):
 * - a customer token reaches the devices that customer owns;
 * - a user token the devices the user owns and the fleets of products whose team it is in;
 * - a product token its product's fleet.
 */
export function createDeviceAccess(deps: {
  repo: Pick<DevicesRepository, 'findById' | 'findByOwnerAndName'>;
  /** Team membership (remembered: products.service `isMemberCached`). */
  isMember: (productId: number, userId: string) => Promise<boolean>;
}) {
  const { repo, isMember } = deps;

  async function reaches(auth: AccessTokenRecord, d: DeviceRecord): Promise<boolean> {
    const s = auth.subject;
    if (s.kind === 'customer') return d.owner?.kind === 'customer' && d.owner.id === s.customerId;
    if (s.kind === 'product') return d.productId !== null && String(d.productId) === s.productId;
    if (d.owner?.kind === 'user' && d.owner.id === s.userId) return true;
    return d.productId !== null && (await isMember(d.productId, s.userId));
  }

  return {
    reaches,
    ownerOf,

    /** A device by id (or, for owners, by name) that the token reaches; permission_denied otherwise. */
    async mustReach(auth: AccessTokenRecord, idOrName: string): Promise<DeviceRecord> {
      let d: DeviceRecord | undefined;
      if (isDeviceId(idOrName)) d = await repo.findById(idOrName);
      else {
        const owner = ownerOf(auth);
        if (owner && idOrName.length <= 63) d = await repo.findByOwnerAndName(owner, idOrName);
      }
      if (!d || !(await reaches(auth, d))) throw permissionDenied();
      return d;
    },

    /** A device of a product the caller may manage (products.service `access`); not_found otherwise. */
    async inProduct(product: Pick<ProductRecord, 'id'>, id: string): Promise<DeviceRecord> {
      const d = isDeviceId(id) ? await repo.findById(id) : undefined;
      if (!d || d.productId !== product.id) throw deviceNotInProduct();
      return d;
    },
  };
}

export type DeviceAccess = ReturnType<typeof createDeviceAccess>;
