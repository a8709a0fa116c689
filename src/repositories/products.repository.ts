import type { Queryable, Tx } from '../storage/db.js';

export interface ProductRecord {
  id: number;
  slug: string;
  name: string;
  description: string;
  platformId: number;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
  /** Devices in the fleet, kept by the devices repository in the same transactions. */
  deviceCount: number;
}

export interface MemberRecord {
  userId: string;
  username: string;
  role: string;
  mfaEnabled: boolean;
  addedAt: Date;
}

interface Row { id: number | string; slug: string; name: string; description: string; platform_id: number; created_by: string; created_at: Date; updated_at: Date; device_count: number | null }

const toProduct = (r: Row): ProductRecord => ({
  id: Number(r.id), slug: r.slug, name: r.name, description: r.description, platformId: Number(r.platform_id),
  createdBy: r.created_by, createdAt: new Date(r.created_at), updatedAt: new Date(r.updated_at), deviceCount: Number(r.device_count ?? 0),
});

export function createProductsRepository(db: Queryable) {
  return {
    /** Inserts a product and its first member; undefined when the slug is taken. */
    async insert(p: Omit<ProductRecord, 'id' | 'deviceCount'>, q: Queryable = db): Promise<ProductRecord | undefined> {
      const rows = await q.query<Row>(
        `INSERT INTO products (slug, name, description, platform_id, created_by, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (slug) DO NOTHING RETURNING *`,
        [p.slug, p.name, p.description, p.platformId, p.createdBy, p.createdAt],
      );
      return rows[0] && toProduct(rows[0]);
    },
    async find(idOrSlug: { id?: number; slug?: string }, q: Queryable = db): Promise<ProductRecord | undefined> {
      const rows = idOrSlug.id !== undefined
        ? await q.query<Row>('SELECT * FROM products WHERE id = $1', [idOrSlug.id])
        : await q.query<Row>('SELECT * FROM products WHERE slug = $1', [idOrSlug.slug]);
      return rows[0] && toProduct(rows[0]);
    },
    /** A product and whether the user is in its team, in one query (every console request asks). */
    async findForUser(idOrSlug: { id?: number; slug?: string }, userId: string): Promise<{ product: ProductRecord; member: boolean } | undefined> {
      const byId = idOrSlug.id !== undefined;
      const rows = await db.query<Row & { member: boolean }>(
        `SELECT p.*, EXISTS (SELECT 1 FROM product_members m WHERE m.product_id = p.id AND m.user_id = $2) AS member
         FROM products p WHERE ${byId ? 'p.id = $1' : 'p.slug = $1'}`,
        [byId ? idOrSlug.id : idOrSlug.slug, userId]);
      return rows[0] && { product: toProduct(rows[0]), member: rows[0].member };
    },
    async listForUser(userId: string): Promise<ProductRecord[]> {
      const rows = await db.query<Row>('SELECT p.* FROM products p JOIN product_members m ON m.product_id = p.id WHERE m.user_id = $1 ORDER BY p.id', [userId]);
      return rows.map(toProduct);
    },
    async update(id: number, change: { name?: string; description?: string }, at: Date): Promise<ProductRecord | undefined> {
      const rows = await db.query<Row>('UPDATE products SET name = COALESCE($2, name), description = COALESCE($3, description), updated_at = $4 WHERE id = $1 RETURNING *',
        [id, change.name ?? null, change.description ?? null, at]);
      return rows[0] && toProduct(rows[0]);
    },
    /** Within the transaction that removes the product's clients and tokens. */
    async delete(id: number, tx: Tx): Promise<void> {
      await tx.query('DELETE FROM products WHERE id = $1', [id]);
    },
    async isMember(productId: number, userId: string, q: Queryable = db): Promise<boolean> {
      return (await q.query('SELECT 1 FROM product_members WHERE product_id = $1 AND user_id = $2', [productId, userId])).length === 1;
    },
    async addMember(productId: number, userId: string, role: string, at: Date, q: Queryable = db): Promise<boolean> {
      const rows = await q.query('INSERT INTO product_members (product_id, user_id, role, added_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING 1', [productId, userId, role, at]);
      return rows.length === 1;
    },
    async removeMember(productId: number, userId: string): Promise<boolean> {
      return (await db.query('DELETE FROM product_members WHERE product_id = $1 AND user_id = $2 RETURNING 1', [productId, userId])).length === 1;
    },
    async members(productId: number): Promise<MemberRecord[]> {
      const rows = await db.query<{ user_id: string; username: string; role: string; mfa_secret: string | null; added_at: Date }>(
        'SELECT m.user_id, u.username, m.role, u.mfa_secret, m.added_at FROM product_members m JOIN users u ON u.id = m.user_id WHERE m.product_id = $1 ORDER BY m.added_at, u.username',
        [productId]);
      return rows.map((r) => ({ userId: r.user_id, username: r.username, role: r.role, mfaEnabled: r.mfa_secret !== null, addedAt: new Date(r.added_at) }));
    },
    /** Products whose only member is this user (they would be orphaned by the user's deletion). */
    async soleMemberOf(userId: string): Promise<number[]> {
      const rows = await db.query<{ product_id: number | string }>(
        `SELECT product_id FROM product_members WHERE product_id IN (SELECT product_id FROM product_members WHERE user_id = $1)
         GROUP BY product_id HAVING count(*) = 1`, [userId]);
      return rows.map((r) => Number(r.product_id));
    },
    /**
     * Every configuration write of a product (values of any scope, its schema) takes the product's
     * row first, in its transaction: writes take turns, each validates against the schema in force
     * once it has the turn, history versions count up without gaps, and locks are always taken in
     * the same order (no deadlock with a fleet write updating device rows). NO KEY UPDATE, so the
     * foreign keys of other writers (KEY SHARE) never wait on it.
     */
    async lockForConfiguration(productId: number, tx: Tx): Promise<void> {
      await tx.query('SELECT 1 FROM products WHERE id = $1 FOR NO KEY UPDATE', [productId]);
    },
  };
}

export type ProductsRepository = ReturnType<typeof createProductsRepository>;
