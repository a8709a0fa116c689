import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbedded } from '../../src/storage/embedded.js';
import { eventually } from '../helpers/eventually.js';

/** The embedded store runs PGlite in a thread of its own: what crosses between the threads, and what it does alone. */

/** The run's template when there is one (scripts/run-tests.mjs): these tests need an empty cluster, not an empty database. */
const fast = () => (process.env.TEST_EMBEDDED_TEMPLATE ? { template: process.env.TEST_EMBEDDED_TEMPLATE } : {});

test('rows, parameters and errors cross the thread; a transaction commits, or rolls back when its work throws', async () => {
  const db = await openEmbedded(undefined, fast());
  try {
    await db.exec('CREATE TABLE t (id integer PRIMARY KEY, at timestamptz, doc jsonb, raw bytea)');
    const at = new Date('2026-01-02T03:04:05.678Z');
    await db.query('INSERT INTO t VALUES ($1, $2, $3, $4)', [1, at, JSON.stringify({ a: [1, 'x'] }), new Uint8Array([0, 255])]);
    const [row] = await db.query<{ id: number; at: Date; doc: unknown; raw: Uint8Array }>('SELECT * FROM t');
    assert.equal(row?.id, 1);
    assert.ok(row?.at instanceof Date);
    assert.equal(row.at.toISOString(), at.toISOString());
    assert.deepEqual(row.doc, { a: [1, 'x'] });
    assert.deepEqual([...row.raw], [0, 255]);

    // A unique violation keeps its SQLSTATE, which repositories look at.
    await assert.rejects(db.query('INSERT INTO t (id) VALUES (1)'), (err: Error & { code?: string }) => err.code === '23505' && /duplicate key/.test(err.message));

    assert.equal(await db.transaction(async (tx) => {
      await tx.query('INSERT INTO t (id) VALUES (2)');
      return 'done';
    }), 'done');
    await assert.rejects(db.transaction(async (tx) => {
      await tx.query('INSERT INTO t (id) VALUES (3)');
      throw new Error('changed my mind');
    }), /changed my mind/);
    // A statement outside the transaction waits for it to end, and sees only what it committed.
    let inside!: () => void;
    let release!: () => void;
    const entered = new Promise<void>((r) => { inside = r; });
    const held = new Promise<void>((r) => { release = r; });
    const during = db.transaction(async (tx) => {
      await tx.query('INSERT INTO t (id) VALUES (4)');
      inside();
      await held;
      await tx.query('INSERT INTO t (id) VALUES (5)');
    });
    await entered;
    const seen = db.query<{ id: number }>('SELECT id FROM t ORDER BY id');
    // The outside statement is sent; the transaction goes on only now, and the statement must wait for its end.
    release();
    await during;
    assert.deepEqual((await seen).map((r) => r.id), [1, 2, 4, 5]);
  } finally {
    await db.close();
  }
  await assert.rejects(db.query('SELECT 1'), /closed/);
});

test('the store vacuums and analyses its tables by itself, as autovacuum would, each step a statement of its own', async () => {
  const db = await openEmbedded(undefined, { maintenanceMs: 100, ...fast() });
  try {
    await db.exec('CREATE TABLE v (id integer PRIMARY KEY, n integer)');
    await db.query('INSERT INTO v SELECT g, 0 FROM generate_series(1, 2000) g');
    await db.query('UPDATE v SET n = 1');
    const stats = () => db.query<{ analysed: boolean; vacuumed: boolean }>("SELECT last_analyze IS NOT NULL AS analysed, last_vacuum IS NOT NULL AS vacuumed FROM pg_stat_user_tables WHERE relname = 'v'");
    await eventually(async () => {
      const [s] = await stats();
      return s?.analysed && s.vacuumed ? true : undefined;
    });
    // Analysed from a small sample (a short pause of the one session), the session's own
    // setting left as it was.
    const [bounds] = await db.query<{ n: number }>("SELECT cardinality(histogram_bounds::text::int[]) AS n FROM pg_stats WHERE tablename = 'v' AND attname = 'id'");
    assert.ok(bounds && bounds.n <= 11, `a histogram of ${bounds?.n} bounds`);
    assert.deepEqual(await db.query('SHOW default_statistics_target'), [{ default_statistics_target: '100' }]);
  } finally {
    await db.close();
  }
});

test('the store\'s vacuums read the indexes whole only every `indexCleanupMs`: between, the dead rows\' space is freed and their index entries wait', async () => {
  const db = await openEmbedded(undefined, { maintenanceMs: 100, indexCleanupMs: 3_600_000, ...fast() });
  try {
    await db.exec('CREATE TABLE w (id integer PRIMARY KEY, n integer)');
    await db.query('INSERT INTO w SELECT g, 0 FROM generate_series(1, 2000) g');
    const stats = async () => (await db.query<{ vacuums: number; dead: number }>("SELECT vacuum_count::int AS vacuums, n_dead_tup::int AS dead FROM pg_stat_user_tables WHERE relname = 'w'"))[0];
    for (const round of [1, 2]) {
      await db.query('UPDATE w SET n = n + 1');
      const after = await eventually(async () => {
        const s = await stats();
        return s && s.vacuums >= round ? s : undefined;
      });
      // The table's first vacuum cleans its indexes: no dead row is left. The second, within the
      // hour, leaves the dead rows' index entries (most of the 2,000), and they are still counted dead.
      if (round === 1) assert.equal(after.dead, 0, 'a full vacuum first');
      else assert.ok(after.dead > 1000, `then one without the index pass: ${after.dead} dead`);
    }
  } finally {
    await db.close();
  }
});

test('an insert-only table is vacuumed too, once its inserts since the last vacuum pass 1,000 and a fifth of the table, as autovacuum does since PostgreSQL 13', async () => {
  const db = await openEmbedded(undefined, { maintenanceMs: 100, ...fast() });
  try {
    await db.exec('CREATE TABLE i (id integer PRIMARY KEY)');
    // No update nor delete: no dead row, which alone used to decide a vacuum.
    await db.query('INSERT INTO i SELECT g FROM generate_series(1, 1500) g');
    await eventually(async () => {
      const [s] = await db.query<{ vacuums: number; dead: number }>("SELECT vacuum_count::int AS vacuums, n_dead_tup::int AS dead FROM pg_stat_user_tables WHERE relname = 'i'");
      return s && s.vacuums >= 1 ? s : undefined;
    }, 10_000, 'a vacuum of the insert-only table');
  } finally {
    await db.close();
  }
});

test('tables whose oldest transaction id grows old are frozen, catalogs and tables nothing else vacuums included: no row outlives transaction-id wraparound', async () => {
  // PGlite runs PostgreSQL in single-user mode, which does not stop before wraparound; the store
  // freezes at 200 million transactions, here at 20.
  const db = await openEmbedded(undefined, { maintenanceMs: 100, freezeMaxAge: 20, ...fast() });
  try {
    await db.exec('CREATE TABLE f (id integer PRIMARY KEY)');
    await db.query('INSERT INTO f VALUES (1)');
    // Transactions go by, none of them touching f: each txid_current() outside a transaction takes an id.
    for (let i = 0; i < 40; i++) await db.query('SELECT txid_current()');
    const ages = () => db.query<{ relname: string; age: number }>(
      "SELECT relname, age(relfrozenxid)::int AS age FROM pg_class WHERE relkind IN ('r', 'm') ORDER BY age(relfrozenxid) DESC");
    const frozen = await eventually(async () => {
      const all = await ages();
      return all.every((t) => t.age <= 20) ? all : undefined;
    }, 15_000, 'every table frozen');
    assert.ok(frozen.some((t) => t.relname === 'f') && frozen.some((t) => t.relname === 'pg_class'), 'the table and the catalogs are among them');
    assert.deepEqual(await db.query('SELECT id FROM f'), [{ id: 1 }]);
  } finally {
    await db.close();
  }
});

test('the store makes a checkpoint every `checkpointMs` once it has written, as PostgreSQL\'s checkpointer would: after a crash only the log written since is replayed', async () => {
  // A single-user PostgreSQL has no checkpointer: without this, the next checkpoint would come
  // with 1 GB of log, or at a clean shutdown.
  const db = await openEmbedded(undefined, { maintenanceMs: 100, checkpointMs: 200, ...fast() });
  try {
    await db.exec('CREATE TABLE c (id integer PRIMARY KEY)');
    // Where the log stood right after the row was written, read in the same statement: read in
    // a statement of its own, it could follow a checkpoint made meanwhile and take in that
    // checkpoint's own records, after its redo point, with nothing written since to make another.
    const [written] = await db.query<{ lsn: string }>('INSERT INTO c VALUES (1) RETURNING pg_current_wal_insert_lsn()::text AS lsn');
    assert.ok(written);
    await eventually(async () => {
      const [c] = await db.query<{ after: boolean }>('SELECT redo_lsn >= $1::pg_lsn AS after FROM pg_control_checkpoint()', [written.lsn]);
      return c?.after ? true : undefined;
    }, 10_000, 'a checkpoint after the write');
  } finally {
    await db.close();
  }
});

test('a prepared statement with LIMIT and OFFSET parameters keeps its generic plan: not planned again at every run', async () => {
  const db = await openEmbedded(undefined, fast());
  try {
    await db.exec('CREATE TABLE d (id text PRIMARY KEY, product_id integer NOT NULL)');
    await db.exec('CREATE INDEX ON d (product_id, id)');
    await db.query("INSERT INTO d SELECT md5(i::text), i % 3 FROM generate_series(1, 3000) i");
    await db.exec('ANALYZE d');
    const page = 'SELECT id FROM d WHERE product_id = $1 ORDER BY id LIMIT $2 OFFSET $3';
    for (let run = 0; run < 8; run++) {
      const rows = await db.query<{ id: string }>(page, [1, 25, 50], { prepare: true });
      assert.equal(rows.length, 25);
    }
    // Under PostgreSQL's default (`auto`) this statement would count 8 custom plans and no generic one.
    const [stats] = await db.query<{ generic_plans: number; custom_plans: number }>(
      'SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1', [page]);
    assert.deepEqual(stats, { generic_plans: 8, custom_plans: 0 });
  } finally {
    await db.close();
  }
});

test('a store started from a template holds what the template held, and writes of its own stay its own', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'skyport-template-'));
  const original = await openEmbedded(undefined, fast());
  try {
    await original.exec("CREATE TABLE kept (id integer PRIMARY KEY); INSERT INTO kept VALUES (1)");
    const file = join(dir, 'template.tar');
    writeFileSync(file, await original.dump());
    const copies = await Promise.all([openEmbedded(undefined, { template: file }), openEmbedded(undefined, { template: file })]);
    try {
      await copies[0].query('INSERT INTO kept VALUES (2)');
      assert.deepEqual((await copies[0].query<{ id: number }>('SELECT id FROM kept ORDER BY id')).map((r) => r.id), [1, 2]);
      assert.deepEqual((await copies[1].query<{ id: number }>('SELECT id FROM kept')).map((r) => r.id), [1]);
      assert.deepEqual((await original.query<{ id: number }>('SELECT id FROM kept')).map((r) => r.id), [1]);
    } finally {
      await Promise.all(copies.map((c) => c.close()));
    }
  } finally {
    await original.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
