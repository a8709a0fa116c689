import { parentPort, workerData } from 'node:worker_threads';
import { PGlite, type Transaction } from '@electric-sql/pglite';
import type { EmbeddedError, EmbeddedReply, EmbeddedRequest, EmbeddedWarning } from './embedded-protocol.js';

/**
 * The embedded store's own thread (embedded.ts): PGlite, its WebAssembly PostgreSQL and its
 * protocol parsing run here, so that they use a core of their own instead of the one that
 * serves HTTP and the device gateway. Requests come from the one Db that opened this thread;
 * a transaction holds PGlite's single connection until the main thread ends it.
 */
const port = parentPort;
if (!port) throw new Error('embedded-worker.ts runs as a worker thread of embedded.ts');

const pg = new PGlite((workerData as { dataDir?: string }).dataDir);
/** Open transactions: `end` commits (true) or rolls back (false) and answers which it did. */
const open = new Map<number, { tx: Transaction; end(commit: boolean): Promise<boolean> }>();
let nextTx = 1;

/** Errors cross threads as plain fields: the SQLSTATE `code` is what repositories look at. */
function plain(err: unknown): EmbeddedError {
  const e = (err ?? {}) as Record<string, unknown>;
  const out: EmbeddedError = { message: err instanceof Error ? err.message : String(err) };
  for (const k of ['code', 'detail', 'constraint', 'table', 'column', 'severity'] as const) if (typeof e[k] === 'string') out[k] = e[k] as string;
  return out;
}

const reply = (message: EmbeddedReply) => port.postMessage(message);

/** Rolls a transaction back: thrown inside PGlite's transaction() to make it roll back. */
class RollBack extends Error {}

async function handle(req: EmbeddedRequest): Promise<unknown> {
  await pg.waitReady;
  const on = req.op === 'query' || req.op === 'exec' ? (req.tx === undefined ? pg : open.get(req.tx)?.tx) : pg;
  if (!on) throw new Error('the transaction has ended');
  switch (req.op) {
    case 'query': return (await on.query(req.sql, req.params as unknown[] | undefined)).rows;
    case 'exec': await on.exec(req.sql); return null;
    case 'begin': {
      const id = nextTx++;
      let finish: (commit: boolean) => void = () => undefined;
      const finished = new Promise<boolean>((resolve) => { finish = resolve; });
      let holding: () => void = () => undefined;
      const started = new Promise<void>((resolve) => { holding = resolve; });
      const outcome: Promise<boolean> = pg.transaction(async (tx) => {
        open.set(id, { tx, end: (commit) => { finish(commit); return outcome; } });
        holding();
        if (!(await finished)) throw new RollBack();
      }).then(() => true, (err: unknown) => {
        if (err instanceof RollBack) return false;
        throw err;
      }).finally(() => open.delete(id));
      await Promise.race([started, outcome]); // `outcome` settles first only if BEGIN failed
      return id;
    }
    case 'end': {
      const t = open.get(req.tx);
      if (!t) throw new Error('the transaction has ended');
      return t.end(req.commit);
    }
    case 'close':
      closing = true;
      clearInterval(maintenance);
      await pg.close();
      return null;
  }
}

/**
 * PGlite runs PostgreSQL in single-user mode, without the autovacuum launcher: left alone, its
 * tables are never analysed nor vacuumed, the planner works blind and dead rows pile up (a
 * read of 10,000 devices' configuration states took 7 times longer than after VACUUM ANALYZE).
 * So this thread does the launcher's work with PostgreSQL's default thresholds (autovacuum
 * vacuum/analyze threshold 50 rows, scale factors 0.2 and 0.1): every `NAPTIME_MS` it looks at
 * the statistics of each table and vacuums or analyses the ones that crossed them. Statements
 * wait for it as for any other, and it waits for open transactions.
 */
const NAPTIME_MS = (workerData as { maintenanceMs?: number }).maintenanceMs ?? 30_000;
let closing = false;
async function autovacuum(): Promise<void> {
  const tables = (await pg.query<{ relname: string; live: number; dead: number; modified: number }>(
    'SELECT relname, n_live_tup AS live, n_dead_tup AS dead, n_mod_since_analyze AS modified FROM pg_stat_user_tables')).rows;
  for (const t of tables) {
    if (closing) return;
    const name = `"${t.relname.replaceAll('"', '""')}"`;
    if (Number(t.dead) > 50 + 0.2 * Number(t.live)) await pg.exec(`VACUUM (ANALYZE) ${name}`);
    else if (Number(t.modified) > 50 + 0.1 * Number(t.live)) await pg.exec(`ANALYZE ${name}`);
  }
}
const maintenance = setInterval(() => {
  void autovacuum().catch((err: unknown) => port.postMessage({ warning: `embedded store maintenance (VACUUM/ANALYZE) failed: ${plain(err).message}` } satisfies EmbeddedWarning));
}, NAPTIME_MS);
maintenance.unref();

port.on('message', (req: EmbeddedRequest) => {
  handle(req).then(
    (value) => reply({ id: req.id, ok: true, value }),
    (err: unknown) => reply({ id: req.id, ok: false, error: plain(err) }),
  );
});
