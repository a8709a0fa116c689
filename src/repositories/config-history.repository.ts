import type { Queryable, Tx } from '../storage/db.js';

export type HistoryKind = 'values' | 'schema';
export type HistoryAction = 'write' | 'reset' | 'rollback';

export interface HistoryEntry {
  productId: number;
  version: number;
  kind: HistoryKind;
  /** The device of a device write; null for the fleet's values and for the schema. */
  deviceId: string | null;
  /** The values (JSON text) or the schema text; null means the default schema. */
  document: string | null;
  action: HistoryAction;
  rolledBackFrom: number | null;
  actor: { kind: string; id: string };
  createdAt: Date;
}

type Row = {
  product_id: number; version: number; kind: HistoryKind; device_id: string | null; document: string | null; action: HistoryAction;
  rolled_back_from: number | null; actor_kind: string; actor_id: string; created_at: Date;
};
const COLUMNS = 'product_id, version, kind, device_id, document, action, rolled_back_from, actor_kind, actor_id, created_at';

const entry = (r: Row): HistoryEntry => ({
  productId: Number(r.product_id), version: r.version, kind: r.kind, deviceId: r.device_id, document: r.document, action: r.action,
  rolledBackFrom: r.rolled_back_from, actor: { kind: r.actor_kind, id: r.actor_id }, createdAt: new Date(r.created_at),
});

export interface HistoryFilter { kind?: HistoryKind; deviceId?: string | null }

/** The configuration history of products (migrations/0008). */
export function createConfigHistoryRepository(db: Queryable) {
  function where(productId: number, f: HistoryFilter): { sql: string; params: unknown[] } {
    const params: unknown[] = [productId];
    let sql = 'product_id = $1';
    if (f.kind) { params.push(f.kind); sql += ` AND kind = $${params.length}`; }
    if (f.deviceId === null) sql += ' AND device_id IS NULL';
    else if (f.deviceId !== undefined) { params.push(f.deviceId); sql += ` AND device_id = $${params.length}`; }
    return { sql, params };
  }

  return {
    /**
     * Appends a change inside the transaction that makes it. The caller holds the product's row
     * lock (config writes of a product take turns), so the next version number is free.
     */
    async append(tx: Tx, e: Omit<HistoryEntry, 'version'>): Promise<number> {
      const rows = await tx.query<{ version: number }>(
        `INSERT INTO config_history (${COLUMNS})
         SELECT $1, COALESCE(MAX(version), 0) + 1, $2, $3, $4, $5, $6, $7, $8, $9 FROM config_history WHERE product_id = $1
         RETURNING version`,
        [e.productId, e.kind, e.deviceId, e.document, e.action, e.rolledBackFrom, e.actor.kind, e.actor.id, e.createdAt]);
      return (rows[0] as { version: number }).version;
    },
    /**
     * The product's newest version: what a reader of configuration takes before it reads values,
     * to know which writes it may have missed.
     */
    async latest(productId: number, q: Queryable = db): Promise<number> {
      const rows = await q.query<{ v: number | null }>('SELECT MAX(version) AS v FROM config_history WHERE product_id = $1', [productId], { prepare: true });
      return Number(rows[0]?.v ?? 0);
    },
    async list(productId: number, f: HistoryFilter, page: number, perPage: number): Promise<{ entries: HistoryEntry[]; total: number }> {
      const w = where(productId, f);
      const [rows, count] = await Promise.all([
        db.query<Row>(`SELECT ${COLUMNS} FROM config_history WHERE ${w.sql} ORDER BY version DESC LIMIT ${perPage} OFFSET ${(page - 1) * perPage}`, w.params),
        db.query<{ n: number }>(`SELECT COUNT(*)::int AS n FROM config_history WHERE ${w.sql}`, w.params),
      ]);
      return { entries: rows.map(entry), total: count[0]?.n ?? 0 };
    },
    async find(productId: number, version: number): Promise<HistoryEntry | undefined> {
      const rows = await db.query<Row>(`SELECT ${COLUMNS} FROM config_history WHERE product_id = $1 AND version = $2`, [productId, version]);
      return rows[0] && entry(rows[0]);
    },
    /** The change of the same scope just before `version`. */
    async previous(e: HistoryEntry): Promise<HistoryEntry | undefined> {
      const w = where(e.productId, { kind: e.kind, deviceId: e.deviceId });
      const rows = await db.query<Row>(`SELECT ${COLUMNS} FROM config_history WHERE ${w.sql} AND version < ${e.version} ORDER BY version DESC LIMIT 1`, w.params);
      return rows[0] && entry(rows[0]);
    },
  };
}

export type ConfigHistoryRepository = ReturnType<typeof createConfigHistoryRepository>;
