import type { Queryable, Tx } from '../storage/db.js';

type Json = Record<string, unknown>;

/** Configuration values by module (table config_values): the fleet's (device '') or one device's. */
export function createConfigValuesRepository(db: Queryable) {
  return {
    /** The fleet's values (inside a write's transaction with `q`); `inputs` reads them with the rest. */
    async fleet(productId: number, q: Queryable = db): Promise<Record<string, Json>> {
      const rows = await q.query<{ module: string; value_text: string }>("SELECT module, value_text FROM config_values WHERE product_id = $1 AND device_id = ''", [productId]);
      return Object.fromEntries(rows.map((r) => [r.module, JSON.parse(r.value_text) as Json]));
    },
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
    /**
     * What a product's effective configurations are made of, in one statement: its schema as
     * stored (none: the default), the fleet's values, and the own values of the devices named (of
     * every device, without `ids`). A batch of connecting devices reads this at every batch, and a
     * statement costs about as much for one row as for many (docs/benchmarks.md, "Configuration
     * fan-out").
     */
    async inputs(productId: number, ids?: readonly string[], q: Queryable = db): Promise<{ schemaText: string | undefined; fleet: Record<string, Json>; devices: Map<string, Record<string, Json>> }> {
      // The fleet's rows are those of device ''; with ids, looked up with them in the primary key.
      const rows = await q.query<{ device_id: string | null; module: string | null; value_text: string }>(
        `SELECT NULL::text AS device_id, NULL::text AS module, schema_text AS value_text FROM product_config_schemas WHERE product_id = $1
         UNION ALL
         SELECT device_id, module, value_text FROM config_values WHERE product_id = $1${ids ? ' AND device_id = ANY($2::text[])' : ''}`,
        ids ? [productId, ['', ...ids]] : [productId]);
      let schemaText: string | undefined;
      const fleet: Record<string, Json> = {};
      const devices = new Map<string, Record<string, Json>>();
      for (const r of rows) {
        if (r.device_id === null) schemaText = r.value_text;
        else if (r.device_id === '') fleet[r.module as string] = JSON.parse(r.value_text) as Json;
        else {
          const values = devices.get(r.device_id) ?? {};
          values[r.module as string] = JSON.parse(r.value_text) as Json;
          devices.set(r.device_id, values);
        }
      }
      return { schemaText, fleet, devices };
    },
  };
}

export type ConfigValuesRepository = ReturnType<typeof createConfigValuesRepository>;
