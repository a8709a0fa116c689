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

/**
 * The INSERT of a batch of events, its parameters numbered from `first`, so that a batch of
 * another table can write its events in the same statement (tokens.repository.ts). Identical
 * events (same account, type, address and details; a back-end minting tokens in a loop) become
 * one row whose details carry a `count`.
 */
export function auditInsert(events: Array<Omit<AuditEvent, 'id'>>, first: number): { sql: string; params: unknown[] } {
  const rows = coalesce(events);
  const p = (i: number) => `$${first + i}`;
  return {
    sql: `INSERT INTO audit_events (account_kind, account_id, type, ip, details, at)
          SELECT * FROM unnest(${p(0)}::text[], ${p(1)}::text[], ${p(2)}::text[], ${p(3)}::text[], ${p(4)}::jsonb[], ${p(5)}::timestamptz[])`,
    params: [rows.map((e) => e.accountKind), rows.map((e) => e.accountId), rows.map((e) => e.type), rows.map((e) => e.ip),
      rows.map((e) => JSON.stringify(e.details)), rows.map((e) => e.at.toISOString())],
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
      const insert = auditInsert(events, 1);
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
