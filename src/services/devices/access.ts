import { DomainError } from '../../domain/errors.js';
import { isDeviceId } from '../../domain/devices.js';
import type { DeviceOwner, DeviceRecord, DevicesRepository } from '../../repositories/devices.repository.js';
import type { ProductRecord } from '../../repositories/products.repository.js';
import type { AccessTokenRecord } from '../../repositories/tokens.repository.js';
import type { PendingPresence } from '../presence.service.js';

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
  /** This node's presence writes not stored yet. */
  presence?: Pick<PendingPresence, 'stored'>;
}) {
  const { repo, isMember } = deps;
  /**
   * A device's row once this node has stored its last connect or disconnect: a connect is
   * stored after its CONNACK (in a batch, off the connect's path), and a device must read online
   * to whoever it tells that it is connected (docs/device-protocol.md, "Presence").
   */
  async function current(id: string): Promise<DeviceRecord | undefined> {
    await deps.presence?.stored(id.toLowerCase());
    return repo.findById(id);
  }

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
      if (isDeviceId(idOrName)) d = await current(idOrName);
      else {
        const owner = ownerOf(auth);
        const named = owner && idOrName.length <= 63 ? await repo.findByOwnerAndName(owner, idOrName) : undefined;
        if (named) d = await current(named.id);
      }
      if (!d || !(await reaches(auth, d))) throw permissionDenied();
      return d;
    },

    /** A device of a product the caller may manage (products.service `access`); not_found otherwise. */
    async inProduct(product: Pick<ProductRecord, 'id'>, id: string): Promise<DeviceRecord> {
      const d = isDeviceId(id) ? await current(id) : undefined;
      if (!d || d.productId !== product.id) throw deviceNotInProduct();
      return d;
    },
  };
}

export type DeviceAccess = ReturnType<typeof createDeviceAccess>;
