import { mkdirSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { abortedTransaction, commitEffects, type Db, type Queryable, type QueryOptions } from './db.js';
import type { EmbeddedCompiled, EmbeddedReply, EmbeddedRequest, EmbeddedWarning } from './embedded-protocol.js';
import { statementName } from './statements.js';
import { readResult, scriptMessage, statementMessage } from './wire.js';
import { isStoreUnavailable, storeUnavailable } from './unavailable.js';

type Request = EmbeddedRequest extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;

/**
 * The embedded store: PostgreSQL compiled to WebAssembly (PGlite), one connection, data under
 * `dataDir` (or in memory when `dataDir` is undefined, for tests). See docs/architecture.md for
 * why this and not SQLite: it runs the very same SQL and migrations as production.
 *
 * PGlite runs in a worker thread of its own (embedded-worker.ts): its statements run
 * synchronously, so on the main thread every statement stopped the HTTP server and the device
 * gateway, and the store could use only the core they share. This thread writes each
 * statement's protocol messages and reads PostgreSQL's answer (wire.ts), as pg does over a
 * socket: the bytes cross between the threads, and rows are parsed here by the same parsers as
 * on PostgreSQL.
 */
export interface EmbeddedOptions {
  /** How often the thread looks for tables to vacuum or analyse (embedded-worker.ts). */
  maintenanceMs?: number;
  /** How often a table's vacuum cleans its indexes too (embedded-worker.ts, `INDEX_CLEANUP_MS`). */
  indexCleanupMs?: number;
  /** The age, in transactions, at which a table is frozen (embedded-worker.ts, `FREEZE_MAX_AGE`); tests lower it. */
  freezeMaxAge?: number;
  /** How often the thread makes a checkpoint when the store has written (embedded-worker.ts, `CHECKPOINT_MS`). */
  checkpointMs?: number;
  /**
   * A tarball of a data directory (`dump()` of another store) to start from instead of an empty
   * cluster: initdb is the dearest part of opening a new store, and a migrated template spares
   * the migrations too. Only for a store whose data directory is new or in memory.
   */
  template?: string;
  /** Told of each thread the store starts (tests end one, as a crash of the thread would). */
  onThread?: (thread: Worker) => void;
  /** The first wait before a thread that died is started again; it doubles up to 5 s (default 250 ms). */
  restartMs?: number;
}

export interface EmbeddedDb extends Db {
  /** The whole data directory as a tarball, to start other stores from (`template`). */
  dump(): Promise<Uint8Array>;
}

/** PostgreSQL's WebAssembly as the first store's thread compiled it, for the threads after it. */
let compiled: WebAssembly.Module | undefined;

/** The longest wait between two starts of a thread that keeps dying. */
const MAX_RESTART_MS = 5_000;

export async function openEmbedded(dataDir: string | undefined, options: EmbeddedOptions = {}): Promise<EmbeddedDb> {
  if (dataDir !== undefined) mkdirSync(dataDir, { recursive: true });
  // Run from source (tests, benchmarks, `npm run dev`), this module is TypeScript and so is the
  // worker beside it, which then needs tsx's loader too.
  const fromSource = import.meta.url.endsWith('.ts');
  const file = new URL(fromSource ? './embedded-worker.ts' : './embedded-worker.js', import.meta.url);
  const pending = new Map<number, { resolve(value: unknown): void; reject(err: unknown): void }>();
  let nextId = 1;
  /** Why nothing can be asked now: the thread died (until its restart answers), or the store is closed. */
  let gone: Error | null = null;
  let closed = false;
  /** Whether the store has served once: a thread that cannot open the data directory is an error at start, not restarted. */
  let opened = false;
  const firstRestartMs = options.restartMs ?? 250;
  let restartMs = firstRestartMs;

  /**
   * Starts the thread. A thread that dies (a crash of the WebAssembly PostgreSQL, an uncaught
   * error) fails what waited on it as the store's unavailability (503), and is started again on
   * the same data directory, where PostgreSQL recovers from its write-ahead log as after a
   * crash; an in-memory store has nothing to start again from, and stays unavailable.
   */
  function start(template: string | undefined): Worker {
    const workerData = { dataDir: dataDir === undefined ? undefined : `${dataDir}/pg`, maintenanceMs: options.maintenanceMs, indexCleanupMs: options.indexCleanupMs, freezeMaxAge: options.freezeMaxAge, checkpointMs: options.checkpointMs, template, compiled };
    const thread = fromSource
      ? new Worker(`import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((tsx) => { tsx.register(); return import(${JSON.stringify(file.href)}); })`, { eval: true, workerData })
      : new Worker(file, { workerData });
    // The thread keeps the process alive only while a request waits on it, as a socket would.
    thread.unref();
    thread.on('message', (reply: EmbeddedReply | EmbeddedWarning | EmbeddedCompiled) => {
      if ('compiled' in reply) return void (compiled = reply.compiled);
      if ('warning' in reply) return process.emitWarning(reply.warning);
      const waiting = pending.get(reply.id);
      if (!waiting) return;
      settle(reply.id);
      if (reply.ok) waiting.resolve(reply.value);
      else waiting.reject(Object.assign(new Error(reply.error.message), reply.error));
    });
    let ended = false;
    const died = (why: string) => {
      if (ended) return;
      ended = true;
      if (worker !== thread) return;
      const err = closed && gone ? gone : storeUnavailable(new Error(`the embedded store's thread stopped: ${why}`));
      gone = err;
      for (const [id, waiting] of pending) {
        settle(id);
        waiting.reject(err);
      }
      if (closed || !opened || dataDir === undefined) return;
      process.emitWarning(`the embedded store's thread stopped (${why}); starting it again`);
      setTimeout(restart, restartMs).unref();
      restartMs = Math.min(restartMs * 2, MAX_RESTART_MS);
    };
    thread.on('error', (err) => died(err.message));
    thread.on('exit', (code) => died(`exit ${code}`));
    options.onThread?.(thread);
    return thread;
  }

  let worker = start(options.template);
  const settle = (id: number) => {
    pending.delete(id);
    if (pending.size === 0) worker.unref();
  };

  /** A new thread on the same data; it serves once it answers, and is tried again if it dies first. */
  function restart(): void {
    if (closed) return;
    worker = start(undefined);
    send<unknown[]>(worker, { op: 'run', message: new Uint8Array(statementMessage('SELECT 1', [])), tx: undefined }).then(() => {
      gone = null;
      restartMs = firstRestartMs;
    }, () => undefined);
  }

  function send<T>(thread: Worker, request: Request): Promise<T> {
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      if (pending.size === 0) thread.ref();
      pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      // A message's own copy moves to the thread (a Buffer may share a pooled ArrayBuffer).
      if (request.op === 'run') thread.postMessage({ ...request, id }, [request.message.buffer as ArrayBuffer]);
      else thread.postMessage({ ...request, id });
    });
  }

  function call<T>(request: Request): Promise<T> {
    if (gone) return Promise.reject(gone);
    return send<T>(worker, request);
  }

  /** Runs protocol messages in the thread; the rows of PostgreSQL's answer, or its error thrown. */
  async function run<Row>(message: Buffer, tx: number | undefined, statement?: string): Promise<Row[]> {
    const result = readResult<Row>(await call<Uint8Array>({ op: 'run', message: new Uint8Array(message), tx, statement }));
    if (result.error) throw result.error;
    return result.rows;
  }

  const on = (tx?: number): Queryable => ({
    query<Row>(sql: string, params?: readonly unknown[], options?: QueryOptions) {
      const name = options?.prepare ? statementName(sql) : undefined;
      return run<Row>(statementMessage(sql, params, name), tx, name);
    },
    async exec(sql: string) {
      await run(scriptMessage(sql), tx);
    },
  });

  // Fails here, not at the first request, when the data directory cannot be opened.
  try {
    await on().query('SELECT 1');
  } catch (err) {
    closed = true;
    await worker.terminate();
    throw isStoreUnavailable(err) && err.cause instanceof Error ? err.cause : err;
  }
  opened = true;

  return {
    kind: 'embedded',
    ...on(),
    // PGlite has a single session; a transaction holds it exclusively until it ends.
    async transaction(work) {
      const tx = await call<number>({ op: 'begin' });
      const effects = commitEffects();
      let result;
      try {
        result = await work({ ...on(tx), afterCommit: effects.add });
      } catch (err) {
        await call({ op: 'end', tx, commit: false }).catch(() => undefined);
        throw err;
      }
      if (!(await call<boolean>({ op: 'end', tx, commit: true }))) throw abortedTransaction();
      effects.run();
      return result;
    },
    dump: () => call<Uint8Array>({ op: 'dump' }),
    async close() {
      if (closed) return;
      closed = true;
      if (!gone) await call({ op: 'close' }).catch(() => undefined);
      gone = new Error('the embedded store is closed');
      await worker.terminate();
    },
  };
}
