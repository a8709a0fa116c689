import { DomainError } from '../domain/errors.js';
import { claimedByOther } from '../domain/devices.js';
import type { Clock } from '../platform/clock.js';
import type { Secrets } from '../platform/secrets.js';
import type { Db } from '../storage/db.js';
import type { ClaimsRepository } from '../repositories/claims.repository.js';
import type { DeviceOwner, DevicesRepository } from '../repositories/devices.repository.js';
import type { ProductsRepository } from '../repositories/products.repository.js';
import type { AuditService } from './audit.service.js';

/** Who owns a device once its claim code is redeemed, and the product it is in (a claim may add it to one). */
export interface ClaimedDevice { owner: DeviceOwner; productId: number | null }

/**
 * Claim codes (docs/api.md, "Claim codes"): asked for by a user (POST /v1/device_claims) or by a customer
 * of a product (POST /v1/products/:p/device_claims); random, stored only as a hash, single use,
 * bound to who asked, expiring after CLAIM_CODE_LIFETIME_SECONDS. The device presents the code
 * after it connects (`redeem`, called by the device gateway); then whoever asked owns it.
 */
export function createClaimService(deps: {
  db: Db;
  repo: ClaimsRepository;
  devices: DevicesRepository;
  products: ProductsRepository;
  audit: AuditService;
  secrets: Secrets;
  clock: Clock;
  lifetimeSeconds: number;
}) {
  const { repo, secrets, clock } = deps;
  // 48 characters from a 62-letter alphabet: about 285 bits, typed by no one.
  const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

  return {
    async create(owner: DeviceOwner, productId: number | null, ip: string): Promise<{ claim_code: string; device_ids: string[] }> {
      const code = secrets.text(48, ALPHABET);
      const now = clock.now();
      await repo.insert({ codeHash: secrets.sha256(code), owner, productId, createdAt: now, expiresAt: new Date(now.getTime() + deps.lifetimeSeconds * 1000) });
      await deps.audit.record({ account: owner, type: 'claim_code.created', ip, details: { product_id: productId } });
      const owned = (await deps.devices.listByOwner(owner)).map((d) => d.id);
      return { claim_code: code, device_ids: owned };
    },

    /**
     * A connected device presents a claim code: the device becomes owned by whoever asked for
     * the code. A product customer's code claims only devices of that product (a device in no
     * product of the same platform joins it).
     */
    async redeem(deviceId: string, code: string): Promise<ClaimedDevice> {
      if (typeof code !== 'string' || code.length === 0 || code.length > 200) throw new DomainError('claim_code_invalid', 'The claim code is not valid');
      const claimed = await deps.db.transaction(async (tx) => {
        const claim = await repo.consume(secrets.sha256(code), tx);
        if (!claim || claim.expiresAt.getTime() <= clock.nowMs()) throw new DomainError('claim_code_invalid', 'The claim code is unknown, used or expired');
        const [device] = await deps.devices.findManyForUpdate([deviceId.toLowerCase()], tx);
        if (!device) throw new DomainError('not_found', 'device not found');
        if (device.owner && (device.owner.kind !== claim.owner.kind || device.owner.id !== claim.owner.id)) {
          throw claimedByOther();
        }
        if (claim.productId !== null && device.productId !== claim.productId) {
          const product = device.productId === null ? await deps.products.find({ id: claim.productId }, tx) : undefined;
          if (!product || product.platformId !== device.platformId) throw new DomainError('claim_code_invalid', 'The claim code is for another product');
          await deps.devices.setProduct([device.id], claim.productId, tx);
        }
        await deps.devices.setOwner(device.id, claim.owner, tx);
        return { owner: claim.owner, deviceId: device.id, productId: claim.productId ?? device.productId };
      });
      // Recorded after the commit: the embedded store has one connection, held by the transaction.
      await deps.audit.record({ account: claimed.owner, type: 'device.claimed', ip: null, details: { device_id: claimed.deviceId, via: 'claim_code' } });
      return { owner: claimed.owner, productId: claimed.productId };
    },

    purgeExpired: () => repo.purgeExpired(clock.now()),
  };
}

export type ClaimService = ReturnType<typeof createClaimService>;
