import { readFileSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import type { EmbeddedCompiled, EmbeddedError, EmbeddedReply, EmbeddedRequest, EmbeddedWarning } from './embedded-protocol.js';
import { readResult, scriptMessage, startsParsed, withoutParse, type StatementResult } from './wire.js';

/**
 * The embedded store's own thread (embedded.ts): PGlite, its WebAssembly PostgreSQL, runs here,
 * so that it uses a core of its own instead of the one that serves HTTP and the device gateway.
 * The main thread sends protocol messages (wire.ts) and reads the answers itself; this thread
 * only hands them to PostgreSQL, one at a time, and keeps transactions apart.
 */
const port = parentPort;
if (!port) throw new Error('embedded-worker.ts runs as a worker thread of embedded.ts');

const { dataDir, template, compiled } = workerData as { dataDir?: string; template?: string; compiled?: WebAssembly.Module };
/**
 * PostgreSQL's WebAssembly, compiled: by an earlier thread of this process when there was one
 * (embedded.ts keeps it), else here, and handed to the main thread for the next.
 */
const pgliteWasmModule = compiled ?? await WebAssembly.compile(readFileSync(new URL('./pglite.wasm', import.meta.resolve('@electric-sql/pglite'))));
if (!compiled) port.postMessage({ compiled: pgliteWasmModule } satisfies EmbeddedCompiled);
/** A fresh store starts from the template's tarball when there is one: no initdb, no migrations. */
const db = new PGlite({ dataDir, pgliteWasmModule, ...(template === undefined ? {} : { loadDataDir: new Blob([readFileSync(template)]) }) });

/** Hands protocol messages to PostgreSQL; its answer, copied out of WebAssembly memory. */
async function send(message: Uint8Array): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  await db.execProtocolRawStream(message, {
    onRawData: (bytes) => {
      chunks.push(bytes.slice());
      size += bytes.length;
    },
  });
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.length;
  }
  return all;
}

/** Sends a script and throws PostgreSQL's error, if any; answers its result. */
async function script<Row>(sql: string): Promise<StatementResult<Row>> {
  const result = readResult<Row>(await send(scriptMessage(sql)));
  if (result.error) throw result.error;
  return result;
}

/**
 * Statements run on their generic plan. PostgreSQL's default (`auto`) plans a statement afresh
 * for every execution whose generic plan it estimates dearer than a fresh one, and a parameter in
 * LIMIT or OFFSET always looks dearer (it assumes a tenth of the rows are read), so the prepared
 * fleet page was planned on every request, and planning in WebAssembly is dear (docs/benchmarks.md,
 * "Measurements behind design choices"). Unnamed statements are planned at each run either
 * way, now without looking at the values: Skyport's statements find rows by indexed keys, where
 * the plan does not depend on them. Native PostgreSQL plans cheaply enough to keep `auto`.
 */
const ready = db.waitReady.then(() => db.exec('SET plan_cache_mode = force_generic_plan'));

/**
 * PGlite has one session. Statements outside a transaction take turns on it; a transaction
 * holds it from BEGIN to its end, and only the transaction's own statements run meanwhile.
 */
let turn: Promise<unknown> = ready;
function inTurn<T>(work: () => Promise<T>): Promise<T> {
  const result = turn.then(work);
  turn = result.catch(() => undefined);
  return result;
}

/** Open transactions: each releases the session when it ends. */
const open = new Map<number, () => void>();
let nextTx = 1;

/** Errors cross threads as plain fields: the SQLSTATE `code` is what repositories look at. */
function plain(err: unknown): EmbeddedError {
  const e = (err ?? {}) as Record<string, unknown>;
  const out: EmbeddedError = { message: err instanceof Error ? err.message : String(err) };
  for (const k of ['code', 'detail', 'constraint', 'table', 'column', 'severity'] as const) if (typeof e[k] === 'string') out[k] = e[k] as string;
  return out;
}

/**
 * Named statements PostgreSQL has parsed in the session. Known here, where messages run one at
 * a time in order, rather than in the main thread, whose concurrent first uses would each parse.
 * A name counts as parsed from the moment its Parse is sent, and is forgotten if PostgreSQL
 * refused it.
 */
const prepared = new Set<string>();

function statement(message: Uint8Array, name: string | undefined): Promise<Uint8Array> {
  if (name === undefined) return send(message);
  if (prepared.has(name)) return send(withoutParse(message));
  prepared.add(name);
  return send(message).then((answer) => {
    if (!startsParsed(answer)) prepared.delete(name);
    return answer;
  }, (err: unknown) => {
    prepared.delete(name);
    throw err;
  });
}

function handle(req: EmbeddedRequest): Promise<unknown> {
  switch (req.op) {
    case 'run': {
      if (req.tx === undefined) return inTurn(() => statement(req.message, req.statement));
      if (!open.has(req.tx)) return Promise.reject(new Error('the transaction has ended'));
      return statement(req.message, req.statement);
    }
    case 'begin': {
      const id = nextTx++;
      return new Promise<number>((resolve, reject) => {
        void inTurn(async () => {
          try {
            await script('BEGIN');
          } catch (err) {
            reject(err);
            return;
          }
          await new Promise<void>((release) => {
            open.set(id, release);
            resolve(id);
          });
        });
      });
    }
    case 'end': {
      const release = open.get(req.tx);
      if (!release) return Promise.reject(new Error('the transaction has ended'));
      // PostgreSQL ends the transaction whatever COMMIT answers, so the session is free after.
      return (async () => {
        try {
          return (await script(req.commit ? 'COMMIT' : 'ROLLBACK')).command === 'COMMIT';
        } finally {
          open.delete(req.tx);
          release();
        }
      })();
    }
    case 'dump':
      return inTurn(async () => new Uint8Array(await (await db.dumpDataDir('none')).arrayBuffer()));
    case 'close':
      return inTurn(async () => {
        closing = true;
        clearInterval(maintenance);
        await db.close();
        return null;
      });
  }
}

/**
 * PGlite runs PostgreSQL in single-user mode, without the autovacuum launcher: left alone, its
 * tables are never analysed nor vacuumed, the planner works blind and dead rows pile up (what
 * that cost a fleet's configuration reads: docs/architecture.md, "Autovacuum").
 * So this thread does the launcher's work with PostgreSQL's default thresholds (autovacuum
 * vacuum/analyze threshold 50 rows, scale factors 0.2 and 0.1; for inserts 1,000 rows and 0.2):
 * every `NAPTIME_MS` it looks at the statistics of each table and vacuums or analyses the ones
 * that crossed them, freezes those whose oldest transaction id is old (`FREEZE_MAX_AGE`), and
 * makes the checkpointer's checkpoints (`CHECKPOINT_MS`). Each of its statements takes its turn
 * on the session like any other, after open transactions.
 */
const NAPTIME_MS = (workerData as { maintenanceMs?: number }).maintenanceMs ?? 30_000;
/**
 * The statistics target of the maintenance's ANALYZE: a sample of 3,000 rows instead of the
 * default's 30,000. The session is shared, so ANALYZE is a pause for every request: on 120,000
 * webhook deliveries it took 110-260 ms at the default and 18-50 ms at 10 (docs/benchmarks.md,
 * "Webhooks"). The plans here are generic, and a generic plan estimates a parameter from a
 * column's count of distinct values, which a smaller sample still gives, not from its histogram.
 * VACUUM and ANALYZE go as two statements, so that other statements run between the two pauses.
 * (The three statements of the ANALYZE form one implicit transaction: if it fails, the SET is
 * undone with it.)
 */
const STATISTICS_TARGET = 10;
/**
 * How often a table's VACUUM also cleans its indexes. Between two such, it runs with
 * `INDEX_CLEANUP OFF`: the dead rows' space in the table is freed, but each index is not read
 * whole to drop their entries, which was most of the pause. Under a flood of webhook
 * deliveries, each vacuum of `webhook_deliveries` (updated once per delivery) paused the session
 * for 200-300 ms at 200,000 rows, and for 120-140 ms without the index pass (docs/benchmarks.md,
 * "Webhooks"). The entries left behind (a few bytes each, pointing at freed line pointers) go at
 * the next full pass, at most this long after; a table's first vacuum after the store opens is
 * a full one.
 */
const INDEX_CLEANUP_MS = (workerData as { indexCleanupMs?: number }).indexCleanupMs ?? 10 * 60_000;
/**
 * How old a table's oldest unfrozen transaction id may grow, in transactions, before the table
 * is frozen: PostgreSQL's `autovacuum_freeze_max_age` (200 million), and 400 million for
 * multixact ids (`autovacuum_multixact_freeze_max_age`). Transaction ids are 32 bits and
 * compared modulo 2^31; a row whose id falls more than 2^31 transactions behind the current one
 * reads as written in the future, and vanishes. PostgreSQL under a postmaster refuses new
 * transactions before that happens; in single-user mode, as PGlite runs it, it only warns, so
 * rows would be lost. The launcher prevents it by freezing old rows (their ids replaced by a
 * frozen mark, read as older than any), table by table, catalogs included: a table that
 * nothing else vacuums (one written once, like `schema_migrations`, or an insert-only table once
 * its inserts stop) is frozen once its age crosses this. `VACUUM (FREEZE)` freezes every row of
 * the table rather than only those older than 50 million transactions (`vacuum_freeze_min_age`):
 * the same pass over its pages, once per 200 million transactions (PostgreSQL docs, "Preventing
 * Transaction ID Wraparound Failures").
 */
const FREEZE_MAX_AGE = (workerData as { freezeMaxAge?: number }).freezeMaxAge ?? 200_000_000;
const MULTIXACT_FREEZE_MAX_AGE = 2 * FREEZE_MAX_AGE;
/**
 * How often the thread makes a checkpoint when the store has written since the last: PostgreSQL's
 * `checkpoint_timeout` (5 minutes). Its checkpointer process makes them; a single-user
 * PostgreSQL has none, and checkpoints only when its write-ahead log reaches `max_wal_size`
 * (1 GB) or at a clean shutdown. After a crash the store replays the log written since the last
 * checkpoint before it opens: 850 MB of it took 4.8 s here, against 0.34 s after a checkpoint
 * (docs/architecture.md, "Checkpoints"), and the log's files kept that much disk meanwhile. A
 * checkpoint writes the changed pages held in memory, a pause of the one session (78 ms after
 * that run's 850 MB of log).
 */
const CHECKPOINT_MS = (workerData as { checkpointMs?: number }).checkpointMs ?? 5 * 60_000;
let checkpointed = { at: Date.now(), lsn: '' };
const indexesCleaned = new Map<string, number>();
let closing = false;
async function autovacuum(): Promise<void> {
  const tables = (await inTurn(() => script<{ relname: string; live: number; dead: number; inserted: number; modified: number }>(
    'SELECT relname, n_live_tup AS live, n_dead_tup AS dead, n_ins_since_vacuum AS inserted, n_mod_since_analyze AS modified FROM pg_stat_user_tables'))).rows;
  for (const t of tables) {
    if (closing) return;
    const name = `"${t.relname.replaceAll('"', '""')}"`;
    // Inserts count since PostgreSQL 13: an insert-only table is vacuumed too, so that its pages
    // are marked all-visible as it grows.
    const vacuum = Number(t.dead) > 50 + 0.2 * Number(t.live) || Number(t.inserted) > 1000 + 0.2 * Number(t.live);
    if (vacuum) {
      const cleaned = indexesCleaned.get(t.relname);
      const full = cleaned === undefined || Date.now() - cleaned >= INDEX_CLEANUP_MS;
      await inTurn(() => script(full ? `VACUUM ${name}` : `VACUUM (INDEX_CLEANUP OFF) ${name}`));
      if (full) indexesCleaned.set(t.relname, Date.now());
    }
    if (vacuum || Number(t.modified) > 50 + 0.1 * Number(t.live)) {
      await inTurn(() => script(`SET default_statistics_target = ${STATISTICS_TARGET}; ANALYZE ${name}; RESET default_statistics_target`));
    }
  }
  const old = (await inTurn(() => script<{ name: string }>(
    `SELECT c.oid::regclass::text AS name FROM pg_class c WHERE c.relkind IN ('r', 'm')
       AND (age(c.relfrozenxid) > ${FREEZE_MAX_AGE} OR mxid_age(c.relminmxid) > ${MULTIXACT_FREEZE_MAX_AGE})
     ORDER BY age(c.relfrozenxid) DESC`))).rows;
  for (const t of old) {
    if (closing) return;
    await inTurn(() => script(`VACUUM (FREEZE) ${t.name}`));
  }
}
/** Where the write-ahead log stands; inside a turn already taken (walPosition takes one). */
const readWalPosition = async (): Promise<string> => (await script<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0]?.lsn ?? '';
const walPosition = (): Promise<string> => inTurn(readWalPosition);
async function checkpoint(): Promise<void> {
  if (Date.now() - checkpointed.at < CHECKPOINT_MS || closing) return;
  if ((await walPosition()) === checkpointed.lsn) {
    checkpointed = { ...checkpointed, at: Date.now() };
    return;
  }
  // The checkpoint writes a record of its own: the position after it is "nothing written since".
  // It is read in the checkpoint's turn: read in a turn of its own, it could follow another
  // statement's write, which would then be taken as checkpointed and wait for the next write.
  const after = await inTurn(async () => {
    await script('CHECKPOINT');
    return readWalPosition();
  });
  checkpointed = { at: Date.now(), lsn: after };
}
/** One pass at a time: a pass longer than `NAPTIME_MS` (a large table frozen) is not joined by the next. */
let maintaining = false;
const warnOf = (what: string) => (err: unknown) => {
  if (!closing) port.postMessage({ warning: `embedded store maintenance (${what}) failed: ${plain(err).message}` } satisfies EmbeddedWarning);
};
const maintenance = setInterval(() => {
  if (maintaining) return;
  maintaining = true;
  // Each step on its own: a vacuum that keeps failing must not keep the checkpoints from being made.
  void autovacuum().catch(warnOf('VACUUM/ANALYZE'))
    .then(() => checkpoint()).catch(warnOf('CHECKPOINT'))
    .finally(() => { maintaining = false; });
}, NAPTIME_MS);
maintenance.unref();

port.on('message', (req: EmbeddedRequest) => {
  handle(req).then(
    (value) => {
      // An answer's bytes move to the main thread rather than being copied.
      if (value instanceof Uint8Array) port.postMessage({ id: req.id, ok: true, value } satisfies EmbeddedReply, [value.buffer as ArrayBuffer]);
      else port.postMessage({ id: req.id, ok: true, value } satisfies EmbeddedReply);
    },
    (err: unknown) => port.postMessage({ id: req.id, ok: false, error: plain(err) } satisfies EmbeddedReply),
  );
});
