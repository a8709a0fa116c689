import type { Queryable } from '../storage/db.js';

type Json = Record<string, unknown>;

/** What the configuration of a fleet device depends on, besides the values. */
export interface FleetDevice { id: string; development: boolean; ownWins: boolean; firmwareVersion: number | null; online: boolean }

export type FleetRow = { id: string; product_id: number | string | null; development: boolean; config_own_wins: boolean; firmware_version: number | null; online: boolean };
export const FLEET_COLUMNS = 'id, product_id, development, config_own_wins, firmware_version, online';
export const fleetDevice = (r: FleetRow): FleetDevice & { productId: number | null } => ({
  id: r.id, productId: r.product_id === null ? null : Number(r.product_id), development: r.development, ownWins: r.config_own_wins,
  firmwareVersion: r.firmware_version, online: r.online,
});

/** Configuration values by module: the fleet's (device '') or one device's. */
export function createConfigValuesRepository(db: Queryable) {
  async function read(productId: number, deviceId: string, q: Queryable): Promise<Record<string, Json>> {
    const rows = await q.query<{ module: string; value_text: string }>('SELECT module, value_text FROM config_values WHERE product_id = $1 AND device_id = $2', [productId, deviceId]);
    return Object.fromEntries(rows.map((r) => [r.module, JSON.parse(r.value_text) as Json]));
  }
  return {
    fleet: (productId: number, q: Queryable = db) => read(productId, '', q),
    device: (productId: number, deviceId: string, q: Queryable = db) => read(productId, deviceId, q),
    /**
     * Every configuration write of a product (values of any scope, schema) takes the product's row
     * first, in its transaction: writes take turns, so two deletes cannot both find nothing and
     * both inserts collide, history versions count up without gaps, and locks are always taken in
     * the same order (no deadlock with a fleet write updating device rows). NO KEY UPDATE, so the
     * foreign keys of other writers (KEY SHARE) never wait on it.
     */
    async lockProduct(productId: number, q: Queryable): Promise<void> {
      await q.query('SELECT 1 FROM products WHERE id = $1 FOR NO KEY UPDATE', [productId]);
    },
    /** Replaces the whole set of modules of the fleet ('') or of a device: nothing merges. */
    async replace(productId: number, deviceId: string, values: Record<string, Json>, schemaModules: string[], at: Date, q: Queryable): Promise<void> {
      // Only the schema's modules: values of modules it no longer has stay aside, untouched.
      await q.query('DELETE FROM config_values WHERE product_id = $1 AND device_id = $2 AND module = ANY($3::text[])', [productId, deviceId, schemaModules]);
      const entries = Object.entries(values);
      if (entries.length === 0) return;
      await q.query(
        `INSERT INTO config_values (product_id, device_id, module, value_text, updated_at)
         SELECT $1, $2, m, v, $5 FROM unnest($3::text[], $4::text[]) AS x(m, v)`,
        [productId, deviceId, entries.map(([m]) => m), entries.map(([, v]) => JSON.stringify(v)), at]);
    },
    /** The next fleet change: regular devices follow the fleet again (SPEC.md §3.2). */
    async fleetChanged(productId: number, q: Queryable): Promise<void> {
      await q.query('UPDATE devices SET config_own_wins = false WHERE product_id = $1 AND NOT development AND config_own_wins', [productId]);
    },
    async ownWins(deviceId: string, q: Queryable = db): Promise<boolean> {
      const rows = await q.query<{ config_own_wins: boolean }>('SELECT config_own_wins FROM devices WHERE id = $1', [deviceId]);
      return rows[0]?.config_own_wins ?? false;
    },
    /** When each stored module of the fleet ('') and of one device was last written. */
    async writtenAt(productId: number, deviceId: string, q: Queryable = db): Promise<Map<string, Date>> {
      const rows = await q.query<{ device_id: string; module: string; updated_at: Date }>(
        "SELECT device_id, module, updated_at FROM config_values WHERE product_id = $1 AND device_id IN ('', $2)", [productId, deviceId]);
      return new Map(rows.map((r) => [`${r.device_id}/${r.module}`, new Date(r.updated_at)]));
    },
    /** The modules a product has stored values for, in any scope. */
    async storedModules(productId: number, q: Queryable = db): Promise<string[]> {
      return (await q.query<{ module: string }>('SELECT DISTINCT module FROM config_values WHERE product_id = $1 ORDER BY module', [productId])).map((r) => r.module);
    },
    /** A product's devices (only the connected ones, to take a fleet change at once). */
    async fleetDevices(productId: number, options: { onlineOnly: boolean }, q: Queryable = db): Promise<FleetDevice[]> {
      const rows = await q.query<FleetRow>(`SELECT ${FLEET_COLUMNS} FROM devices WHERE product_id = $1${options.onlineOnly ? ' AND online' : ''}`, [productId]);
      return rows.map(fleetDevice);
    },
    /** The own values of every device of a product that has some (or of the devices named), in one read. */
    async devicesValues(productId: number, ids?: string[], q: Queryable = db): Promise<Map<string, Record<string, Json>>> {
      const rows = await q.query<{ device_id: string; module: string; value_text: string }>(
        `SELECT device_id, module, value_text FROM config_values WHERE product_id = $1 AND device_id <> ''${ids ? ' AND device_id = ANY($2::text[])' : ''}`,
        ids ? [productId, ids] : [productId]);
      const out = new Map<string, Record<string, Json>>();
      for (const r of rows) {
        const values = out.get(r.device_id) ?? {};
        values[r.module] = JSON.parse(r.value_text) as Json;
        out.set(r.device_id, values);
      }
      return out;
    },
    /** Devices of a product that are connected now, to take a fleet change at once. */
    async onlineDevices(productId: number, q: Queryable = db): Promise<string[]> {
      return (await q.query<{ id: string }>('SELECT id FROM devices WHERE product_id = $1 AND online', [productId])).map((r) => r.id);
    },
    /** The smallest publish limit among a fleet's devices is what a fleet write must fit. */
    async fleetOsVersions(productId: number, q: Queryable = db): Promise<Array<{ system_firmware_version: string | null; platform_id: number }>> {
      return q.query('SELECT DISTINCT system_firmware_version, platform_id FROM devices WHERE product_id = $1', [productId]);
    },
  };
}

export type ConfigValuesRepository = ReturnType<typeof createConfigValuesRepository>;
