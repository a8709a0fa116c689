import { test } from 'node:test';
import assert from 'node:assert/strict';
import { STORE, storeForFile } from './helpers/server.js';
import { afterCommit } from '../src/storage/db.js';
import { faultyDb } from './helpers/faults.js';

/**
 * What repositories rely on from either store (storage/db.ts), run on the store of the run:
 * the same value types both ways, prepared statements, and transactions that never report
 * done what was not stored. One store serves the file; each test has tables of its own.
 */
const db = storeForFile({ migrated: false });

test(`${STORE}: parameters and columns of every kind used here come back with the same types`, async () => {
  await db.exec(`CREATE TABLE k (id bigint PRIMARY KEY, n integer, ok boolean, at timestamptz, doc jsonb, list text[], raw bytea, note text);
                 INSERT INTO k (id) VALUES (0)`);
  const at = new Date('2026-03-04T05:06:07.089Z');
  await db.query('INSERT INTO k VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
    [7, -3, true, at, JSON.stringify({ a: [1, 'é'], b: null }), ['x', 'a "quoted", b', null], Buffer.from([0, 1, 255]), 'ünï\u{1F600}']);
  const [row] = await db.query<Record<string, unknown>>('SELECT * FROM k WHERE id = $1', [7]);
  assert.deepEqual(row, {
    id: 7, n: -3, ok: true, at, doc: { a: [1, 'é'], b: null }, list: ['x', 'a "quoted", b', null],
    raw: Buffer.from([0, 1, 255]), note: 'ünï\u{1F600}',
  });
  const [empty] = await db.query<Record<string, unknown>>('SELECT * FROM k WHERE id = 0');
  assert.deepEqual(empty, { id: 0, n: null, ok: null, at: null, doc: null, list: null, raw: null, note: null });
  const counted = await db.query<{ n: unknown }>('SELECT count(*) AS n FROM k WHERE id = ANY($1::bigint[])', [[0, 7, 9]]);
  assert.deepEqual(counted, [{ n: 2 }]);
  assert.deepEqual(await db.query('SELECT 1 AS one WHERE false'), []);
});

test(`${STORE}: a prepared statement runs again and again; one that fails to parse fails every time, and others go on`, async () => {
  await db.exec('CREATE TABLE p (id integer PRIMARY KEY, name text)');
  for (let i = 1; i <= 3; i++) await db.query('INSERT INTO p (id, name) VALUES ($1, $2)', [i, `n${i}`], { prepare: true });
  const one = (id: number) => db.query<{ name: string }>('SELECT name FROM p WHERE id = $1', [id], { prepare: true });
  assert.deepEqual(await Promise.all([one(1), one(2), one(3), one(4)]), [[{ name: 'n1' }], [{ name: 'n2' }], [{ name: 'n3' }], []]);
  const broken = () => db.query('SELECT nme FROM p WHERE id = $1', [1], { prepare: true });
  await assert.rejects(broken(), (err: Error & { code?: string }) => err.code === '42703');
  await assert.rejects(broken(), (err: Error & { code?: string }) => err.code === '42703');
  // A prepared statement whose parameters are refused (not an integer) fails alone.
  await assert.rejects(one('x' as unknown as number), (err: Error & { code?: string }) => err.code === '22P02');
  assert.deepEqual(await one(2), [{ name: 'n2' }]);
  // Inside a transaction too.
  await db.transaction(async (tx) => {
    assert.deepEqual(await tx.query('SELECT name FROM p WHERE id = $1', [3], { prepare: true }), [{ name: 'n3' }]);
    await tx.query('INSERT INTO p (id, name) VALUES ($1, $2)', [5, 'n5'], { prepare: true });
  });
  assert.deepEqual(await one(5), [{ name: 'n5' }]);
});

test(`${STORE}: a transaction whose failed statement was swallowed is rolled back and fails, it does not report done`, async () => {
  await db.exec('DROP TABLE IF EXISTS t; CREATE TABLE t (id integer PRIMARY KEY)');
  await db.query('INSERT INTO t VALUES (1)');
  await assert.rejects(db.transaction(async (tx) => {
    await tx.query('INSERT INTO t VALUES (2)');
    await tx.query('INSERT INTO t VALUES (1)').catch(() => undefined); // duplicate key, ignored
    return 'done';
  }), (err: Error & { code?: string }) => err.code === '25P02' && /rolled back/.test(err.message));
  assert.deepEqual(await db.query('SELECT id FROM t ORDER BY id'), [{ id: 1 }]);
  // The store goes on: the next transaction commits.
  await db.transaction(async (tx) => { await tx.query('INSERT INTO t VALUES (3)'); });
  assert.deepEqual(await db.query('SELECT id FROM t ORDER BY id'), [{ id: 1 }, { id: 3 }]);
  // A script with an error in its middle stores nothing of it (one implicit transaction).
  await assert.rejects(db.exec('INSERT INTO t VALUES (4); INSERT INTO t VALUES (1); INSERT INTO t VALUES (5)'), (err: Error & { code?: string }) => err.code === '23505');
  assert.deepEqual(await db.query('SELECT id FROM t ORDER BY id'), [{ id: 1 }, { id: 3 }]);
});

test(`${STORE}: after-commit effects run once the transaction committed, in order, and never after a rollback`, async () => {
  await db.exec('DROP TABLE IF EXISTS t; CREATE TABLE t (id integer PRIMARY KEY)');
  const seen: string[] = [];
  await db.transaction(async (tx) => {
    await tx.query('INSERT INTO t VALUES (1)');
    tx.afterCommit(() => seen.push('first'));
    afterCommit(tx, () => seen.push('second'));
    // Not yet: a read that ran now (from outside) would still see the row missing.
    assert.deepEqual(seen, []);
  });
  assert.deepEqual(seen, ['first', 'second']);

  await assert.rejects(db.transaction(async (tx) => {
    tx.afterCommit(() => seen.push('rolled back'));
    await tx.query('INSERT INTO t VALUES (1)'); // duplicate key
  }));
  await assert.rejects(db.transaction(async (tx) => {
    tx.afterCommit(() => seen.push('swallowed'));
    await tx.query('INSERT INTO t VALUES (1)').catch(() => undefined);
  }));
  assert.deepEqual(seen, ['first', 'second'], 'no effect of a transaction that did not commit');

  // A statement on its own has committed when it returns: its effect runs at once.
  afterCommit(db, () => seen.push('alone'));
  assert.deepEqual(seen, ['first', 'second', 'alone']);
});

test(`${STORE}: a crash between two statements of a transaction leaves neither (the test helper other atomicity tests use)`, async () => {
  const faulty = faultyDb(db);
  await faulty.exec('DROP TABLE IF EXISTS t; CREATE TABLE t (id integer PRIMARY KEY)');
  faulty.crashAt(/INSERT INTO t VALUES \(2\)/);
  await assert.rejects(faulty.transaction(async (tx) => {
    await tx.query('INSERT INTO t VALUES (1)');
    await tx.query('INSERT INTO t VALUES (2)');
  }), /simulated crash/);
  assert.equal(faulty.crashed, true);
  assert.deepEqual(await faulty.query('SELECT id FROM t'), []);
  // Outside a transaction, the first statement stays: what the helper exposes in a write that is not atomic.
  faulty.crashAt(/INSERT INTO t VALUES \(2\)/);
  await faulty.query('INSERT INTO t VALUES (1)');
  await assert.rejects(faulty.query('INSERT INTO t VALUES (2)'), /simulated crash/);
  assert.deepEqual(await faulty.query('SELECT id FROM t'), [{ id: 1 }]);
});

test(`${STORE}: a transaction undone by a deadlock fails as service_unavailable with a short Retry-After, and the other goes through`, { skip: STORE !== 'postgres' && 'the embedded store runs one transaction at a time' }, async () => {
  await db.exec('DROP TABLE IF EXISTS dl; CREATE TABLE dl (id integer PRIMARY KEY, n integer); INSERT INTO dl VALUES (1, 0), (2, 0)');
  let second: () => void = () => undefined;
  const firstHolds = new Promise<void>((resolve) => { second = resolve; });
  // Each takes one row, then asks for the other's: PostgreSQL undoes one of them.
  const crossing = (mine: number, theirs: number, holding?: () => void, wait?: Promise<void>) => db.transaction(async (tx) => {
    await tx.query("SET LOCAL deadlock_timeout = '50ms'");
    await tx.query('UPDATE dl SET n = n + 1 WHERE id = $1', [mine]);
    holding?.();
    await wait;
    await tx.query('UPDATE dl SET n = n + 1 WHERE id = $1', [theirs]);
  });
  let bothHold: () => void = () => undefined;
  const bothHeld = new Promise<void>((resolve) => { bothHold = resolve; });
  const outcomes = await Promise.allSettled([
    crossing(1, 2, second, bothHeld),
    firstHolds.then(() => crossing(2, 1, bothHold)),
  ]);
  const failed = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
  assert.equal(failed.length, 1, 'one of the two is undone');
  const err = failed[0]?.reason as { code?: string; retryAfterSeconds?: number; message?: string };
  assert.deepEqual([err.code, err.retryAfterSeconds], ['service_unavailable', 1], err.message);
  const [sum] = await db.query<{ n: number | string }>('SELECT sum(n) AS n FROM dl');
  assert.equal(Number(sum?.n), 2, 'the one that went through changed both rows; the undone one, none');
});
