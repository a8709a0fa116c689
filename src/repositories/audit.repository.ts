import type { Queryable } from '../storage/db.js';
import { oneStatement, unnestOf, type BatchInsert } from '../storage/batch-insert.js';
import { isoTime } from '../platform/iso-time.js';

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

/**
 * The INSERT of a batch of events, which a batch of another table can write in the same
 * statement (tokens.repository.ts). Identical events (same account, type, address and details; a
 * back-end minting tokens in a loop) become one row whose details carry a `count`.
 */
export function auditInsert(events: Array<Omit<AuditEvent, 'id'>>): BatchInsert {
  const rows = coalesce(events);
  return {
    sql: (first) => `INSERT INTO audit_events (account_kind, account_id, type, ip, details, at)
          ${unnestOf(first, ['text', 'text', 'text', 'text', 'jsonb', 'timestamptz'])}`,
    params: [rows.map((e) => e.accountKind), rows.map((e) => e.accountId), rows.map((e) => e.type), rows.map((e) => e.ip),
      rows.map((e) => JSON.stringify(e.details)), rows.map((e) => isoTime(e.at))],
  };
}

/** Folds identical events (same account, type, address and details) into one with `count`. */
export function coalesce(events: Array<Omit<AuditEvent, 'id'>>): Array<Omit<AuditEvent, 'id'>> {
  const groups = new Map<string, { event: Omit<AuditEvent, 'id'>; count: number }>();
  for (const e of events) {
    const key = JSON.stringify([e.accountKind, e.accountId, e.type, e.ip, e.details]);
    const g = groups.get(key);
    if (g) g.count += 1;
    else groups.set(key, { event: e, count: 1 });
  }
  return [...groups.values()].map((g) => (g.count === 1 ? g.event : { ...g.event, details: { ...g.event.details, count: g.count } }));
}

export function createAuditRepository(db: Queryable) {
  return {
    /** Inserts events in one statement (the audit service batches them). */
    async insertMany(events: Array<Omit<AuditEvent, 'id'>>, q: Queryable = db): Promise<void> {
      if (events.length === 0) return;
      const insert = oneStatement([auditInsert(events)]);
      await q.query(insert.sql, insert.params);
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
