import type { Queryable } from '../storage/db.js';
import type { HeldHash } from '../domain/config/module-hash.js';
import { FLEET_COLUMNS, fleetDevice, type FleetDevice, type FleetRow } from './devices.repository.js';

export interface HeldModule { module: string; hash: string | null; value: Record<string, unknown> | null; status: 'in_sync' | 'rejected'; code: number | null; refusedHash: string | null; updatedAt: Date }

/** What a device holds of its configuration, module by module. */
type Row = { device_id: string; module: string; hash: string | null; value_text: string | null; status: 'in_sync' | 'rejected'; code: number | null; refused_hash: string | null; updated_at: Date };
const COLUMNS = 'device_id, module, hash, value_text, status, code, refused_hash, updated_at';

const held = (r: Row): HeldModule => ({
  module: r.module, hash: r.hash, value: r.value_text === null ? null : JSON.parse(r.value_text) as Record<string, unknown>,
  status: r.status, code: r.code, refusedHash: r.refused_hash, updatedAt: new Date(r.updated_at),
});


const HASH_COLUMNS = 's.device_id, s.module, s.hash, s.status, s.code, s.refused_hash';
type HashRow = { device_id: string; module: string; hash: string | null; status: 'in_sync' | 'rejected'; code: number | null; refused_hash: string | null };
function byDevice(rows: HashRow[]): Map<string, Map<string, HeldHash>> {
  const out = new Map<string, Map<string, HeldHash>>();
  for (const r of rows) {
    let m = out.get(r.device_id);
    if (!m) out.set(r.device_id, (m = new Map()));
    m.set(r.module, { hash: r.hash, status: r.status, refusedHash: r.refused_hash, code: r.code });
  }
  return out;
}

export interface StateChange { deviceId: string; module: string; hash: string; value: Record<string, unknown>; status: 'in_sync' | 'rejected'; code: number | null; at: Date }

export function createDeviceConfigStateRepository(db: Queryable) {
  return {
    async held(deviceId: string): Promise<Map<string, HeldModule>> {
      const rows = await db.query<Row>(`SELECT ${COLUMNS} FROM device_config_state WHERE device_id = $1`, [deviceId]);
      return new Map(rows.map((r) => [r.module, held(r)]));
    },
    /**
     * What each of a product's devices holds, in one read (the rollout status): the hashes and
     * states only, since on a large fleet the values and times would be most of it.
     */
    async heldByProduct(productId: number): Promise<Map<string, Map<string, HeldHash>>> {
      return byDevice(await db.query<HashRow>(`SELECT ${HASH_COLUMNS} FROM device_config_state s JOIN devices d ON d.id = s.device_id WHERE d.product_id = $1`, [productId]));
    },
    /**
     * What each of these devices holds (a share of a fan-out, services/config/delivery.ts): the
     * hashes and states only. Joined to the list, so that PostgreSQL looks each device up in the
     * primary key: a filter `device_id = ANY(…)` read the whole table for every share of a few
     * thousand devices (docs/benchmarks.md, "Cluster").
     */
    async heldBy(ids: readonly string[]): Promise<Map<string, Map<string, HeldHash>>> {
      if (ids.length === 0) return new Map();
      return byDevice(await db.query<HashRow>(`SELECT ${HASH_COLUMNS} FROM unnest($1::text[]) AS i(id) JOIN device_config_state s ON s.device_id = i.id`, [ids]));
    },
    /**
     * Devices connecting together, in one read: what their configuration depends on (as for a
     * fleet device) and the hash of each module they are recorded to hold in sync, as one JSON
     * object per device, since one row per module would be most of the read.
     */
    async connecting(ids: string[]): Promise<Array<FleetDevice & { productId: number | null; held: Record<string, string> }>> {
      if (ids.length === 0) return [];
      const rows = await db.query<FleetRow & { held: Record<string, string> | null }>(
        `SELECT ${FLEET_COLUMNS},
           (SELECT json_object_agg(s.module, s.hash) FROM device_config_state s WHERE s.device_id = d.id AND s.status = 'in_sync') AS held
         FROM devices d WHERE d.id = ANY($1::text[])`, [ids]);
      return rows.map((r) => ({ ...fleetDevice(r), held: r.held ?? {} }));
    },
    /**
     * Records many outcomes in one statement (acknowledgements of a fan-out arrive together).
     * `hash` and `value` are what the device holds once in sync, or the value it refused.
     */
    async recordMany(changes: StateChange[]): Promise<void> {
      // One row per device and module: ON CONFLICT may not touch a row twice in one statement.
      const last = new Map(changes.map((c) => [`${c.deviceId}/${c.module}`, c]));
      const list = [...last.values()];
      const inSync = (c: StateChange) => c.status === 'in_sync';
      await db.query(
        `INSERT INTO device_config_state (${COLUMNS})
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::text[], $8::timestamptz[])
         ON CONFLICT (device_id, module) DO UPDATE SET
           hash = CASE WHEN EXCLUDED.status = 'in_sync' THEN EXCLUDED.hash ELSE device_config_state.hash END,
           value_text = CASE WHEN EXCLUDED.status = 'in_sync' THEN EXCLUDED.value_text ELSE device_config_state.value_text END,
           status = EXCLUDED.status, code = EXCLUDED.code, refused_hash = EXCLUDED.refused_hash, updated_at = EXCLUDED.updated_at`,
        [list.map((c) => c.deviceId), list.map((c) => c.module), list.map((c) => (inSync(c) ? c.hash : null)),
          list.map((c) => (inSync(c) ? JSON.stringify(c.value) : null)), list.map((c) => c.status), list.map((c) => c.code),
          list.map((c) => (inSync(c) ? null : c.hash)), list.map((c) => c.at)]);
    },
  };
}

export type DeviceConfigStateRepository = ReturnType<typeof createDeviceConfigStateRepository>;
