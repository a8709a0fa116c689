import type { Queryable } from '../storage/db.js';
import type { DeviceOwner } from './devices.repository.js';

export interface ClaimCodeRecord {
  codeHash: string;
  owner: DeviceOwner;
  productId: number | null;
  createdAt: Date;
  expiresAt: Date;
}

interface Row { code_hash: string; owner_kind: DeviceOwner['kind']; owner_id: string; product_id: number | string | null; created_at: Date; expires_at: Date }

export function createClaimsRepository(db: Queryable) {
  return {
    async insert(c: ClaimCodeRecord): Promise<void> {
      await db.query('INSERT INTO claim_codes (code_hash, owner_kind, owner_id, product_id, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)',
        [c.codeHash, c.owner.kind, c.owner.id, c.productId, c.createdAt, c.expiresAt]);
    },
    /** Takes a code out: single use, and of two concurrent claims only one gets it. */
    async consume(codeHash: string, q: Queryable = db): Promise<ClaimCodeRecord | undefined> {
      const rows = await q.query<Row>('DELETE FROM claim_codes WHERE code_hash = $1 RETURNING *', [codeHash]);
      const r = rows[0];
      return r && { codeHash: r.code_hash, owner: { kind: r.owner_kind, id: r.owner_id }, productId: r.product_id === null ? null : Number(r.product_id), createdAt: new Date(r.created_at), expiresAt: new Date(r.expires_at) };
    },
    async deleteForOwner(owner: DeviceOwner, q: Queryable = db): Promise<void> {
      await q.query('DELETE FROM claim_codes WHERE owner_kind = $1 AND owner_id = $2', [owner.kind, owner.id]);
    },
    async purgeExpired(now: Date): Promise<void> {
      await db.query('DELETE FROM claim_codes WHERE expires_at < $1', [now]);
    },
  };
}

export type ClaimsRepository = ReturnType<typeof createClaimsRepository>;
