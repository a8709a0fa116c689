import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { freshStore, STORE } from './helpers/server.js';
import { eventually } from './helpers/eventually.js';
import { loadSettings } from '../src/config/settings.js';
import { openStorage } from '../src/main.js';

/**
 * DATABASE_POOL_SIZE (docs/configuration.md): the most connections a node opens to PostgreSQL,
 * and the pool's state that GET /metrics reports (docs/operations.md, "Metrics").
 */
const onPostgres = { skip: STORE !== 'postgres' && 'PostgreSQL only: the embedded store has one session' };

test('a node opens at most DATABASE_POOL_SIZE connections; the statements beyond wait for one, and the pool tells how many', onPostgres, async () => {
  const store = await freshStore();
  const url = store.settings.DATABASE_URL as string;
  const db = await openStorage(loadSettings({ DATABASE_URL: url, DATABASE_POOL_SIZE: '5' }));
  // A lock held apart from the pool keeps every statement below running until it is let go: no timing.
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  try {
    assert.deepEqual(db.connections?.(), { max: 5, inUse: 0, idle: 1, waiting: 0 }, 'the connection opened to check the database, idle');
    await holder.query('SELECT pg_advisory_lock(4242)');
    const statements = Array.from({ length: 12 }, () =>
      db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid FROM (SELECT pg_advisory_xact_lock_shared(4242)) AS held'));
    const busy = await eventually(() => {
      const state = db.connections?.();
      return state && state.inUse === 5 && state.waiting === 7 ? state : undefined;
    }, 10_000, 'five statements running and seven waiting');
    assert.deepEqual(busy, { max: 5, inUse: 5, idle: 0, waiting: 7 });
    await holder.query('SELECT pg_advisory_unlock(4242)');
    const pids = new Set((await Promise.all(statements)).map((rows) => rows[0]?.pid));
    assert.equal(pids.size, 5, 'twelve statements on five connections');
    assert.deepEqual(db.connections?.(), { max: 5, inUse: 0, idle: 5, waiting: 0 });
  } finally {
    await holder.end();
    await db.close();
    await store.drop();
  }
});
