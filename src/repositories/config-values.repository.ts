import type { Queryable } from '../storage/db.js';

type Json = Record<string, unknown>;

/** Configuration values by module: the fleet's (device '') or one device's. */
export function createConfigValuesRepository(db: Queryable) {
  async function read(productId: number, deviceId: string, q: Queryable): Promise<Record<string, Json>> {
    const rows = await q.query<{ module: string; value_text: string }>('SELECT module, value_text FROM config_values WHERE product_id = $1 AND device_id = $2', [productId, deviceId]);
    return Object.fromEntries(rows.map((r) => [r.module, JSON.parse(r.value_text) as Json]));
  }
  return {
    fleet: (productId: number, q: Queryable = db) => read(productId, '', q),
    device: (productId: number, deviceId: string, q: Queryable = db) => read(productId, deviceId, q),
    /** Replaces the whole set of modules of the fleet ('') or of a device: nothing merges. */
    async replace(productId: number, deviceId: string, values: Record<string, Json>, at: Date, q: Queryable): Promise<void> {
      // Concurrent writes to one scope take turns on its row, or two deletes could both find
      // nothing and both inserts collide. NO KEY UPDATE, so the foreign keys of other writers
      // (KEY SHARE) never wait on it.
      if (deviceId === '') await q.query('SELECT 1 FROM products WHERE id = $1 FOR NO KEY UPDATE', [productId]);
      else await q.query('SELECT 1 FROM devices WHERE id = $1 FOR NO KEY UPDATE', [deviceId]);
      await q.query('DELETE FROM config_values WHERE product_id = $1 AND device_id = $2', [productId, deviceId]);
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
