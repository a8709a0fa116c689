import type { Queryable, Tx } from '../storage/db.js';

export interface StoredSchema { productId: number; schemaText: string; updatedAt: Date; updatedBy: string }

export function createConfigSchemasRepository(db: Queryable) {
  return {
    async find(productId: number, q: Queryable = db): Promise<StoredSchema | undefined> {
      const rows = await q.query<{ product_id: string | number; schema_text: string; updated_at: Date; updated_by: string }>(
        'SELECT product_id, schema_text, updated_at, updated_by FROM product_config_schemas WHERE product_id = $1', [productId]);
      const r = rows[0];
      return r && { productId: Number(r.product_id), schemaText: r.schema_text, updatedAt: new Date(r.updated_at), updatedBy: r.updated_by };
    },
    async upsert(s: StoredSchema, tx: Tx): Promise<void> {
      await tx.query(
        `INSERT INTO product_config_schemas (product_id, schema_text, updated_at, updated_by) VALUES ($1, $2, $3, $4)
         ON CONFLICT (product_id) DO UPDATE SET schema_text = EXCLUDED.schema_text, updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by`,
        [s.productId, s.schemaText, s.updatedAt, s.updatedBy]);
    },
    /** Whether a custom schema was there to delete. */
    async delete(productId: number, tx: Tx): Promise<boolean> {
      return (await tx.query('DELETE FROM product_config_schemas WHERE product_id = $1 RETURNING product_id', [productId])).length === 1;
    },
  };
}

export type ConfigSchemasRepository = ReturnType<typeof createConfigSchemasRepository>;
