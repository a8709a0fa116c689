import type { Queryable, Tx } from '../storage/db.js';
import type { ClientOwner, ClientType } from '../domain/oauth-clients.js';
import type { Scope } from '../domain/scopes.js';

export interface ClientRecord {
  id: string;
  secretHash: string;
  name: string;
  type: ClientType;
  redirectUri: string | null;
  scope: Scope;
  owner: ClientOwner;
  createdAt: Date;
  updatedAt: Date;
}

interface Row {
  id: string; secret_hash: string; name: string; type: ClientType; redirect_uri: string | null; scope: string | null;
  owner_kind: 'user' | 'product'; owner_id: string; created_at: Date; updated_at: Date;
}

const toClient = (r: Row): ClientRecord => ({
  id: r.id,
  secretHash: r.secret_hash,
  name: r.name,
  type: r.type,
  redirectUri: r.redirect_uri,
  scope: r.scope as Scope,
  owner: { kind: r.owner_kind, id: r.owner_id },
  createdAt: new Date(r.created_at),
  updatedAt: new Date(r.updated_at),
});

export function createClientsRepository(db: Queryable) {
  return {
    /** Returns false when the id is taken. */
    async insert(c: ClientRecord, q: Queryable = db): Promise<boolean> {
      const rows = await q.query(
        `INSERT INTO oauth_clients (id, secret_hash, name, type, redirect_uri, scope, owner_kind, owner_id, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) ON CONFLICT (id) DO NOTHING RETURNING id`,
        [c.id, c.secretHash, c.name, c.type, c.redirectUri, c.scope, c.owner.kind, c.owner.id, c.createdAt],
      );
      return rows.length === 1;
    },
    async findById(id: string, q: Queryable = db): Promise<ClientRecord | undefined> {
      const rows = await q.query<Row>('SELECT * FROM oauth_clients WHERE id = $1', [id]);
      return rows[0] && toClient(rows[0]);
    },
    async listByOwner(owner: ClientOwner, q: Queryable = db): Promise<ClientRecord[]> {
      const rows = await q.query<Row>('SELECT * FROM oauth_clients WHERE owner_kind = $1 AND owner_id = $2 ORDER BY created_at, id', [owner.kind, owner.id]);
      return rows.map(toClient);
    },
    async update(id: string, change: { name?: string; scope?: Scope }, at: Date, q: Queryable = db): Promise<ClientRecord | undefined> {
      const rows = await q.query<Row>(
        `UPDATE oauth_clients SET name = COALESCE($2, name), scope = CASE WHEN $3 THEN $4 ELSE scope END, updated_at = $5
         WHERE id = $1 RETURNING *`,
        [id, change.name ?? null, change.scope !== undefined, change.scope ?? null, at],
      );
      return rows[0] && toClient(rows[0]);
    },
    /** Within the transaction that revokes the client's tokens. */
    async delete(id: string, tx: Tx): Promise<boolean> {
      const rows = await tx.query('DELETE FROM oauth_clients WHERE id = $1 RETURNING id', [id]);
      return rows.length === 1;
    },
    /** Within the transaction that revokes the clients' tokens; returns their ids. */
    async deleteByOwner(owner: ClientOwner, tx: Tx): Promise<string[]> {
      const rows = await tx.query<{ id: string }>('DELETE FROM oauth_clients WHERE owner_kind = $1 AND owner_id = $2 RETURNING id', [owner.kind, owner.id]);
      return rows.map((r) => r.id);
    },
  };
}

export type ClientsRepository = ReturnType<typeof createClientsRepository>;
