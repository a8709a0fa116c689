import type { Queryable, Tx } from '../storage/db.js';
import type { SortColumn } from '../domain/devices.js';

export type DeviceOwner = { kind: 'user' | 'customer'; id: string };

/** Whose a device is and which fleet it is in, as a write left them: what its connection routes events by. */
export interface DeviceScope { id: string; owner: DeviceOwner | null; productId: number | null }

export interface DeviceRecord {
  id: string;
  secretHash: string;
  name: string | null;
  notes: string | null;
  platformId: number;
  productId: number | null;
  owner: DeviceOwner | null;
  development: boolean;
  desiredFirmwareVersion: number | null;
  /** Whether the device takes firmware updates now (its `hello` says), and whether the product forces them anyway. */
  firmwareUpdatesEnabled: boolean;
  firmwareUpdatesForced: boolean;
  serialNumber: string | null;
  online: boolean;
  lastHeard: Date | null;
  lastHandshakeAt: Date | null;
  lastIpAddress: string | null;
  systemFirmwareVersion: string | null;
  firmwareVersion: number | null;
  functions: string[];
  variables: Record<string, string>;
  createdAt: Date;
  updatedAt: Date;
}

interface Row {
  id: string; secret_hash: string; name: string | null; notes: string | null; platform_id: number; product_id: number | string | null;
  owner_kind: 'user' | 'customer' | null; owner_id: string | null; development: boolean; desired_firmware_version: number | null;
  firmware_updates_enabled: boolean; firmware_updates_forced: boolean; serial_number: string | null; online: boolean; last_heard: Date | null; last_handshake_at: Date | null; last_ip_address: string | null;
  system_firmware_version: string | null; firmware_version: number | null; functions: string[]; variables: Record<string, string>;
  created_at: Date; updated_at: Date;
}

/** A device as lists show it: without its secret's hash and its own timestamps. */
export type ListedDevice = Omit<DeviceRecord, 'secretHash' | 'createdAt' | 'updatedAt'>;

/** Columns named, so that hot statements can be prepared (storage/db.ts). */
const LISTED_COLUMNS = ['id', 'name', 'notes', 'platform_id', 'product_id', 'owner_kind', 'owner_id', 'development',
  'desired_firmware_version', 'firmware_updates_enabled', 'firmware_updates_forced', 'serial_number', 'online', 'last_heard', 'last_handshake_at', 'last_ip_address', 'system_firmware_version',
  'firmware_version', 'functions', 'variables'].join(', ');
const COLUMNS = `${LISTED_COLUMNS}, secret_hash, created_at, updated_at`;

const date = (d: Date | null) => (d === null ? null : new Date(d));

const toListed = (r: Omit<Row, 'secret_hash' | 'created_at' | 'updated_at'>): ListedDevice => ({
  id: r.id,
  name: r.name,
  notes: r.notes,
  platformId: Number(r.platform_id),
  productId: r.product_id === null ? null : Number(r.product_id),
  owner: r.owner_kind && r.owner_id ? { kind: r.owner_kind, id: r.owner_id } : null,
  development: r.development,
  desiredFirmwareVersion: r.desired_firmware_version,
  firmwareUpdatesEnabled: r.firmware_updates_enabled,
  firmwareUpdatesForced: r.firmware_updates_forced,
  serialNumber: r.serial_number,
  online: r.online,
  lastHeard: date(r.last_heard),
  lastHandshakeAt: date(r.last_handshake_at),
  lastIpAddress: r.last_ip_address,
  systemFirmwareVersion: r.system_firmware_version,
  firmwareVersion: r.firmware_version,
  functions: r.functions ?? [],
  variables: r.variables ?? {},
});

const toDevice = (r: Row): DeviceRecord => ({
  ...toListed(r),
  secretHash: r.secret_hash,
  createdAt: new Date(r.created_at),
  updatedAt: new Date(r.updated_at),
});

export type ScopeRow = Pick<Row, 'id' | 'product_id' | 'owner_kind' | 'owner_id'>;
const SCOPE_COLUMNS = 'id, product_id, owner_kind, owner_id';
/** A device's scope from the columns that hold it (also what presence changes answer). */
export const toScope = (r: ScopeRow): DeviceScope => ({
  id: r.id,
  owner: r.owner_kind && r.owner_id ? { kind: r.owner_kind, id: r.owner_id } : null,
  productId: r.product_id === null ? null : Number(r.product_id),
});

export interface FleetQuery {
  idPrefix?: string | undefined;
  name?: string | undefined;
  /** Devices in any of these groups of the product (names). */
  groups?: readonly string[] | undefined;
  sort: SortColumn;
  descending: boolean;
  limit: number;
  offset: number;
}

/** What the configuration of a fleet device depends on, besides the values (effectiveConfig). */
export interface FleetDevice { id: string; development: boolean; ownWins: boolean; firmwareVersion: number | null; online: boolean }

export type FleetRow = { id: string; product_id: number | string | null; development: boolean; config_own_wins: boolean; firmware_version: number | null; online: boolean };
export const FLEET_COLUMNS = 'id, product_id, development, config_own_wins, firmware_version, online';
export const fleetDevice = (r: FleetRow): FleetDevice & { productId: number | null } => ({
  id: r.id, productId: r.product_id === null ? null : Number(r.product_id), development: r.development, ownWins: r.config_own_wins,
  firmwareVersion: r.firmware_version, online: r.online,
});

export function createDevicesRepository(db: Queryable) {
  async function bumpCount(q: Queryable, productId: number, delta: number): Promise<void> {
    await q.query('UPDATE products SET device_count = device_count + $2 WHERE id = $1', [productId, delta]);
  }

  return {
    /** Inserts new devices (provisioning) and counts them into their product: several statements, one transaction. */
    async insertMany(devices: DeviceRecord[], q: Tx): Promise<void> {
      for (let i = 0; i < devices.length; i += 500) {
        const chunk = devices.slice(i, i + 500);
        const values = chunk.map((_, j) => `($${j * 8 + 1}, $${j * 8 + 2}, $${j * 8 + 3}, $${j * 8 + 4}, $${j * 8 + 5}, $${j * 8 + 6}, $${j * 8 + 7}, $${j * 8 + 8}, $${j * 8 + 8})`).join(', ');
        await q.query(
          `INSERT INTO devices (id, secret_hash, name, platform_id, product_id, owner_kind, owner_id, created_at, updated_at) VALUES ${values}`,
          chunk.flatMap((d) => [d.id, d.secretHash, d.name, d.platformId, d.productId, d.owner?.kind ?? null, d.owner?.id ?? null, d.createdAt]),
        );
      }
      const perProduct = new Map<number, number>();
      for (const d of devices) if (d.productId !== null) perProduct.set(d.productId, (perProduct.get(d.productId) ?? 0) + 1);
      for (const [productId, n] of perProduct) await bumpCount(q, productId, n);
    },

    async findById(id: string, q: Queryable = db): Promise<DeviceRecord | undefined> {
      const rows = await q.query<Row>(`SELECT ${COLUMNS} FROM devices WHERE id = $1`, [id.toLowerCase()], { prepare: true });
      return rows[0] && toDevice(rows[0]);
    },

    /** Many devices by id in one read (a connect storm's authentications, grouped). */
    async findByIds(ids: string[], q: Queryable = db): Promise<DeviceRecord[]> {
      if (ids.length === 0) return [];
      const rows = await q.query<Row>('SELECT * FROM devices WHERE id = ANY($1::text[])', [ids]);
      return rows.map(toDevice);
    },

    async findManyForUpdate(ids: string[], q: Queryable): Promise<DeviceRecord[]> {
      if (ids.length === 0) return [];
      const rows = await q.query<Row>('SELECT * FROM devices WHERE id = ANY($1::text[]) FOR UPDATE', [ids]);
      return rows.map(toDevice);
    },

    async findByOwnerAndName(owner: DeviceOwner, name: string): Promise<DeviceRecord | undefined> {
      const rows = await db.query<Row>('SELECT * FROM devices WHERE owner_kind = $1 AND owner_id = $2 AND lower(name) = lower($3) ORDER BY id LIMIT 1', [owner.kind, owner.id, name]);
      return rows[0] && toDevice(rows[0]);
    },

    async listByOwner(owner: DeviceOwner): Promise<ListedDevice[]> {
      const rows = await db.query<Row>(`SELECT ${LISTED_COLUMNS} FROM devices WHERE owner_kind = $1 AND owner_id = $2 ORDER BY id`, [owner.kind, owner.id], { prepare: true });
      return rows.map(toListed);
    },

    async idsByOwners(kind: DeviceOwner['kind'], ownerIds: string[]): Promise<Map<string, string[]>> {
      const out = new Map<string, string[]>();
      if (ownerIds.length === 0) return out;
      const rows = await db.query<{ owner_id: string; id: string }>('SELECT owner_id, id FROM devices WHERE owner_kind = $1 AND owner_id = ANY($2::text[]) ORDER BY id', [kind, ownerIds]);
      for (const r of rows) out.set(r.owner_id, [...(out.get(r.owner_id) ?? []), r.id]);
      return out;
    },

    /**
     * One page of a product's fleet and the fleet's size, in one statement. The total comes from
     * the product's counter when nothing filters the list, so that a page costs the same for
     * 1,000 devices as for 100,000; a filtered list is counted. Owners' names are not joined: the
     * device service remembers customers' e-mails, and a join made PostgreSQL's work on a page
     * larger (docs/benchmarks.md, "Measurements behind design choices").
     */
    async listByProduct(productId: number, f: FleetQuery): Promise<{ devices: ListedDevice[]; total: number }> {
      const where = ['d.product_id = $1'];
      const params: unknown[] = [productId];
      // Ids are lower-case hex, so a prefix is a range that the (product_id, id) index serves in
      // any collation, where LIKE would need a C collation.
      if (f.idPrefix) {
        params.push(f.idPrefix.toLowerCase(), `${f.idPrefix.toLowerCase()}g`);
        where.push(`d.id >= $${params.length - 1} AND d.id < $${params.length}`);
      }
      if (f.name) { params.push(f.name.toLowerCase()); where.push(`lower(d.name) = $${params.length}`); }
      if (f.groups && f.groups.length > 0) {
        params.push(f.groups);
        where.push(`EXISTS (SELECT 1 FROM device_group_members m JOIN device_groups g ON g.id = m.group_id WHERE m.device_id = d.id AND g.product_id = $1 AND g.name = ANY($${params.length}::text[]))`);
      }
      const filtered = params.length > 1;
      const order = f.sort === 'id' ? `d.id ${f.descending ? 'DESC' : 'ASC'}` : `d.${f.sort} ${f.descending ? 'DESC' : 'ASC'} NULLS LAST, d.id`;
      // Prepared: the text depends only on which filters and which order, never on values.
      const rows = await db.query<Row & { fleet_size: number | string | null }>(
        `SELECT ${LISTED_COLUMNS}${filtered ? '' : ', (SELECT device_count FROM products WHERE id = $1) AS fleet_size'}
         FROM devices d WHERE ${where.join(' AND ')}
         ORDER BY ${order} LIMIT $${params.length + 1} OFFSET $${params.length + 2}`, [...params, f.limit, f.offset], { prepare: true });
      let total: number;
      if (!filtered && rows[0]) {
        total = Number(rows[0].fleet_size ?? 0);
      } else if (!filtered && f.offset === 0) {
        total = 0;
      } else if (!filtered) {
        // A page past the end: the counter still tells how many there are.
        const c = await db.query<{ device_count: number }>('SELECT device_count FROM products WHERE id = $1', [productId]);
        total = Number(c[0]?.device_count ?? 0);
      } else {
        const c = await db.query<{ n: number | string }>(`SELECT count(*) AS n FROM devices d WHERE ${where.join(' AND ')}`, params);
        total = Number(c[0]?.n ?? 0);
      }
      return { devices: rows.map(toListed), total };
    },

    /**
     * Moves devices into a product and moves the fleets' counts with them (one transaction; the
     * caller holds the rows, findManyForUpdate). Answers the devices' new scope.
     */
    async setProduct(ids: string[], productId: number, q: Tx): Promise<DeviceScope[]> {
      if (ids.length === 0) return [];
      const moved = await q.query<ScopeRow & { old: number | string | null }>(
        `UPDATE devices d SET product_id = $2, updated_at = now() FROM (SELECT id, product_id AS old FROM devices WHERE id = ANY($1::text[])) o
         WHERE d.id = o.id RETURNING d.id, d.product_id, d.owner_kind, d.owner_id, o.old`, [ids, productId]);
      const left = new Map<number, number>();
      for (const m of moved) if (m.old !== null) left.set(Number(m.old), (left.get(Number(m.old)) ?? 0) + 1);
      for (const [old, n] of left) await bumpCount(q, old, -n);
      await bumpCount(q, productId, moved.length);
      return moved.map(toScope);
    },

    /** Takes a device out of its product and releases its owner (docs/api.md, "Devices"); the fleet's count follows in the same transaction. */
    async removeFromProduct(id: string, productId: number, q: Tx): Promise<DeviceScope | undefined> {
      const rows = await q.query<ScopeRow>(`UPDATE devices SET product_id = NULL, owner_kind = NULL, owner_id = NULL, development = false, updated_at = now() WHERE id = $1 AND product_id = $2 RETURNING ${SCOPE_COLUMNS}`, [id, productId]);
      if (rows[0]) await bumpCount(q, productId, -1);
      return rows[0] && toScope(rows[0]);
    },

    /** A device's new owner (none: released); answers its scope, or nothing when there is no such device. */
    async setOwner(id: string, owner: DeviceOwner | null, q: Queryable = db): Promise<DeviceScope | undefined> {
      const rows = await q.query<ScopeRow>(`UPDATE devices SET owner_kind = $2, owner_id = $3, updated_at = now() WHERE id = $1 RETURNING ${SCOPE_COLUMNS}`, [id, owner?.kind ?? null, owner?.id ?? null]);
      return rows[0] && toScope(rows[0]);
    },

    /** Releases every device of an owner that is going away: part of that owner's removal, so it takes the removal's transaction. */
    async releaseOwner(owner: DeviceOwner, q: Tx): Promise<number> {
      return (await q.query('UPDATE devices SET owner_kind = NULL, owner_id = NULL, updated_at = now() WHERE owner_kind = $1 AND owner_id = $2 RETURNING id', [owner.kind, owner.id])).length;
    },

    /**
     * A product is being deleted (in the same transaction): its devices leave it, and those of its
     * customers, who go with it, are released rather than left owned by no one that exists.
     */
    async leaveDeletedProduct(productId: number, q: Tx): Promise<DeviceScope[]> {
      const rows = await q.query<ScopeRow>(
        `UPDATE devices SET product_id = NULL,
           owner_kind = CASE WHEN owner_kind = 'customer' THEN NULL ELSE owner_kind END,
           owner_id = CASE WHEN owner_kind = 'customer' THEN NULL ELSE owner_id END,
           updated_at = now()
         WHERE product_id = $1 RETURNING ${SCOPE_COLUMNS}`, [productId]);
      return rows.map(toScope);
    },

    async update(id: string, change: { name?: string; notes?: string | null; development?: boolean; desiredFirmwareVersion?: number | null; firmwareUpdatesForced?: boolean }, at: Date, q: Queryable = db): Promise<DeviceRecord | undefined> {
      const sets: string[] = [];
      const params: unknown[] = [id];
      const set = (col: string, v: unknown) => { params.push(v); sets.push(`${col} = $${params.length}`); };
      if (change.name !== undefined) set('name', change.name);
      if (change.notes !== undefined) set('notes', change.notes);
      if (change.development !== undefined) set('development', change.development);
      // Becoming a development device makes its own values win (docs/api.md, "Effective configuration"); leaving keeps them
      // winning until the next fleet change clears the flag.
      if (change.development === true) sets.push('config_own_wins = true');
      if (change.desiredFirmwareVersion !== undefined) set('desired_firmware_version', change.desiredFirmwareVersion);
      if (change.firmwareUpdatesForced !== undefined) set('firmware_updates_forced', change.firmwareUpdatesForced);
      set('updated_at', at);
      const rows = await q.query<Row>(`UPDATE devices SET ${sets.join(', ')} WHERE id = $1 RETURNING *`, params);
      return rows[0] && toDevice(rows[0]);
    },


    /** A product's devices as configuration sees them: all of them, or those of `ids` that are in it. */
    async fleetDevices(productId: number, options: { ids?: readonly string[] } = {}, q: Queryable = db): Promise<FleetDevice[]> {
      const rows = await q.query<FleetRow>(
        `SELECT ${FLEET_COLUMNS} FROM devices WHERE product_id = $1${options.ids ? ' AND id = ANY($2::text[])' : ''}`,
        options.ids ? [productId, options.ids] : [productId],
      );
      return rows.map(fleetDevice);
    },
    /** One device as configuration sees it. */
    async fleetDevice(id: string, q: Queryable = db): Promise<(FleetDevice & { productId: number | null }) | undefined> {
      const rows = await q.query<FleetRow>(`SELECT ${FLEET_COLUMNS} FROM devices WHERE id = $1`, [id]);
      return rows[0] && fleetDevice(rows[0]);
    },
    /**
     * A fleet write returns regular devices to the fleet: their own values of fleet modules stop
     * winning (docs/api.md, "Effective configuration").
     */
    async followFleet(productId: number, tx: Tx): Promise<void> {
      await tx.query('UPDATE devices SET config_own_wins = false WHERE product_id = $1 AND NOT development AND config_own_wins', [productId]);
    },
    /** The Device OS versions and platforms of a fleet: the smallest publish limit among them is what a fleet write must fit. */
    async deviceOsVersions(productId: number, q: Queryable = db): Promise<Array<{ systemFirmwareVersion: string | null; platformId: number }>> {
      const rows = await q.query<{ system_firmware_version: string | null; platform_id: number }>('SELECT DISTINCT system_firmware_version, platform_id FROM devices WHERE product_id = $1', [productId]);
      return rows.map((r) => ({ systemFirmwareVersion: r.system_firmware_version, platformId: Number(r.platform_id) }));
    },
  };
}

export type DevicesRepository = ReturnType<typeof createDevicesRepository>;
