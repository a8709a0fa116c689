import type { Queryable, Tx } from '../storage/db.js';

/** A device group of a product (docs/firmware.md, "Groups"). */
export interface GroupRecord {
  id: number;
  productId: number;
  name: string;
  color: string | null;
  description: string;
  /** The version released to the group, or null. */
  firmwareVersion: number | null;
  deviceCount: number;
  createdAt: Date;
  updatedAt: Date;
}

interface Row {
  id: number | string; product_id: number | string; name: string; color: string | null; description: string; firmware_version: number | null;
  device_count: number | string; created_at: Date; updated_at: Date;
}

const COLUMNS = `g.id, g.product_id, g.name, g.color, g.description, g.firmware_version, g.created_at, g.updated_at,
  (SELECT count(*) FROM device_group_members m WHERE m.group_id = g.id) AS device_count`;

const toRecord = (r: Row): GroupRecord => ({
  id: Number(r.id), productId: Number(r.product_id), name: r.name, color: r.color, description: r.description, firmwareVersion: r.firmware_version,
  deviceCount: Number(r.device_count), createdAt: new Date(r.created_at), updatedAt: new Date(r.updated_at),
});

export function createDeviceGroupsRepository(db: Queryable) {
  async function findMany(productId: number, names: readonly string[], q: Queryable = db): Promise<GroupRecord[]> {
    if (names.length === 0) return [];
    const rows = await q.query<Row>(`SELECT ${COLUMNS} FROM device_groups g WHERE g.product_id = $1 AND g.name = ANY($2::text[]) ORDER BY g.name`, [productId, names]);
    return rows.map(toRecord);
  }

  return {
    /** The product's groups by name; `contains` keeps those whose name holds it (Particle's `name` filter). */
    async list(productId: number, contains?: string): Promise<GroupRecord[]> {
      const rows = await db.query<Row>(
        `SELECT ${COLUMNS} FROM device_groups g WHERE g.product_id = $1${contains ? ' AND strpos(g.name, $2) > 0' : ''} ORDER BY g.name`,
        contains ? [productId, contains] : [productId]);
      return rows.map(toRecord);
    },

    async find(productId: number, name: string, q: Queryable = db): Promise<GroupRecord | undefined> {
      const rows = await q.query<Row>(`SELECT ${COLUMNS} FROM device_groups g WHERE g.product_id = $1 AND g.name = $2`, [productId, name]);
      return rows[0] && toRecord(rows[0]);
    },

    findMany,

    /** A new group; undefined when the product has one of that name. */
    async create(productId: number, g: { name: string; color: string | null; description: string }, at: Date, q: Queryable = db): Promise<GroupRecord | undefined> {
      const rows = await q.query<{ id: number | string }>(
        `INSERT INTO device_groups (product_id, name, color, description, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)
         ON CONFLICT (product_id, name) DO NOTHING RETURNING id`, [productId, g.name, g.color, g.description, at]);
      return rows[0] && { id: Number(rows[0].id), productId, ...g, firmwareVersion: null, deviceCount: 0, createdAt: at, updatedAt: at };
    },

    /** The groups of these names, those the product lacks created first (a device's groups are set by name). */
    async ensure(productId: number, names: readonly string[], at: Date, tx: Tx): Promise<{ groups: GroupRecord[]; created: string[] }> {
      if (names.length === 0) return { groups: [], created: [] };
      const made = await tx.query<{ name: string }>(
        `INSERT INTO device_groups (product_id, name, created_at, updated_at) SELECT $1, n, $3, $3 FROM unnest($2::text[]) AS n
         ON CONFLICT (product_id, name) DO NOTHING RETURNING name`, [productId, names, at]);
      return { groups: await findMany(productId, names, tx), created: made.map((r) => r.name) };
    },

    /** Renames, recolours or redescribes a group; 'taken' when the new name is another group's. */
    async update(id: number, change: { name?: string; color?: string | null; description?: string }, at: Date): Promise<'ok' | 'taken' | 'gone'> {
      try {
        const rows = await db.query(
          `UPDATE device_groups SET name = COALESCE($2, name), color = CASE WHEN $3::boolean THEN $4 ELSE color END,
             description = COALESCE($5, description), updated_at = $6 WHERE id = $1 RETURNING id`,
          [id, change.name ?? null, change.color !== undefined, change.color ?? null, change.description ?? null, at]);
        return rows.length === 1 ? 'ok' : 'gone';
      } catch (err) {
        if ((err as { code?: string }).code === '23505') return 'taken';
        throw err;
      }
    },

    /** Deletes a group (its memberships go with it); answers the devices that were in it. */
    async delete(id: number, tx: Tx): Promise<string[]> {
      const members = await tx.query<{ device_id: string }>('SELECT device_id FROM device_group_members WHERE group_id = $1', [id]);
      await tx.query('DELETE FROM device_groups WHERE id = $1', [id]);
      return members.map((m) => m.device_id);
    },

    /** The ids of a device's groups. */
    async groupIdsOf(deviceId: string, q: Queryable = db): Promise<number[]> {
      const rows = await q.query<{ group_id: number | string }>('SELECT group_id FROM device_group_members WHERE device_id = $1 ORDER BY group_id', [deviceId]);
      return rows.map((r) => Number(r.group_id));
    },

    /** A device's groups become exactly these (ids of its product's groups). */
    async setDeviceGroups(deviceId: string, groupIds: readonly number[], tx: Tx): Promise<void> {
      await tx.query('DELETE FROM device_group_members WHERE device_id = $1 AND NOT (group_id = ANY($2::bigint[]))', [deviceId, groupIds]);
      if (groupIds.length > 0) await tx.query('INSERT INTO device_group_members (device_id, group_id) SELECT $1, g FROM unnest($2::bigint[]) AS g ON CONFLICT DO NOTHING', [deviceId, groupIds]);
    },

    async addMembers(deviceIds: readonly string[], groupIds: readonly number[], tx: Tx): Promise<void> {
      if (deviceIds.length === 0 || groupIds.length === 0) return;
      await tx.query(
        `INSERT INTO device_group_members (device_id, group_id) SELECT d, g FROM unnest($1::text[]) AS d CROSS JOIN unnest($2::bigint[]) AS g
         ON CONFLICT DO NOTHING`, [deviceIds, groupIds]);
    },

    async removeMembers(deviceIds: readonly string[], groupIds: readonly number[], tx: Tx): Promise<void> {
      if (deviceIds.length === 0 || groupIds.length === 0) return;
      await tx.query('DELETE FROM device_group_members WHERE device_id = ANY($1::text[]) AND group_id = ANY($2::bigint[])', [deviceIds, groupIds]);
    },

    /** Which of these devices are in the product, each row locked for the transaction (a group change of many devices). */
    async productDevices(productId: number, deviceIds: readonly string[], tx: Tx): Promise<string[]> {
      const rows = await tx.query<{ id: string }>('SELECT id FROM devices WHERE product_id = $1 AND id = ANY($2::text[]) ORDER BY id FOR UPDATE', [productId, deviceIds]);
      return rows.map((r) => r.id);
    },
  };
}

export type DeviceGroupsRepository = ReturnType<typeof createDeviceGroupsRepository>;
