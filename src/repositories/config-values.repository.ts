import type { Queryable, Tx } from '../storage/db.js';

type Json = Record<string, unknown>;

/** Configuration values by module (table config_values): the fleet's (device '') or one device's. */
export function createConfigValuesRepository(db: Queryable) {
  async function read(productId: number, deviceId: string, q: Queryable): Promise<Record<string, Json>> {
    const rows = await q.query<{ module: string; value_text: string }>('SELECT module, value_text FROM config_values WHERE product_id = $1 AND device_id = $2', [productId, deviceId]);
    return Object.fromEntries(rows.map((r) => [r.module, JSON.parse(r.value_text) as Json]));
  }
  return {
    fleet: (productId: number, q: Queryable = db) => read(productId, '', q),
    device: (productId: number, deviceId: string, q: Queryable = db) => read(productId, deviceId, q),
    /**
     * Replaces the whole set of modules of the fleet ('') or of a device: nothing merges. Only the
     * schema's modules are replaced: values of modules it no longer has stay aside, untouched.
     */
    async replace(productId: number, deviceId: string, values: Record<string, Json>, schemaModules: string[], at: Date, tx: Tx): Promise<void> {
      await tx.query('DELETE FROM config_values WHERE product_id = $1 AND device_id = $2 AND module = ANY($3::text[])', [productId, deviceId, schemaModules]);
      const entries = Object.entries(values);
      if (entries.length === 0) return;
      await tx.query(
        `INSERT INTO config_values (product_id, device_id, module, value_text, updated_at)
         SELECT $1, $2, m, v, $5 FROM unnest($3::text[], $4::text[]) AS x(m, v)`,
        [productId, deviceId, entries.map(([m]) => m), entries.map(([, v]) => JSON.stringify(v)), at]);
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
  };
}

export type ConfigValuesRepository = ReturnType<typeof createConfigValuesRepository>;
