import { test } from 'node:test';
import assert from 'node:assert/strict';
import { STORE, storeForFile } from './helpers/server.js';
import type { Queryable } from '../src/storage/db.js';
import { createWebhooksRepository, type AttemptOutcome } from '../src/repositories/webhooks.repository.js';

/**
 * Statements on tables that grow fast under load must be planned for the table as it is, not as
 * it was when a plan was first cached: a plan made while `webhook_deliveries` held a few rows
 * reads the whole table (a sequential scan), and kept for a prepared statement it went on doing
 * so while a flood grew the table to 100,000 rows, until the next ANALYZE (docs/benchmarks.md,
 * "Webhooks"). Each check counts the table's sequential scans in its own transaction
 * (`pg_stat_xact_user_tables`), so that nothing depends on when statistics are flushed.
 */
const db = storeForFile();

async function seqScans(q: Queryable, table: string): Promise<number> {
  const rows = await q.query<{ n: number | string }>('SELECT seq_scan AS n FROM pg_stat_xact_user_tables WHERE relname = $1', [table]);
  return Number(rows[0]?.n ?? 0);
}

function delivered(id: string, at: Date): AttemptOutcome {
  return {
    attempt: { deliveryId: id, n: 1, at, outcome: 'delivered', status: 200, latencyMs: 3, answer: 'ok', error: null, webhookId: 'wh_plans' },
    delivery: { status: 'delivered', attempts: 1, skipped: 0, nextAt: at, finishedAt: at },
  };
}

test(`${STORE}: settling deliveries finds them by key after the table grew, whatever was planned while it was small, foreign-key checks included`, async () => {
  const repo = createWebhooksRepository(db);
  const at = new Date('2026-12-01T00:00:00Z');
  const insertDeliveries = (q: Queryable, from: number, to: number) => q.query(
    `INSERT INTO webhook_deliveries (id, webhook_id, event, status, next_at, created_at)
     SELECT 'msg_' || g, 'wh_plans', '{"name":"t","data":"x"}', 'pending', $3, $3 FROM generate_series($1::int, $2::int) AS g`, [from, to, at]);
  await db.transaction(async (tx) => {
    await tx.query(`INSERT INTO webhooks (id, owner_kind, owner_id, spec, secret, created_at, updated_at) VALUES ('wh_plans', 'user', 'u1', '{}', 'whsec_x', $1, $1)`, [at]);
    // Small, and analysed so: a plan cached now (PostgreSQL caches a generic plan after five
    // runs) would scan. That includes the plans of foreign-key checks, which the session keeps
    // until the next ANALYZE (migrations/0017_webhook_attempts_keys.sql).
    await insertDeliveries(tx, 1, 20);
    await tx.query('ANALYZE webhook_deliveries');
    for (let i = 1; i <= 8; i++) await repo.recordAttempts([delivered(`msg_${i}`, at)], tx);
    // Grown, as under a flood, with no ANALYZE in between.
    await insertDeliveries(tx, 21, 30_000);
    const before = await seqScans(tx, 'webhook_deliveries');
    await repo.recordAttempts(['msg_29000', 'msg_29001', 'msg_29002'].map((id) => delivered(id, at)), tx);
    assert.equal(await seqScans(tx, 'webhook_deliveries') - before, 0, 'the settle read the whole table');
    const settled = await tx.query<{ n: number | string }>("SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'delivered'");
    assert.equal(Number(settled[0]?.n), 11);
    const attempts = await tx.query<{ n: number | string }>("SELECT count(*) AS n FROM webhook_attempts WHERE webhook_id = 'wh_plans'");
    assert.equal(Number(attempts[0]?.n), 11);
  });
});

test(`${STORE}: claiming due deliveries leaves those of the webhooks excluded (a sleeping host's) where they are, and takes one at a time of those probed (a host awake again)`, async () => {
  const repo = createWebhooksRepository(db);
  const at = new Date('2026-12-02T00:00:00Z');
  await db.transaction(async (tx) => {
    for (const id of ['wh_asleep', 'wh_awake']) {
      await tx.query(`INSERT INTO webhooks (id, owner_kind, owner_id, spec, secret, created_at, updated_at) VALUES ($1, 'user', 'u1', '{}', 'whsec_x', $2, $2)`, [id, at]);
    }
    await tx.query(
      `INSERT INTO webhook_deliveries (id, webhook_id, event, status, next_at, created_at)
       SELECT 'due_' || g, CASE WHEN g % 2 = 0 THEN 'wh_asleep' ELSE 'wh_awake' END, '{"name":"t","data":"x"}', 'pending', $1, $1 FROM generate_series(1, 40) AS g`, [at]);
  });
  const now = new Date(at.getTime() + 1000);
  // (The test above leaves its webhook's deliveries due: they stay out of this one's counts.)
  const claimed = await repo.claimDue('n1', now, new Date(now.getTime() + 60_000), 100, ['wh_asleep', 'wh_plans']);
  assert.equal(claimed.length, 20);
  assert.ok(claimed.every((d) => d.webhookId === 'wh_awake'));
  const left = await db.query<{ n: number | string }>("SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = 'wh_asleep' AND status = 'pending'");
  assert.equal(Number(left[0]?.n), 20, 'the sleeping host\'s deliveries were not taken');
  // Once the host wakes it is probed: one delivery per claim, the earliest due, until it answers 2xx.
  const probe = await repo.claimDue('n1', now, new Date(now.getTime() + 60_000), 100, ['wh_plans'], ['wh_asleep']);
  assert.deepEqual(probe.map((d) => d.webhookId), ['wh_asleep']);
  // Then they are taken as a poll's room allows.
  const rest = await repo.claimDue('n1', now, new Date(now.getTime() + 60_000), 100, ['wh_plans']);
  assert.deepEqual([rest.length, rest.every((d) => d.webhookId === 'wh_asleep')], [19, true]);
});

test(`${STORE}: a claim reads no rows of the webhooks it must leave, however many are due`, async () => {
  const repo = createWebhooksRepository(db);
  const at = new Date('2026-12-03T00:00:00Z');
  // Rows read by index and by sequential scans, in this transaction.
  const fetched = async (q: Queryable) => Number((await q.query<{ n: number | string }>("SELECT idx_tup_fetch + seq_tup_read AS n FROM pg_stat_xact_user_tables WHERE relname = 'webhook_deliveries'"))[0]?.n ?? 0);
  await db.transaction(async (tx) => {
    for (const id of ['wh_down', 'wh_off', 'wh_up']) {
      await tx.query(`INSERT INTO webhooks (id, owner_kind, owner_id, spec, secret, created_at, updated_at, disabled_reason) VALUES ($1, 'user', 'u1', '{}', 'whsec_x', $2, $2, $3)`,
        [id, at, id === 'wh_off' ? 'failing' : null]);
    }
    // A sleeping host's backlog and a disabled webhook's, both due long before the others.
    await tx.query(
      `INSERT INTO webhook_deliveries (id, webhook_id, event, status, next_at, created_at)
       SELECT 'held_' || g, CASE WHEN g % 2 = 0 THEN 'wh_down' ELSE 'wh_off' END, '{"name":"t","data":"x"}', 'pending', $1::timestamptz - interval '1 hour', $1 FROM generate_series(1, 5000) AS g`, [at]);
    await tx.query(
      `INSERT INTO webhook_deliveries (id, webhook_id, event, status, next_at, created_at)
       SELECT 'up_' || g, 'wh_up', '{"name":"t","data":"x"}', 'pending', $1, $1 FROM generate_series(1, 3) AS g`, [at]);
    const before = await fetched(tx);
    const claimed = await repo.claimDue('n1', new Date(at.getTime() + 1000), new Date(at.getTime() + 60_000), 100, ['wh_down', 'wh_plans', 'wh_asleep', 'wh_awake'], [], tx);
    assert.deepEqual(claimed.map((d) => d.id).sort(), ['up_1', 'up_2', 'up_3']);
    const read = await fetched(tx) - before;
    assert.ok(read < 100, `the claim read ${read} rows for 3`);
    throw new Rollback();
  }).catch((err: unknown) => { if (!(err instanceof Rollback)) throw err; });
});

class Rollback extends Error {}

