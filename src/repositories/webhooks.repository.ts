import { inTransaction, type Db, type Queryable, type Tx } from '../storage/db.js';
import type { DeviceOwner } from './devices.repository.js';
import type { WebhookSpec } from '../services/webhooks/spec.js';
import { isoTime } from '../platform/iso-time.js';

/** Whose a webhook is: a user's (their devices' events) or a product's (its fleet's). */
export type WebhookScope = { kind: 'user'; owner: DeviceOwner } | { kind: 'product'; productId: number };
/** A user account's own webhooks. */
export const userScope = (userId: string): WebhookScope => ({ kind: 'user', owner: { kind: 'user', id: userId } });

export interface WebhookRecord {
  id: string;
  scope: WebhookScope;
  spec: WebhookSpec;
  secret: string;
  previousSecret: string | null;
  previousSecretUntil: Date | null;
  disabledReason: string | null;
  failingSince: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** The event a delivery carries, as it was published. */
export interface DeliveryEvent {
  name: string;
  data: string | null;
  coreid: string;
  published_at: string;
  productId: number | null;
  owner: DeviceOwner | null;
}

export type DeliveryStatus = 'pending' | 'sending' | 'delivered' | 'failed';

export interface DeliveryRecord {
  id: string;
  webhookId: string;
  event: DeliveryEvent;
  status: DeliveryStatus;
  attempts: number;
  skipped: number;
  nextAt: Date;
  createdAt: Date;
  finishedAt: Date | null;
  resendOf: string | null;
}

export interface NewDelivery {
  id: string;
  webhookId: string;
  event: DeliveryEvent;
  createdAt: Date;
  /** Held by this node from the start (it sends at once), until the lease ends. */
  lease: { node: string; until: Date } | null;
  resendOf?: string | null;
}

export interface AttemptRecord {
  deliveryId: string;
  n: number;
  at: Date;
  outcome: 'delivered' | 'failed' | 'skipped';
  status: number | null;
  latencyMs: number;
  answer: string | null;
  error: string | null;
}

/** What an attempt changes: its row in the log, and the delivery's new state. */
export interface AttemptOutcome {
  attempt: AttemptRecord & { webhookId: string };
  delivery: { status: DeliveryStatus; attempts: number; skipped: number; nextAt: Date; finishedAt: Date | null };
}

interface WebhookRow {
  id: string; owner_kind: DeviceOwner['kind'] | null; owner_id: string | null; product_id: number | string | null; spec: WebhookSpec | string;
  secret: string; previous_secret: string | null; previous_secret_until: Date | null; disabled_reason: string | null; failing_since: Date | null;
  created_at: Date; updated_at: Date;
}
interface DeliveryRow {
  id: string; webhook_id: string; event: DeliveryEvent | string; status: DeliveryStatus; attempts: number; skipped: number; next_at: Date;
  created_at: Date; finished_at: Date | null; resend_of: string | null;
}
interface AttemptRow { delivery_id: string; n: number; at: Date; outcome: AttemptRecord['outcome']; status: number | null; latency_ms: number; answer: string | null; error: string | null }

const json = <T>(v: T | string): T => (typeof v === 'string' ? JSON.parse(v) as T : v);
const date = (v: Date | string | null) => (v === null ? null : new Date(v));

function webhook(r: WebhookRow): WebhookRecord {
  return {
    id: r.id,
    scope: r.product_id !== null ? { kind: 'product', productId: Number(r.product_id) } : { kind: 'user', owner: { kind: r.owner_kind as DeviceOwner['kind'], id: r.owner_id as string } },
    spec: json(r.spec), secret: r.secret, previousSecret: r.previous_secret, previousSecretUntil: date(r.previous_secret_until),
    disabledReason: r.disabled_reason, failingSince: date(r.failing_since), createdAt: new Date(r.created_at), updatedAt: new Date(r.updated_at),
  };
}

function delivery(r: DeliveryRow): DeliveryRecord {
  return {
    id: r.id, webhookId: r.webhook_id, event: json(r.event), status: r.status, attempts: r.attempts, skipped: r.skipped,
    nextAt: new Date(r.next_at), createdAt: new Date(r.created_at), finishedAt: date(r.finished_at), resendOf: r.resend_of,
  };
}

function attempt(r: AttemptRow): AttemptRecord {
  return { deliveryId: r.delivery_id, n: r.n, at: new Date(r.at), outcome: r.outcome, status: r.status, latencyMs: r.latency_ms, answer: r.answer, error: r.error };
}

const DELIVERY_COLUMNS = 'id, webhook_id, event, status, attempts, skipped, next_at, created_at, finished_at, resend_of';

export function createWebhooksRepository(db: Db) {
  const scopeWhere = (scope: WebhookScope, first: number) => (scope.kind === 'product'
    ? { sql: `product_id = $${first}`, params: [scope.productId] }
    : { sql: `owner_kind = $${first} AND owner_id = $${first + 1}`, params: [scope.owner.kind, scope.owner.id] });

  /**
   * Deletes the webhooks `where` selects, their deliveries and their attempts; answers how many
   * webhooks went. Neither deliveries nor attempts have a foreign key (migrations/
   * 0017_webhook_attempts_keys.sql, 0019_webhook_deliveries_keys.sql), so each goes in a
   * statement of its own, each seeing what committed before it began:
   * - the deliveries after the webhooks: the webhooks' DELETE waits for a batch of deliveries
   *   that holds a webhook's lock (`insertDeliveries`), whose rows commit after it began;
   * - the attempts after the deliveries: the deliveries' DELETE waits for a settle that holds
   *   some of them, and the attempts that settle writes commit after it began.
   */
  async function removeWhere(tx: Tx, where: string, params: unknown[]): Promise<number> {
    const ids = (await tx.query<{ id: string }>(`DELETE FROM webhooks WHERE ${where} RETURNING id`, params)).map((r) => r.id);
    if (ids.length === 0) return 0;
    await tx.query('DELETE FROM webhook_deliveries WHERE webhook_id = ANY($1::text[])', [ids]);
    await tx.query('DELETE FROM webhook_attempts WHERE webhook_id = ANY($1::text[])', [ids]);
    return ids.length;
  }

  return {
    async insert(w: WebhookRecord, q: Queryable = db): Promise<void> {
      const owner = w.scope.kind === 'user' ? w.scope.owner : null;
      await q.query(
        `INSERT INTO webhooks (id, owner_kind, owner_id, product_id, spec, secret, previous_secret, previous_secret_until, disabled_reason, failing_since, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
        [w.id, owner?.kind ?? null, owner?.id ?? null, w.scope.kind === 'product' ? w.scope.productId : null, JSON.stringify(w.spec), w.secret,
          w.previousSecret, w.previousSecretUntil, w.disabledReason, w.failingSince, w.createdAt, w.updatedAt],
      );
    },

    async update(id: string, change: Partial<Pick<WebhookRecord, 'spec' | 'secret' | 'previousSecret' | 'previousSecretUntil' | 'disabledReason' | 'failingSince'>> & { updatedAt: Date }, q: Queryable = db): Promise<WebhookRecord | undefined> {
      const columns: Record<string, unknown> = { updated_at: change.updatedAt };
      if (change.spec !== undefined) columns.spec = JSON.stringify(change.spec);
      if (change.secret !== undefined) columns.secret = change.secret;
      if (change.previousSecret !== undefined) columns.previous_secret = change.previousSecret;
      if (change.previousSecretUntil !== undefined) columns.previous_secret_until = change.previousSecretUntil;
      if (change.disabledReason !== undefined) columns.disabled_reason = change.disabledReason;
      if (change.failingSince !== undefined) columns.failing_since = change.failingSince;
      const names = Object.keys(columns);
      const rows = await q.query<WebhookRow>(`UPDATE webhooks SET ${names.map((n, i) => `${n} = $${i + 2}`).join(', ')} WHERE id = $1 RETURNING *`, [id, ...Object.values(columns)]);
      return rows[0] && webhook(rows[0]);
    },

    /** Marks a webhook failing since `at`, unless it already is (the first failure after a success counts). */
    async markFailing(id: string, at: Date): Promise<WebhookRecord | undefined> {
      const rows = await db.query<WebhookRow>('UPDATE webhooks SET failing_since = COALESCE(failing_since, $2) WHERE id = $1 RETURNING *', [id, at]);
      return rows[0] && webhook(rows[0]);
    },

    /** Clears the failing mark of those that have one; answers whether any had. */
    async clearFailing(ids: string[]): Promise<boolean> {
      if (ids.length === 0) return false;
      return (await db.query('UPDATE webhooks SET failing_since = NULL WHERE id = ANY($1::text[]) AND failing_since IS NOT NULL RETURNING id', [ids])).length > 0;
    },

    /** A webhook, its deliveries and their attempts (`removeWhere`). */
    async remove(id: string, tx?: Tx): Promise<boolean> {
      return inTransaction(db, tx, async (t) => (await removeWhere(t, 'id = $1', [id])) > 0);
    },

    /** Every webhook of a scope, with their deliveries and attempts: an account or a product deleted. */
    async removeAll(scope: WebhookScope, tx: Tx): Promise<void> {
      const w = scopeWhere(scope, 1);
      await removeWhere(tx, w.sql, w.params);
    },

    async find(id: string, q: Queryable = db): Promise<WebhookRecord | undefined> {
      const rows = await q.query<WebhookRow>('SELECT * FROM webhooks WHERE id = $1', [id]);
      return rows[0] && webhook(rows[0]);
    },

    async list(scope: WebhookScope): Promise<WebhookRecord[]> {
      const w = scopeWhere(scope, 1);
      return (await db.query<WebhookRow>(`SELECT * FROM webhooks WHERE ${w.sql} ORDER BY created_at, id`, w.params)).map(webhook);
    },

    /** Every webhook: what each node keeps in memory to match events (a few thousand at most). */
    async all(): Promise<WebhookRecord[]> {
      return (await db.query<WebhookRow>('SELECT * FROM webhooks ORDER BY id')).map(webhook);
    },

    async countFor(scope: WebhookScope): Promise<number> {
      const w = scopeWhere(scope, 1);
      const rows = await db.query<{ n: string | number }>(`SELECT count(*) AS n FROM webhooks WHERE ${w.sql}`, w.params);
      return Number(rows[0]?.n ?? 0);
    },

    /**
     * Writes the deliveries of many events in one statement (the caller acknowledges the events
     * after it). The rows go as one JSON text: encoding a text array per column (pg's
     * `arrayString`, quoting every element) took a tenth of the main thread under a flood of
     * deliveries, where `JSON.stringify` is native; the store reads JSON as fast as arrays
     * (docs/benchmarks.md, "Webhooks").
     *
     * A delivery of a webhook deleted meanwhile is left out rather than failing the batch (every
     * other event of the batch with it, and the devices that sent them answered as if the store
     * were down). The webhook's row is locked as a foreign key's check would lock it, so a
     * deletion under way is waited for and seen, and a deletion that starts meanwhile waits for
     * this batch and then deletes its rows (`removeWhere`). That lock is the deliveries' only
     * check of their webhook: a foreign key did it again, a trigger per row
     * (migrations/0019_webhook_deliveries_keys.sql). Answers how many were written.
     */
    async insertDeliveries(items: NewDelivery[], q: Queryable = db): Promise<number> {
      if (items.length === 0) return 0;
      const rows = items.map((d) => {
        const at = isoTime(d.createdAt);
        return { id: d.id, webhook_id: d.webhookId, event: d.event, status: d.lease ? 'sending' : 'pending', at, node: d.lease?.node ?? null, until: d.lease ? isoTime(d.lease.until) : null, resend_of: d.resendOf ?? null };
      });
      const written = await q.query<{ n: number }>(
        `WITH written AS (
           INSERT INTO webhook_deliveries (id, webhook_id, event, status, next_at, lease_node, lease_until, created_at, resend_of)
           SELECT id, webhook_id, event, status, at, node, until, at, resend_of
           FROM json_to_recordset($1::json) AS x(id text, webhook_id text, event jsonb, status text, at timestamptz, node text, until timestamptz, resend_of text)
           WHERE EXISTS (SELECT 1 FROM webhooks w WHERE w.id = x.webhook_id FOR KEY SHARE)
           RETURNING 1)
         SELECT count(*)::int AS n FROM written`,
        [JSON.stringify(rows)],
      );
      return Number(written[0]?.n ?? 0);
    },

    /**
     * Takes up to `limit` deliveries that are due (or whose holder's lease ran out) for `node`,
     * the earliest due first, of webhooks that are enabled and not in `exclude`, and one at most
     * of each webhook in `probing` (its host is being probed after a sleep); nodes taking at once
     * get different ones (SKIP LOCKED).
     *
     * It visits the webhooks that have deliveries waiting, one index probe each (`waiting`: a
     * loose scan of `webhook_deliveries_due_by_webhook`), and reads due rows only of those it may
     * take, so a large backlog of a webhook it must leave costs nothing (migrations/
     * 0018_webhook_due_by_webhook.sql). One range per webhook serves both kinds of row: a
     * delivery is `sending` only from a time at which it was due, so a lease that ran out by
     * `now` belongs to a row with `next_at <= now`.
     */
    async claimDue(node: string, now: Date, leaseUntil: Date, limit: number, exclude: string[] = [], probing: string[] = [], q: Queryable = db): Promise<DeliveryRecord[]> {
      const rows = await q.query<DeliveryRow>(
        `UPDATE webhook_deliveries SET status = 'sending', lease_node = $1, lease_until = $3
         WHERE id = ANY(ARRAY(
           WITH RECURSIVE waiting (webhook_id) AS (
             (SELECT webhook_id FROM webhook_deliveries WHERE status IN ('pending', 'sending') ORDER BY webhook_id, next_at LIMIT 1)
             UNION ALL
             SELECT (SELECT d.webhook_id FROM webhook_deliveries d WHERE d.status IN ('pending', 'sending') AND d.webhook_id > w.webhook_id ORDER BY d.webhook_id, d.next_at LIMIT 1)
             FROM waiting w WHERE w.webhook_id IS NOT NULL)
           SELECT due.id FROM waiting JOIN webhooks w ON w.id = waiting.webhook_id
           CROSS JOIN LATERAL (
             SELECT d.id, d.next_at FROM webhook_deliveries d
             WHERE d.webhook_id = w.id AND d.status IN ('pending', 'sending') AND d.next_at <= $2 AND (d.status = 'pending' OR d.lease_until <= $2)
             ORDER BY d.next_at LIMIT CASE WHEN w.id = ANY($6::text[]) THEN 1 ELSE $4 END FOR UPDATE OF d SKIP LOCKED) due
           WHERE w.disabled_reason IS NULL AND NOT COALESCE((w.spec->>'disabled')::boolean, false) AND w.id <> ALL($5::text[])
           ORDER BY due.next_at LIMIT $4))
         RETURNING ${DELIVERY_COLUMNS}`,
        [node, now, leaseUntil, limit, exclude, probing],
      );
      return rows.map(delivery);
    },

    /**
     * A batch of attempts and their deliveries' next states in one statement (a data-modifying
     * `WITH`): atomic by itself, so a batch costs one round trip, not a transaction's four
     * (docs/benchmarks.md, "Webhooks"). Only the deliveries still stored take their attempts: one
     * whose webhook was deleted meanwhile (its deliveries with it) leaves none behind. The UPDATE
     * locks the rows it settles, so a deletion waits for this statement, and `remove` then deletes
     * what it wrote. No foreign key checks the attempts against the deliveries: the UPDATE has
     * just found each one, and the key's check was a query planned once per session that read the
     * whole table once it had grown (migrations/0017_webhook_attempts_keys.sql).
     *
     * Not prepared: a plan is then made for the table as it is at each run. A prepared one kept
     * the plan made while the table was small, a hash join over all of `webhook_deliveries`, and
     * under a flood that grows the table by thousands of rows a second it read every row at
     * every batch until the next ANALYZE (docs/benchmarks.md, "Webhooks"). Planning costs little
     * beside a batch of rows.
     */
    async recordAttempts(outcomes: AttemptOutcome[], q: Queryable = db): Promise<void> {
      if (outcomes.length === 0) return;
      // One JSON text for the batch, as the deliveries' insert (above). Its LIMIT, the batch's
      // size, is the planner's estimate of its rows: a function's own is a fixed 100, against
      // which reading the whole table looked cheaper than 100 look-ups while it was small.
      const rows = outcomes.map(({ attempt: a, delivery: d }) => ({
        id: a.deliveryId, n: a.n, webhook_id: a.webhookId, at: isoTime(a.at), outcome: a.outcome, code: a.status, latency_ms: a.latencyMs, answer: a.answer, error: a.error,
        status: d.status, attempts: d.attempts, skipped: d.skipped, next_at: isoTime(d.nextAt), finished_at: d.finishedAt ? isoTime(d.finishedAt) : null,
      }));
      await q.query(
        `WITH u AS (
           SELECT * FROM json_to_recordset($1::json) AS x(id text, n int, webhook_id text, at timestamptz, outcome text, code int, latency_ms int, answer text, error text,
             status text, attempts int, skipped int, next_at timestamptz, finished_at timestamptz)
           LIMIT $2),
         settled AS (
           UPDATE webhook_deliveries AS t SET status = u.status, attempts = u.attempts, skipped = u.skipped, next_at = u.next_at, finished_at = u.finished_at,
             lease_node = NULL, lease_until = NULL
           FROM u WHERE t.id = u.id
           RETURNING t.id)
         INSERT INTO webhook_attempts (delivery_id, n, webhook_id, at, outcome, status, latency_ms, answer, error)
         SELECT id, n, webhook_id, at, outcome, code, latency_ms, answer, error FROM u
         WHERE u.id IN (SELECT id FROM settled)
         ON CONFLICT DO NOTHING`,
        [JSON.stringify(rows), rows.length],
      );
    },

    /** A webhook's pending deliveries, waiting for their step of the schedule, due now (its receiver answers again). */
    async dueNow(webhookId: string, now: Date): Promise<number> {
      const rows = await db.query<{ n: number }>(
        "WITH due AS (UPDATE webhook_deliveries SET next_at = $2 WHERE webhook_id = $1 AND status = 'pending' AND next_at > $2 RETURNING 1) SELECT count(*)::int AS n FROM due",
        [webhookId, now],
      );
      return rows[0]?.n ?? 0;
    },

    /** Hands deliveries held by a node back (it stops): due again at once, for whichever node takes them. */
    async release(node: string, ids: string[]): Promise<void> {
      if (ids.length > 0) await db.query("UPDATE webhook_deliveries SET status = 'pending', lease_node = NULL, lease_until = NULL WHERE id = ANY($2::text[]) AND lease_node = $1 AND status = 'sending'", [node, ids]);
    },

    async findDelivery(id: string): Promise<DeliveryRecord | undefined> {
      const rows = await db.query<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE id = $1`, [id]);
      return rows[0] && delivery(rows[0]);
    },

    /**
     * A webhook's deliveries, newest first, with their attempts. `before` pages back: a time (those
     * created before it), or a delivery (those after it in this order: a replay writes many
     * deliveries at one instant, and a page may end among them).
     */
    async deliveries(webhookId: string, options: { limit: number; before?: Date | { at: Date; id: string }; status?: DeliveryStatus }): Promise<Array<DeliveryRecord & { log: AttemptRecord[] }>> {
      const params: unknown[] = [webhookId, options.limit];
      let where = 'webhook_id = $1';
      const before = options.before;
      if (before instanceof Date) { params.push(before); where += ` AND created_at < $${params.length}`; }
      else if (before) { params.push(before.at, before.id); where += ` AND (created_at, id) < ($${params.length - 1}, $${params.length})`; }
      if (options.status) { params.push(options.status); where += ` AND status = $${params.length}`; }
      const rows = (await db.query<DeliveryRow>(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT $2`, params)).map(delivery);
      if (rows.length === 0) return [];
      const attempts = (await db.query<AttemptRow>('SELECT * FROM webhook_attempts WHERE delivery_id = ANY($1::text[]) ORDER BY n', [rows.map((r) => r.id)])).map(attempt);
      return rows.map((r) => ({ ...r, log: attempts.filter((x) => x.deliveryId === r.id) }));
    },

    /** Deliveries of a webhook created in [from, to), oldest first (for a replay). */
    async deliveriesBetween(webhookId: string, from: Date, to: Date, limit: number): Promise<DeliveryRecord[]> {
      return (await db.query<DeliveryRow>(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = $1 AND created_at >= $2 AND created_at < $3 AND resend_of IS NULL ORDER BY created_at, id LIMIT $4`,
        [webhookId, from, to, limit],
      )).map(delivery);
    },

    /** Counts of a webhook's attempts by outcome since `since` (the log's 30 days). */
    async counts(webhookId: string, since: Date): Promise<{ delivered: number; failed: number; skipped: number; pending: number }> {
      const rows = await db.query<{ outcome: string; n: string | number }>(
        `SELECT outcome, count(*) AS n FROM webhook_attempts WHERE webhook_id = $1 AND at >= $2 GROUP BY outcome
         UNION ALL SELECT 'pending', count(*) FROM webhook_deliveries WHERE webhook_id = $1 AND status IN ('pending', 'sending')`,
        [webhookId, since],
      );
      const n = (k: string) => Number(rows.find((r) => r.outcome === k)?.n ?? 0);
      return { delivered: n('delivered'), failed: n('failed'), skipped: n('skipped'), pending: n('pending') };
    },

    /** The queue for the metrics: deliveries waiting, and the age of the oldest. */
    async queue(now: Date): Promise<{ depth: number; oldestSeconds: number }> {
      const rows = await db.query<{ n: string | number; oldest: Date | null }>(
        "SELECT count(*) AS n, min(created_at) AS oldest FROM webhook_deliveries WHERE status IN ('pending', 'sending')",
      );
      const r = rows[0];
      return { depth: Number(r?.n ?? 0), oldestSeconds: r?.oldest ? Math.max(0, (now.getTime() - new Date(r.oldest).getTime()) / 1000) : 0 };
    },

    /**
     * Deliveries finished before `before` and their attempts go, in one statement: the log keeps
     * 30 days. (A delivery still pending keeps its attempts, however old.)
     */
    async purgeFinished(before: Date): Promise<void> {
      await db.query(
        `WITH gone AS (DELETE FROM webhook_deliveries WHERE status IN ('delivered', 'failed') AND created_at < $1 RETURNING id)
         DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM gone)`,
        [before],
      );
    },
  };
}

export type WebhooksRepository = ReturnType<typeof createWebhooksRepository>;
