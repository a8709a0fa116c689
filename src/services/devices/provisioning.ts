import { DomainError } from '../../domain/errors.js';
import { MAX_BULK_PROVISION } from '../../domain/devices.js';
import type { Clock } from '../../platform/clock.js';
import type { Secrets } from '../../platform/secrets.js';
import type { DeviceRecord, DevicesRepository } from '../../repositories/devices.repository.js';
import type { ProductRecord } from '../../repositories/products.repository.js';
import type { AccessTokenRecord } from '../../repositories/tokens.repository.js';
import type { Db } from '../../storage/db.js';
import type { AuditService } from '../audit.service.js';
import { accountOf } from '../audit-account.js';
import type { DeviceView, DeviceViews } from './view.js';

/**
 * New device identities in a product: an id (24 hex digits) and a secret shown once, stored
 * only as its SHA-256 digest (docs/security.md). A batch is inserted and counted into the
 * product in one transaction: all of it or none.
 */
export function createProvisioning(deps: {
  db: Db;
  repo: Pick<DevicesRepository, 'insertMany'>;
  audit: AuditService;
  secrets: Secrets;
  clock: Clock;
  views: DeviceViews;
}) {
  const { db, repo, audit, secrets, clock } = deps;

  function newIdentity(product: ProductRecord): { record: DeviceRecord; secret: string } {
    const now = clock.now();
    const secret = secrets.token(24);
    return {
      secret,
      record: {
        id: secrets.token(12), secretHash: secrets.sha256(secret), name: null, notes: null, platformId: product.platformId, productId: product.id, owner: null,
        development: false, desiredFirmwareVersion: null, firmwareUpdatesEnabled: true, firmwareUpdatesForced: false, serialNumber: null, online: false, lastHeard: null, lastHandshakeAt: null,
        lastIpAddress: null, systemFirmwareVersion: null, firmwareVersion: null, functions: [], variables: {}, createdAt: now, updatedAt: now,
      },
    };
  }

  return {
    /** POST /v1/devices {product_id}: a new identity in a product the caller manages; the device uses the secret to connect. */
    async provision(product: ProductRecord, auth: AccessTokenRecord, ip: string): Promise<DeviceView & { device_secret: string }> {
      const { record, secret } = newIdentity(product);
      await db.transaction((tx) => repo.insertMany([record], tx));
      await audit.record({ account: accountOf(auth.subject), type: 'device.provisioned', ip, details: { device_id: record.id, product_id: product.id } });
      return { ...(await deps.views.view(record)), device_secret: secret };
    },

    /** Bulk provisioning for manufacturing: N identities with their secrets, once. */
    async provisionMany(product: ProductRecord, count: number, auth: AccessTokenRecord, ip: string): Promise<Array<{ id: string; device_secret: string }>> {
      if (!Number.isInteger(count) || count < 1 || count > MAX_BULK_PROVISION) throw new DomainError('invalid_request', `quantity must be between 1 and ${MAX_BULK_PROVISION}`);
      const made = Array.from({ length: count }, () => newIdentity(product));
      await db.transaction((tx) => repo.insertMany(made.map((m) => m.record), tx));
      await audit.record({ account: accountOf(auth.subject), type: 'device.provisioned', ip, details: { product_id: product.id, count } });
      return made.map((m) => ({ id: m.record.id, device_secret: m.secret }));
    },
  };
}

export type Provisioning = ReturnType<typeof createProvisioning>;
