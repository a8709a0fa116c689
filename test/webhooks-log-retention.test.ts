import { test } from 'node:test';
import assert from 'node:assert/strict';
import { STORE, storeForFile } from './helpers/server.js';
import { eventually } from './helpers/eventually.js';
import { createWebhooksRepository, type AttemptOutcome } from '../src/repositories/webhooks.repository.js';

/**
 * What the store keeps when deliveries or webhooks go. A delivery's attempts have no foreign key
 * to it, nor a delivery to its webhook (migrations/0017_webhook_attempts_keys.sql,
 * 0019_webhook_deliveries_keys.sql): the repository deletes them where the keys' cascades did,
 * so that no log outlives its webhook or its delivery, and a pending delivery keeps its own. And a
 * webhook deleted while its events are written costs the other webhooks' events nothing.
 */
const db = storeForFile();

const repo = () => createWebhooksRepository(db);
const count = async (sql: string, params: unknown[]) => Number((await db.query<{ n: number | string }>(sql, params))[0]?.n);
const attemptsOf = (webhookId: string) => count('SELECT count(*) AS n FROM webhook_attempts WHERE webhook_id = $1', [webhookId]);
const deliveriesOf = (webhookId: string) => count('SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = $1', [webhookId]);
/** Until a statement of this test's database that matches `like` waits for a lock (PostgreSQL). */
const waitingOnLock = (like: string) => eventually(async () =>
  (await count("SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE $1", [like])) > 0 || undefined);

async function webhook(id: string, at: Date, productId: number | null = null): Promise<void> {
  await db.query(
    `INSERT INTO webhooks (id, owner_kind, owner_id, product_id, spec, secret, created_at, updated_at) VALUES ($1, $2, $3, $4, '{}', 'whsec_x', $5, $5)`,
    [id, productId === null ? 'user' : null, productId === null ? `u_${id}` : null, productId, at],
  );
}
async function delivery(id: string, webhookId: string, at: Date): Promise<void> {
  await db.query(
    `INSERT INTO webhook_deliveries (id, webhook_id, event, status, next_at, created_at) VALUES ($1, $2, '{"name":"t","data":"x"}', 'sending', $3, $3)`,
    [id, webhookId, at],
  );
}
function outcome(deliveryId: string, webhookId: string, at: Date, finished: boolean): AttemptOutcome {
  return {
    attempt: { deliveryId, n: 1, at, outcome: finished ? 'delivered' : 'failed', status: finished ? 200 : 500, latencyMs: 2, answer: null, error: null, webhookId },
    delivery: { status: finished ? 'delivered' : 'pending', attempts: 1, skipped: 0, nextAt: at, finishedAt: finished ? at : null },
  };
}

test(`${STORE}: a purge takes finished deliveries older than the log's 30 days with their attempts; pending ones and newer ones keep theirs`, async () => {
  const old = new Date('2026-10-01T00:00:00Z');
  const recent = new Date('2026-11-20T00:00:00Z');
  await webhook('wh_purge', old);
  for (const [id, at] of [['old_done', old], ['old_pending', old], ['new_done', recent]] as const) await delivery(id, 'wh_purge', at);
  await repo().recordAttempts([outcome('old_done', 'wh_purge', old, true), outcome('old_pending', 'wh_purge', old, false), outcome('new_done', 'wh_purge', recent, true)]);

  await repo().purgeFinished(new Date('2026-11-01T00:00:00Z'));
  const left = await db.query<{ id: string; n: number | string }>(
    'SELECT d.id, (SELECT count(*) FROM webhook_attempts a WHERE a.delivery_id = d.id) AS n FROM webhook_deliveries d WHERE d.webhook_id = $1 ORDER BY d.id', ['wh_purge']);
  assert.deepEqual(left.map((r) => [r.id, Number(r.n)]), [['new_done', 1], ['old_pending', 1]]);
  assert.equal(await attemptsOf('wh_purge'), 2, 'the purged delivery\'s attempt went with it');
});

test(`${STORE}: a deleted webhook, or an account's or a product's webhooks, leave no deliveries and no attempts; others keep theirs`, async () => {
  const at = new Date('2026-11-20T00:00:00Z');
  const product = Number((await db.query<{ id: number | string }>(
    "INSERT INTO products (name, slug, platform_id, created_by, created_at, updated_at) VALUES ('Log', 'log-retention', 26, 'u_log', $1, $1) RETURNING id", [at]))[0]?.id);
  for (const [id, productId] of [['wh_one', null], ['wh_fleet', product], ['wh_other', null]] as const) {
    await webhook(id, at, productId);
    await delivery(`d_${id}`, id, at);
    await repo().recordAttempts([outcome(`d_${id}`, id, at, true)]);
    assert.equal(await attemptsOf(id), 1);
  }

  assert.equal(await repo().remove('wh_one'), true);
  assert.equal(await repo().remove('wh_one'), false, 'a second deletion finds nothing');
  await db.transaction((tx) => repo().removeAll({ kind: 'product', productId: product }, tx));
  for (const id of ['wh_one', 'wh_fleet']) assert.deepEqual([await deliveriesOf(id), await attemptsOf(id)], [0, 0], id);
  assert.deepEqual([await deliveriesOf('wh_other'), await attemptsOf('wh_other')], [1, 1], 'another webhook keeps its log');
});

test(`${STORE}: a webhook deleted while a settle holds its deliveries loses the attempts that settle commits too`, { skip: STORE !== 'postgres' && 'the embedded store runs one transaction at a time' }, async () => {
  const at = new Date('2026-11-21T00:00:00Z');
  await webhook('wh_race', at);
  await delivery('d_race', 'wh_race', at);
  let removing: Promise<boolean> | undefined;
  await db.transaction(async (tx) => {
    // The settle's UPDATE has locked the delivery; the deletion of the webhook's deliveries waits for it.
    await tx.query("UPDATE webhook_deliveries SET status = 'delivered' WHERE id = 'd_race'");
    removing = repo().remove('wh_race');
    await waitingOnLock('%DELETE FROM webhook_deliveries %');
    await tx.query("INSERT INTO webhook_attempts (delivery_id, n, webhook_id, at, outcome, status, latency_ms) VALUES ('d_race', 1, 'wh_race', $1, 'delivered', 200, 2)", [at]);
  });
  assert.equal(await removing, true);
  assert.deepEqual([await deliveriesOf('wh_race'), await attemptsOf('wh_race')], [0, 0]);
});

const item = (id: string, webhookId: string, at: Date) => ({ id, webhookId, createdAt: at, lease: null, event: { name: 't', data: 'x', coreid: 'c', published_at: at.toISOString(), productId: null, owner: null } });

test(`${STORE}: a batch of deliveries in which one webhook was deleted writes the others`, async () => {
  const at = new Date('2026-11-22T00:00:00Z');
  await webhook('wh_kept', at);
  await webhook('wh_gone', at);
  await repo().remove('wh_gone');
  assert.equal(await repo().insertDeliveries([item('k_1', 'wh_kept', at), item('g_1', 'wh_gone', at), item('k_2', 'wh_kept', at)]), 2);
  assert.deepEqual([await deliveriesOf('wh_kept'), await deliveriesOf('wh_gone')], [2, 0]);
});

test(`${STORE}: a batch written while one of its webhooks is being deleted waits for the deletion and writes the others`, { skip: STORE !== 'postgres' && 'the embedded store runs one transaction at a time' }, async () => {
  const at = new Date('2026-11-23T00:00:00Z');
  await webhook('wh_stays', at);
  await webhook('wh_going', at);
  let writing: Promise<number> | undefined;
  await db.transaction(async (tx) => {
    await tx.query("DELETE FROM webhooks WHERE id = 'wh_going'");
    writing = repo().insertDeliveries([item('s_1', 'wh_stays', at), item('o_1', 'wh_going', at)]);
    await waitingOnLock('%INSERT INTO webhook_deliveries%');
  });
  assert.equal(await writing, 1);
  assert.deepEqual([await deliveriesOf('wh_stays'), await deliveriesOf('wh_going')], [1, 0]);
});


test(`${STORE}: a webhook deleted while a batch of its deliveries is being written loses that batch too`, { skip: STORE !== 'postgres' && 'the embedded store runs one transaction at a time' }, async () => {
  const at = new Date('2026-11-24T00:00:00Z');
  await webhook('wh_busy', at);
  let removing: Promise<boolean> | undefined;
  await db.transaction(async (tx) => {
    // The batch holds the webhook's lock; the deletion waits for it, then must see its rows.
    assert.equal(await repo().insertDeliveries([item('b_1', 'wh_busy', at), item('b_2', 'wh_busy', at)], tx), 2);
    removing = repo().remove('wh_busy');
    await waitingOnLock('%DELETE FROM webhooks %');
  });
  assert.equal(await removing, true);
  assert.equal(await deliveriesOf('wh_busy'), 0, 'no delivery outlives its webhook');
});
