import { DomainError } from '../domain/errors.js';
import { MAX_BULK_PROVISION, claimedByOther, isDeviceId, sortColumnOf, validateDeviceName, validateNotes } from '../domain/devices.js';
import type { Clock } from '../platform/clock.js';
import { TtlCache } from '../platform/ttl-cache.js';
import type { Secrets } from '../platform/secrets.js';
import type { Db, Tx } from '../storage/db.js';
import type { DeviceOwner, DeviceRecord, DevicesRepository, ListedDevice } from '../repositories/devices.repository.js';
import type { ProductRecord, ProductsRepository } from '../repositories/products.repository.js';
import type { CustomersRepository } from '../repositories/customers.repository.js';
import type { UsersRepository } from '../repositories/users.repository.js';
import type { AccessTokenRecord } from '../repositories/tokens.repository.js';
import type { AuditService } from './audit.service.js';
import { accountOf } from './audit-account.js';
import { pageMeta } from '../domain/paging.js';
import { createBatcher, windowFor } from '../storage/batcher.js';

/** A device as the API shows it (reference §6): real values where the cloud knows them, null where not. */
export interface DeviceView {
  id: string;
  name: string | null;
  last_app: null;
  last_ip_address: string | null;
  last_heard: string | null;
  last_handshake_at: string | null;
  product_id: number;
  online: boolean;
  connected: boolean;
  platform_id: number;
  cellular: boolean;
  notes: string | null;
  functions: string[];
  variables: Record<string, string>;
  status: 'normal';
  serial_number: string | null;
  iccid: null;
  imei: null;
  mac_wifi: null;
  mobile_secret: null;
  system_firmware_version: string | null;
  firmware_version: number | null;
  firmware_product_id: number | null;
  current_build_target: string | null;
  default_build_target: string | null;
  targeted_firmware_release_version: number | null;
  desired_firmware_version: number | null;
  firmware_updates_enabled: boolean;
  firmware_updates_forced: boolean;
  development: boolean;
  quarantined: boolean;
  denied: boolean;
  groups: string[];
  owner: string | null;
}

export interface ImportResult {
  updated: number;
  updatedDeviceIds: string[];
  existingDeviceIds: string[];
  nonmemberDeviceIds: string[];
  invalidDeviceIds: string[];
  protectedDeviceIds: string[];
}

export function permissionDenied(): DomainError {
  // Unknown and foreign devices answer alike (reference §6; the CLI matches `info`).
  return new DomainError('permission_denied', "I didn't recognize that device name or ID, or you may not reach it", {
    details: { info: "I didn't recognize that device name or ID, try opening /v1/devices to see the devices you can reach" },
  });
}

const deviceNotInProduct = () => new DomainError('not_found', 'Device not found for this product');

/**
 * Devices: identities (provisioning), product fleets (import, list, remove), ownership (claim by
 * id, unclaim, claim codes), and the rule of who may reach which device:
 * - a customer token reaches the devices that customer owns;
 * - a user token the devices the user owns and the fleets of products whose team it is in;
 * - a product token its product's fleet.
 */
export function createDeviceService(deps: {
  db: Db;
  repo: DevicesRepository;
  products: ProductsRepository;
  customers: CustomersRepository;
  users: UsersRepository;
  audit: AuditService;
  secrets: Secrets;
  clock: Clock;
  /** Team membership for the ownership check of every device route (remembered; products.service). */
  isMember: (productId: number, userId: string) => Promise<boolean>;
}) {
  const { repo, secrets, clock, audit, isMember } = deps;
  // Connects that arrive together are looked up together (a reconnect storm), past the record
  // cache: a storm must not fill memory with every device.
  const connecting = createBatcher<string, DeviceRecord | undefined>(async (ids) => {
    const found = new Map((await repo.findByIds([...new Set(ids)], deps.db)).map((d) => [d.id, d]));
    return ids.map((id) => found.get(id));
  }, { maxBatch: 1000, inFlight: 1, waitMs: windowFor(deps.db.kind) });

  function ownerOf(auth: AccessTokenRecord): DeviceOwner | null {
    const s = auth.subject;
    if (s.kind === 'user') return { kind: 'user', id: s.userId };
    if (s.kind === 'customer') return { kind: 'customer', id: s.customerId };
    return null;
  }

  async function reaches(auth: AccessTokenRecord, d: DeviceRecord): Promise<boolean> {
    const s = auth.subject;
    if (s.kind === 'customer') return d.owner?.kind === 'customer' && d.owner.id === s.customerId;
    if (s.kind === 'product') return d.productId !== null && String(d.productId) === s.productId;
    if (d.owner?.kind === 'user' && d.owner.id === s.userId) return true;
    return d.productId !== null && (await isMember(d.productId, s.userId));
  }

  /** A device by id (or, for owners, by name) that the token reaches; permission_denied otherwise. */
  async function mustReach(auth: AccessTokenRecord, idOrName: string): Promise<DeviceRecord> {
    let d: DeviceRecord | undefined;
    if (isDeviceId(idOrName)) d = await repo.findById(idOrName);
    else {
      const owner = ownerOf(auth);
      if (owner && idOrName.length <= 63) d = await repo.findByOwnerAndName(owner, idOrName);
    }
    if (!d || !(await reaches(auth, d))) throw permissionDenied();
    return d;
  }

  /**
   * The device's row, locked until the transaction ends: ownership changes decide on it in the
   * transaction that writes, since a decision taken on a remembered record (devices.cache.ts)
   * could undo a change made meanwhile.
   */
  async function locked(id: string, tx: Tx): Promise<DeviceRecord | undefined> {
    return (await repo.findManyForUpdate([id.toLowerCase()], tx))[0];
  }

  const sameOwner = (a: DeviceOwner | null, b: DeviceOwner | null) => a !== null && b !== null && a.kind === b.kind && a.id === b.id;
  const notTheOwner = () => new DomainError('forbidden', 'Only the owner of a device can unclaim it; product devices are released with DELETE /v1/products/:p/devices/:id/owner');

  async function inProduct(product: ProductRecord, id: string): Promise<DeviceRecord> {
    const d = isDeviceId(id) ? await repo.findById(id) : undefined;
    if (!d || d.productId !== product.id) throw deviceNotInProduct();
    return d;
  }

  // A customer's e-mail never changes (only its password can), so it is remembered: a customer
  // reading its own devices would otherwise read its own row on every request.
  const customerEmails = new TtlCache<string>(clock, 10 * 60_000, 100_000);

  /** Owners' names by `kind:id`; the customers' e-mails not remembered yet are read in one statement. */
  async function ownerNames(devices: ListedDevice[]): Promise<Map<string, string>> {
    const names = new Map<string, string>();
    const missing = new Set<string>();
    for (const d of devices) {
      if (d.owner?.kind !== 'customer') continue;
      const email = customerEmails.get(d.owner.id);
      if (email === undefined) missing.add(d.owner.id);
      else names.set(`customer:${d.owner.id}`, email);
    }
    if (missing.size > 0) {
      for (const c of await deps.customers.findByIds([...missing])) {
        names.set(`customer:${c.id}`, c.email);
        customerEmails.set(c.id, c.email);
      }
    }
    for (const id of new Set(devices.flatMap((d) => (d.owner?.kind === 'user' ? [d.owner.id] : [])))) {
      const u = await deps.users.findById(id);
      if (u) names.set(`user:${id}`, u.username);
    }
    return names;
  }

  function view(d: ListedDevice, names: Map<string, string>): DeviceView {
    const iso = (x: Date | null) => (x === null ? null : x.toISOString());
    return {
      id: d.id,
      name: d.name,
      last_app: null,
      last_ip_address: d.lastIpAddress,
      last_heard: iso(d.lastHeard),
      last_handshake_at: iso(d.lastHandshakeAt),
      // Outside a product, product_id is the platform id (reference §6).
      product_id: d.productId ?? d.platformId,
      online: d.online,
      connected: d.online,
      platform_id: d.platformId,
      cellular: false,
      notes: d.notes,
      functions: d.functions,
      variables: d.variables,
      status: 'normal',
      serial_number: d.serialNumber,
      iccid: null,
      imei: null,
      mac_wifi: null,
      mobile_secret: null,
      system_firmware_version: d.systemFirmwareVersion,
      firmware_version: d.firmwareVersion,
      firmware_product_id: d.productId,
      current_build_target: d.systemFirmwareVersion,
      default_build_target: null,
      targeted_firmware_release_version: d.desiredFirmwareVersion,
      desired_firmware_version: d.desiredFirmwareVersion,
      firmware_updates_enabled: true,
      firmware_updates_forced: false,
      development: d.development,
      quarantined: false,
      denied: false,
      groups: [],
      owner: d.owner ? names.get(`${d.owner.kind}:${d.owner.id}`) ?? null : null,
    };
  }

  async function views(devices: ListedDevice[]): Promise<DeviceView[]> {
    const names = await ownerNames(devices);
    return devices.map((d) => view(d, names));
  }

  function newIdentity(platformId: number, productId: number | null, owner: DeviceOwner | null): { record: DeviceRecord; secret: string } {
    const now = clock.now();
    const secret = secrets.token(24);
    return {
      secret,
      record: {
        id: secrets.token(12), secretHash: secrets.sha256(secret), name: null, notes: null, platformId, productId, owner,
        development: false, desiredFirmwareVersion: null, serialNumber: null, online: false, lastHeard: null, lastHandshakeAt: null,
        lastIpAddress: null, systemFirmwareVersion: null, firmwareVersion: null, functions: [], variables: {}, createdAt: now, updatedAt: now,
      },
    };
  }

  return {
    /**
     * A device's MQTT credentials (docs/device-protocol.md, "Connecting"): its id and the secret
     * shown at provisioning, compared as SHA-256 digests in constant time. Secrets are 128-bit
     * random, so a fast hash is enough; an unknown id costs the same digest.
     */
    async authenticate(id: string, secret: string): Promise<DeviceRecord | null> {
      const d = isDeviceId(id) ? await connecting.add(id.toLowerCase()) : undefined;
      const digest = secrets.sha256(secret);
      const same = secrets.sameDigest(digest, d?.secretHash ?? '0'.repeat(64));
      return d && same && secret.length > 0 ? d : null;
    },

    reaches,
    mustReach,
    inProduct,
    views,
    view: async (d: DeviceRecord) => (await views([d]))[0] as DeviceView,

    /**
     * POST /v1/devices {product_id}: a new device identity in a product the caller manages.
     * The device secret is answered once; the device uses it to connect.
     */
    async provision(product: ProductRecord, auth: AccessTokenRecord, ip: string): Promise<DeviceView & { device_secret: string }> {
      const { record, secret } = newIdentity(product.platformId, product.id, null);
      await deps.db.transaction((tx) => repo.insertMany([record], tx));
      await audit.record({ account: accountOf(auth.subject), type: 'device.provisioned', ip, details: { device_id: record.id, product_id: product.id } });
      return { ...(await views([record]))[0] as DeviceView, device_secret: secret };
    },

    /** Bulk provisioning for manufacturing: N identities with their secrets, once. */
    async provisionMany(product: ProductRecord, count: number, auth: AccessTokenRecord, ip: string): Promise<Array<{ id: string; device_secret: string }>> {
      if (!Number.isInteger(count) || count < 1 || count > MAX_BULK_PROVISION) throw new DomainError('invalid_request', `quantity must be between 1 and ${MAX_BULK_PROVISION}`);
      const made = Array.from({ length: count }, () => newIdentity(product.platformId, product.id, null));
      await deps.db.transaction((tx) => repo.insertMany(made.map((m) => m.record), tx));
      await audit.record({ account: accountOf(auth.subject), type: 'device.provisioned', ip, details: { product_id: product.id, count } });
      return made.map((m) => ({ id: m.record.id, device_secret: m.secret }));
    },

    /**
     * POST /v1/products/:p/devices: adds known devices to the product. Every result array is
     * always present (reference §7). Devices owned by accounts outside the team, or in another
     * product, are not moved (nonmember); unknown ids, ids of the wrong shape and devices of
     * another platform are invalid.
     */
    async importToProduct(product: ProductRecord, rawIds: string[], auth: AccessTokenRecord, ip: string): Promise<ImportResult> {
      const result: ImportResult = { updated: 0, updatedDeviceIds: [], existingDeviceIds: [], nonmemberDeviceIds: [], invalidDeviceIds: [], protectedDeviceIds: [] };
      const wanted = new Map<string, string>();
      for (const raw of rawIds) {
        if (!isDeviceId(raw)) result.invalidDeviceIds.push(raw.slice(0, 64));
        else wanted.set(raw.toLowerCase(), raw);
      }
      await deps.db.transaction(async (tx) => {
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

    /** A page of the fleet; only the product's id is used, so a remembered product will do (the total is read with the page). */
    async listFleet(product: Pick<ProductRecord, 'id'>, q: { deviceId?: string; deviceName?: string; sortAttr?: string; sortDir?: string; page: number; perPage: number }) {
      if (q.sortDir !== undefined && q.sortDir !== 'asc' && q.sortDir !== 'desc') throw new DomainError('invalid_request', 'sortDir must be asc or desc');
      if (q.deviceId !== undefined && !/^[0-9a-f]{0,24}$/i.test(q.deviceId)) throw new DomainError('invalid_request', 'deviceId must be (the start of) a 24-hex device id');
      const { devices, total } = await repo.listByProduct(product.id, {
        idPrefix: q.deviceId, name: q.deviceName, sort: sortColumnOf(q.sortAttr), descending: q.sortDir === 'desc',
        limit: q.perPage, offset: (q.page - 1) * q.perPage,
      });
      // The page's owners serve both the devices and the `customers` list.
      const names = await ownerNames(devices);
      const customers = [...names].flatMap(([key, username]) => (key.startsWith('customer:') ? [{ id: key.slice('customer:'.length), username }] : []));
      return { devices: devices.map((d) => view(d, names)), customers, meta: pageMeta(q.page, q.perPage, total) };
    },

    /** GET /v1/devices: the caller's own devices (a product token: its fleet's first 1,000). */
    async listMine(auth: AccessTokenRecord): Promise<DeviceView[]> {
      const owner = ownerOf(auth);
      if (owner) return views(await repo.listByOwner(owner));
      const productId = Number((auth.subject as { productId: string }).productId);
      const fleet = await repo.listByProduct(productId, { sort: 'id', descending: false, limit: 1000, offset: 0 });
      return views(fleet.devices);
    },

    /** Rename and notes (any route); development and firmware lock (product routes only). */
    async update(d: DeviceRecord, body: { name?: unknown; notes?: unknown; development?: unknown; desired_firmware_version?: unknown }, productRoute: boolean) {
      const change: { name?: string; notes?: string | null; development?: boolean; desiredFirmwareVersion?: number | null } = {};
      if (body.name !== undefined) change.name = validateDeviceName(body.name);
      if (body.notes !== undefined) change.notes = validateNotes(body.notes);
      if (productRoute && body.development !== undefined) {
        if (body.development !== true && body.development !== false && body.development !== 'true' && body.development !== 'false') throw new DomainError('invalid_request', 'development must be true or false');
        change.development = body.development === true || body.development === 'true';
      }
      if (productRoute && body.desired_firmware_version !== undefined) {
        const v = body.desired_firmware_version;
        if (v === null || v === 'null') change.desiredFirmwareVersion = null;
        else if ((typeof v === 'number' || (typeof v === 'string' && /^\d{1,9}$/.test(v))) && Number.isInteger(Number(v)) && Number(v) >= 1) change.desiredFirmwareVersion = Number(v);
        else throw new DomainError('invalid_request', 'desired_firmware_version must be a firmware version number, or null to unlock');
      }
      if (Object.keys(change).length === 0) throw new DomainError('invalid_request', productRoute ? 'Nothing to change: send name, notes, development or desired_firmware_version' : 'Nothing to change: send name or notes');
      const updated = await repo.update(d.id, change, clock.now());
      if (!updated) throw permissionDenied();
      const at = updated.updatedAt.toISOString();
      // The answer names what changed (reference §6).
      const out: Record<string, unknown> = { id: updated.id, updated_at: at };
      if (change.name !== undefined) out.name = updated.name;
      if (change.notes !== undefined) out.notes = updated.notes;
      if (change.development !== undefined) out.development = updated.development;
      if (change.desiredFirmwareVersion !== undefined) out.desired_firmware_version = updated.desiredFirmwareVersion;
      return out;
    },

    async removeFromProduct(product: ProductRecord, id: string, auth: AccessTokenRecord, ip: string): Promise<void> {
      const d = await inProduct(product, id);
      const removed = await deps.db.transaction((tx) => repo.removeFromProduct(d.id, product.id, tx));
      // Another request took it out first.
      if (!removed) throw deviceNotInProduct();
      await audit.record({ account: accountOf(auth.subject), type: 'device.removed', ip, details: { device_id: d.id, product_id: product.id } });
    },

    async releaseOwnerInProduct(product: ProductRecord, id: string, auth: AccessTokenRecord, ip: string): Promise<void> {
      const d = await inProduct(product, id);
      await deps.db.transaction(async (tx) => {
        if ((await locked(d.id, tx))?.productId !== product.id) throw deviceNotInProduct();
        await repo.setOwner(d.id, null, tx);
      });
      await audit.record({ account: accountOf(auth.subject), type: 'device.unclaimed', ip, details: { device_id: d.id, product_id: product.id } });
    },

    /** DELETE /v1/devices/:id: the owner gives the device up. */
    async unclaim(auth: AccessTokenRecord, idOrName: string, ip: string): Promise<void> {
      const d = await mustReach(auth, idOrName);
      const owner = ownerOf(auth);
      if (!sameOwner(d.owner, owner)) throw notTheOwner();
      await deps.db.transaction(async (tx) => {
        if (!sameOwner((await locked(d.id, tx))?.owner ?? null, owner)) throw notTheOwner();
        await repo.setOwner(d.id, null, tx);
      });
      await audit.record({ account: accountOf(auth.subject), type: 'device.unclaimed', ip, details: { device_id: d.id } });
    },

    /**
     * POST /v1/devices {id}: a user claims a device by id. The device must be unowned, and
     * either outside any product or in a product whose team the user is in.
     */
    async claimById(auth: AccessTokenRecord, rawId: string, ip: string): Promise<{ ok: true; deviceID: string; claimed: true }> {
      if (auth.subject.kind !== 'user') throw new DomainError('forbidden', 'Customers claim devices with a claim code');
      const user: DeviceOwner = { kind: 'user', id: auth.subject.userId };
      const deviceId = await deps.db.transaction(async (tx) => {
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

    ownerOf,
  };
}

export type DeviceService = ReturnType<typeof createDeviceService>;
