import type { Queryable, Db, Tx } from '../storage/db.js';
import type { Scope } from '../domain/scopes.js';
import type { Subject } from '../domain/subject.js';
import { commitsFor, createBatcher } from '../storage/batcher.js';
import { auditInsert, type AuditEvent } from './audit.repository.js';
import { oneStatement, unnestOf, type BatchInsert } from '../storage/batch-insert.js';
import { isoTime } from '../platform/iso-time.js';

export interface AccessTokenRecord {
  tokenHash: string;
  subject: Subject;
  clientId: string;
  scope: Scope;
  createdAt: Date;
  expiresAt: Date | null;
  /** The session the token belongs to (migrations/0009_token_sessions.sql). */
  sessionId: string;
  /** A temporary token's own limit (it also ends with its session); null for a session's own tokens. */
  temporaryUntil: Date | null;
}

export interface RefreshTokenRecord {
  tokenHash: string;
  accessTokenHash: string;
  subject: Subject;
  clientId: string;
  scope: Scope;
  /** Lifetime, in seconds, of the access tokens this refresh token makes. */
  accessExpiresIn: number;
  createdAt: Date;
  expiresAt: Date;
  sessionId: string;
}

interface SubjectColumns { subject_kind: Subject['kind']; user_id: string | null; product_id: string | null; customer_id: string | null }

const subjectColumns = (s: Subject): [string, string | null, string | null, string | null] => [
  s.kind,
  s.kind === 'user' ? s.userId : null,
  s.kind === 'user' ? null : s.productId,
  s.kind === 'customer' ? s.customerId : null,
];

function toSubject(r: SubjectColumns): Subject {
  if (r.subject_kind === 'user') return { kind: 'user', userId: r.user_id as string };
  if (r.subject_kind === 'product') return { kind: 'product', productId: r.product_id as string };
  return { kind: 'customer', customerId: r.customer_id as string, productId: r.product_id as string };
}

interface AccessRow extends SubjectColumns { token_hash: string; client_id: string; scope: string | null; created_at: Date; expires_at: Date | null; session_id: string; temporary_until?: Date | null }
interface RefreshRow extends AccessRow { access_token_hash: string; access_expires_in: number }

const toAccess = (r: AccessRow): AccessTokenRecord => ({
  tokenHash: r.token_hash,
  subject: toSubject(r),
  clientId: r.client_id,
  scope: r.scope as Scope,
  createdAt: new Date(r.created_at),
  expiresAt: r.expires_at === null ? null : new Date(r.expires_at),
  sessionId: r.session_id,
  temporaryUntil: r.temporary_until == null ? null : new Date(r.temporary_until),
});

const toRefresh = (r: RefreshRow): RefreshTokenRecord => ({
  ...toAccess(r),
  accessTokenHash: r.access_token_hash,
  accessExpiresIn: Number(r.access_expires_in),
  expiresAt: new Date(r.expires_at as Date),
  sessionId: r.session_id,
});

function subjectWhere(s: Subject, first: number): { sql: string; params: string[] } {
  if (s.kind === 'user') return { sql: `subject_kind = 'user' AND user_id = $${first}`, params: [s.userId] };
  if (s.kind === 'product') return { sql: `subject_kind = 'product' AND product_id = $${first}`, params: [s.productId] };
  return { sql: `subject_kind = 'customer' AND customer_id = $${first}`, params: [s.customerId] };
}

/** A token's id in lists: the start of its SHA-256 digest (64 bits), never the token itself. */
export const TOKEN_ID_LENGTH = 16;

// Timestamps go as ISO 8601 text: pg formats a Date parameter field by field in local time,
// which cost more than the rest of a token's parameters. isoTime spares V8's formatter too (two
// times a token, 2.4 % of the main thread under a token load by a CPU profile).
const iso = (d: Date | null): string | null => (d === null ? null : isoTime(d));

interface PendingToken { access: AccessTokenRecord; refresh?: RefreshTokenRecord | undefined; event?: Omit<AuditEvent, 'id'> | undefined }

function accessInsert(access: readonly AccessTokenRecord[]): BatchInsert {
  const subjects = access.map((a) => subjectColumns(a.subject));
  return {
    sql: (first) => `INSERT INTO access_tokens (token_hash, subject_kind, user_id, product_id, customer_id, client_id, scope, created_at, expires_at, session_id, temporary_until)
       ${unnestOf(first, ['text', 'text', 'text', 'text', 'text', 'text', 'text', 'timestamptz', 'timestamptz', 'text', 'timestamptz'])}`,
    params: [access.map((a) => a.tokenHash), ...[0, 1, 2, 3].map((c) => subjects.map((x) => x[c])), access.map((a) => a.clientId), access.map((a) => a.scope),
      access.map((a) => iso(a.createdAt)), access.map((a) => iso(a.expiresAt)), access.map((a) => a.sessionId), access.map((a) => iso(a.temporaryUntil))],
  };
}

function refreshInsert(refresh: readonly RefreshTokenRecord[]): BatchInsert {
  const subjects = refresh.map((r) => subjectColumns(r.subject));
  return {
    sql: (first) => `INSERT INTO refresh_tokens (token_hash, access_token_hash, subject_kind, user_id, product_id, customer_id, client_id, scope, access_expires_in, created_at, expires_at, session_id)
       ${unnestOf(first, ['text', 'text', 'text', 'text', 'text', 'text', 'text', 'text', 'int', 'timestamptz', 'timestamptz', 'text'])}`,
    params: [refresh.map((r) => r.tokenHash), refresh.map((r) => r.accessTokenHash), ...[0, 1, 2, 3].map((c) => subjects.map((x) => x[c])), refresh.map((r) => r.clientId),
      refresh.map((r) => r.scope), refresh.map((r) => r.accessExpiresIn), refresh.map((r) => iso(r.createdAt)), refresh.map((r) => iso(r.expiresAt)),
      refresh.map((r) => r.sessionId)],
  };
}

/**
 * The one statement that stores tokens, their refresh tokens and their audit events: a batch of
 * them (the batcher's), or a single one written in a caller's transaction. A table the batch has
 * no rows for is left out of the statement: each table in it is opened and locked with all its
 * indexes whether rows go in or not, and client credentials never make refresh tokens
 * (docs/benchmarks.md, "Token issuance and authenticated reads").
 */
function insertTokens(items: readonly PendingToken[]): { sql: string; params: unknown[] } {
  const refresh = items.flatMap((i) => (i.refresh ? [i.refresh] : []));
  const events = items.flatMap((i) => (i.event ? [i.event] : []));
  const inserts = [accessInsert(items.map((i) => i.access))];
  if (refresh.length > 0) inserts.push(refreshInsert(refresh));
  if (events.length > 0) inserts.push(auditInsert(events));
  return oneStatement(inserts);
}

/**
 * The access tokens of session `$1`: the token that began it, whose own hash names the session
 * and which the primary key finds, and those that joined it, which the partial session index
 * finds (migrations/0016_token_session_index.sql). Written as the two so that the planner can use
 * both indexes; together they are exactly `session_id = $1`.
 */
const IN_SESSION = '((token_hash = $1 AND session_id = $1) OR (session_id = $1 AND session_id <> token_hash))';

export function createTokensRepository(db: Db) {
  // Token issuance is the hot write path: inserts share one statement (storage/batcher.ts), a
  // data-modifying WITH for the token tables and the batch's audit events, so that it is atomic
  // without a transaction's extra round trips and a token costs one flush; one array per column
  // (unnest), which the embedded store runs faster than a VALUES list with a parameter per cell
  // (docs/benchmarks.md, "Measurements behind design choices").
  const batcher = createBatcher<PendingToken>(async (items) => {
    const insert = insertTokens(items);
    await db.query(insert.sql, insert.params, { prepare: true });
  }, { inFlight: commitsFor(db.kind) });

  return {
    /**
     * Stores a token, its refresh token and its audit event, all or none: batched with other
     * requests' tokens, or, with `tx`, at once in the caller's transaction (a token that is part
     * of a larger write must commit or roll back with it, and a batch runs outside it).
     */
    insert(access: AccessTokenRecord, refresh?: RefreshTokenRecord, event?: Omit<AuditEvent, 'id'>, tx?: Tx): Promise<void> {
      if (!tx) return batcher.add({ access, refresh, event });
      const insert = insertTokens([{ access, refresh, event }]);
      return tx.query(insert.sql, insert.params, { prepare: true }).then(() => undefined);
    },
    async findAccess(tokenHash: string): Promise<AccessTokenRecord | undefined> {
      const rows = await db.query<AccessRow>('SELECT * FROM access_tokens WHERE token_hash = $1', [tokenHash]);
      return rows[0] && toAccess(rows[0]);
    },
    /**
     * Deletes an access token and the refresh tokens made with it. A session's own token takes
     * with it the session's tokens up to it (those it was renewed from) and the session's
     * temporary tokens; a token renewed from it later lives on, so that revoking an old token
     * never ends a newer one. A temporary token goes alone. Several statements, so a
     * transaction's. Returns the token, if there was one, and the hashes to forget: the one
     * asked for and every other deleted access token's.
     */
    async deleteAccess(tokenHash: string, tx: Tx): Promise<{ record: AccessTokenRecord | undefined; gone: string[] }> {
      const rows = await tx.query<AccessRow>('DELETE FROM access_tokens WHERE token_hash = $1 RETURNING *', [tokenHash]);
      const record = rows[0] && toAccess(rows[0]);
      let gone = [tokenHash];
      if (record && record.temporaryUntil === null) {
        const before = await tx.query<{ token_hash: string }>(
          `DELETE FROM access_tokens WHERE ${IN_SESSION} AND (temporary_until IS NOT NULL OR created_at <= $2::timestamptz) RETURNING token_hash`,
          [record.sessionId, iso(record.createdAt)]);
        gone = [tokenHash, ...before.map((r) => r.token_hash)];
      }
      await tx.query('DELETE FROM refresh_tokens WHERE access_token_hash = ANY($1::text[])', [gone]);
      return { record, gone };
    },
    /** Deletes every access and refresh token of a session; returns the deleted access tokens' hashes. */
    async deleteSession(sessionId: string, tx: Tx): Promise<string[]> {
      const rows = await tx.query<{ token_hash: string }>(`DELETE FROM access_tokens WHERE ${IN_SESSION} RETURNING token_hash`, [sessionId]);
      await tx.query('DELETE FROM refresh_tokens WHERE session_id = $1', [sessionId]);
      return rows.map((r) => r.token_hash);
    },
    /**
     * A session renewed until `until`: its live temporary tokens may now live that long (never
     * past their own limit). Expired ones stay expired.
     */
    async extendTemporary(sessionId: string, until: Date, now: Date, tx: Tx): Promise<string[]> {
      const rows = await tx.query<{ token_hash: string }>(
        `UPDATE access_tokens SET expires_at = LEAST(temporary_until, $2::timestamptz)
          WHERE ${IN_SESSION} AND temporary_until IS NOT NULL AND expires_at > $3::timestamptz RETURNING token_hash`,
        [sessionId, iso(until), iso(now)]);
      return rows.map((r) => r.token_hash);
    },
    /** A user's live tokens, newest first, a page of them, and how many there are. */
    async listForUser(userId: string, now: Date, limit: number, offset: number): Promise<{ tokens: AccessTokenRecord[]; total: number }> {
      const live = `subject_kind = 'user' AND user_id = $1 AND (expires_at IS NULL OR expires_at > $2::timestamptz)`;
      const rows = await db.query<AccessRow>(`SELECT * FROM access_tokens WHERE ${live} ORDER BY created_at DESC, token_hash LIMIT $3 OFFSET $4`, [userId, iso(now), limit, offset]);
      const count = await db.query<{ n: string | number }>(`SELECT count(*) AS n FROM access_tokens WHERE ${live}`, [userId, iso(now)]);
      return { tokens: rows.map(toAccess), total: Number(count[0]?.n ?? 0) };
    },
    /** A user's token by the start of its hash (the id the token list shows). */
    async findForUserById(userId: string, idPrefix: string): Promise<AccessTokenRecord | undefined> {
      const rows = await db.query<AccessRow>(
        `SELECT * FROM access_tokens WHERE subject_kind = 'user' AND user_id = $1 AND left(token_hash, ${TOKEN_ID_LENGTH}) = $2 LIMIT 2`, [userId, idPrefix]);
      return rows.length === 1 ? toAccess(rows[0] as AccessRow) : undefined;
    },
    /** Deletes every token of a subject but `keepHash`; returns the deleted hashes. */
    async deleteForSubject(subject: Subject, keepHash: string | null, tx: Tx): Promise<string[]> {
      const w = subjectWhere(subject, 2);
      const rows = await tx.query<{ token_hash: string }>(
        `DELETE FROM access_tokens WHERE ${w.sql} AND token_hash IS DISTINCT FROM $1 RETURNING token_hash`, [keepHash, ...w.params]);
      await tx.query(`DELETE FROM refresh_tokens WHERE ${w.sql} AND access_token_hash IS DISTINCT FROM $1`, [keepHash, ...w.params]);
      return rows.map((r) => r.token_hash);
    },
    /** Deletes the tokens of a product and of all its customers; returns the deleted hashes. */
    async deleteForProduct(productId: string, tx: Tx): Promise<string[]> {
      const rows = await tx.query<{ token_hash: string }>('DELETE FROM access_tokens WHERE product_id = $1 RETURNING token_hash', [productId]);
      await tx.query('DELETE FROM refresh_tokens WHERE product_id = $1', [productId]);
      return rows.map((r) => r.token_hash);
    },
    /** Deletes the tokens made with these clients; returns the deleted access tokens' hashes. */
    async deleteForClients(clientIds: readonly string[], tx: Tx): Promise<string[]> {
      if (clientIds.length === 0) return [];
      const rows = await tx.query<{ token_hash: string }>('DELETE FROM access_tokens WHERE client_id = ANY($1::text[]) RETURNING token_hash', [clientIds]);
      await tx.query('DELETE FROM refresh_tokens WHERE client_id = ANY($1::text[])', [clientIds]);
      return rows.map((r) => r.token_hash);
    },
    async findRefresh(tokenHash: string): Promise<RefreshTokenRecord | undefined> {
      const rows = await db.query<RefreshRow>('SELECT * FROM refresh_tokens WHERE token_hash = $1', [tokenHash]);
      return rows[0] && toRefresh(rows[0]);
    },
    /** Takes a refresh token out of the store: of two concurrent uses only one gets it (single use). */
    async consumeRefresh(tokenHash: string, q: Queryable = db): Promise<RefreshTokenRecord | undefined> {
      const rows = await q.query<RefreshRow>('DELETE FROM refresh_tokens WHERE token_hash = $1 RETURNING *', [tokenHash]);
      return rows[0] && toRefresh(rows[0]);
    },
    /** Removes expired access and refresh tokens; returns how many. */
    async purgeExpired(now: Date, tx: Tx): Promise<number> {
      const a = await tx.query('DELETE FROM access_tokens WHERE expires_at IS NOT NULL AND expires_at < $1 RETURNING 1', [now]);
      const r = await tx.query('DELETE FROM refresh_tokens WHERE expires_at < $1 RETURNING 1', [now]);
      return a.length + r.length;
    },
  };
}

export type TokensRepository = ReturnType<typeof createTokensRepository>;
