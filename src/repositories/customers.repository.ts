import type { Queryable, Tx } from '../storage/db.js';

export interface CustomerRecord {
  id: string;
  productId: number;
  email: string;
  passwordHash: string | null;
  createdAt: Date;
  updatedAt: Date;
}

interface Row { id: string; product_id: number | string; email: string; password_hash: string | null; created_at: Date; updated_at: Date }

const toCustomer = (r: Row): CustomerRecord => ({
  id: r.id, productId: Number(r.product_id), email: r.email, passwordHash: r.password_hash,
  createdAt: new Date(r.created_at), updatedAt: new Date(r.updated_at),
});

export function createCustomersRepository(db: Queryable) {
  return {
    /**
     * Returns false when the e-mail is taken in this product (in any letter case). In a
     * transaction, a concurrent insert of the same e-mail waits for it and then finds it taken
     * (or, if it rolled back, free).
     */
    async insert(c: CustomerRecord, tx: Tx): Promise<boolean> {
      const rows = await tx.query(
        `INSERT INTO customers (id, product_id, email, password_hash, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)
         ON CONFLICT (product_id, lower(email)) DO NOTHING RETURNING id`,
        [c.id, c.productId, c.email, c.passwordHash, c.createdAt]);
      return rows.length === 1;
    },
    async findByIds(ids: string[]): Promise<CustomerRecord[]> {
      if (ids.length === 0) return [];
      return (await db.query<Row>('SELECT * FROM customers WHERE id = ANY($1::text[])', [ids])).map(toCustomer);
    },
    async findByEmail(productId: number, email: string): Promise<CustomerRecord | undefined> {
      const rows = await db.query<Row>('SELECT * FROM customers WHERE product_id = $1 AND lower(email) = lower($2)', [productId, email]);
      return rows[0] && toCustomer(rows[0]);
    },
    async list(productId: number, limit: number, offset: number): Promise<{ customers: CustomerRecord[]; total: number }> {
      const rows = await db.query<Row>('SELECT * FROM customers WHERE product_id = $1 ORDER BY created_at, id LIMIT $2 OFFSET $3', [productId, limit, offset]);
      const count = await db.query<{ n: number | string }>('SELECT count(*) AS n FROM customers WHERE product_id = $1', [productId]);
      return { customers: rows.map(toCustomer), total: Number(count[0]?.n ?? 0) };
    },
    async count(productId: number): Promise<number> {
      const rows = await db.query<{ n: number | string }>('SELECT count(*) AS n FROM customers WHERE product_id = $1', [productId]);
      return Number(rows[0]?.n ?? 0);
    },
    /** Within the transaction that revokes the customer's tokens. */
    async setPassword(id: string, hash: string, at: Date, tx: Tx): Promise<void> {
      await tx.query('UPDATE customers SET password_hash = $2, updated_at = $3 WHERE id = $1', [id, hash, at]);
    },
    /** Within the transaction that revokes the customer's tokens and releases its devices. */
    async delete(id: string, tx: Tx): Promise<void> {
      await tx.query('DELETE FROM customers WHERE id = $1', [id]);
    },
  };
}

export type CustomersRepository = ReturnType<typeof createCustomersRepository>;
