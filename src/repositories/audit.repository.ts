import type { Queryable } from '../storage/db.js';

export interface AuditEvent {
  id: number;
  accountKind: 'user' | 'product' | 'customer';
  accountId: string;
  type: string;
  ip: string | null;
  details: Record<string, unknown>;
  at: Date;
}

interface Row { id: number | string; account_kind: AuditEvent['accountKind']; account_id: string; type: string; ip: string | null; details: Record<string, unknown>; at: Date }

export function createAuditRepository(db: Queryable) {
  return {
    /** Inserts events in one statement (the audit service batches them). */
    async insertMany(events: Array<Omit<AuditEvent, 'id'>>, q: Queryable = db): Promise<void> {
      if (events.length === 0) return;
      await q.query(
        `INSERT INTO audit_events (account_kind, account_id, type, ip, details, at)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::timestamptz[])`,
        [events.map((e) => e.accountKind), events.map((e) => e.accountId), events.map((e) => e.type), events.map((e) => e.ip),
          events.map((e) => JSON.stringify(e.details)), events.map((e) => e.at)],
      );
    },
    /** Newest first. */
    async list(accountKind: AuditEvent['accountKind'], accountId: string, limit: number, offset: number): Promise<{ events: AuditEvent[]; total: number }> {
      const rows = await db.query<Row>('SELECT * FROM audit_events WHERE account_kind = $1 AND account_id = $2 ORDER BY id DESC LIMIT $3 OFFSET $4',
        [accountKind, accountId, limit, offset]);
      const count = await db.query<{ n: number | string }>('SELECT count(*) AS n FROM audit_events WHERE account_kind = $1 AND account_id = $2', [accountKind, accountId]);
      return {
        events: rows.map((r) => ({ id: Number(r.id), accountKind: r.account_kind, accountId: r.account_id, type: r.type, ip: r.ip, details: r.details ?? {}, at: new Date(r.at) })),
        total: Number(count[0]?.n ?? 0),
      };
    },
  };
}

export type AuditRepository = ReturnType<typeof createAuditRepository>;
