import { mkdirSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { abortedTransaction, commitEffects, type Db, type Queryable, type QueryOptions } from './db.js';
import type { EmbeddedReply, EmbeddedRequest, EmbeddedWarning } from './embedded-protocol.js';
import { statementName } from './statements.js';
import { readResult, scriptMessage, statementMessage } from './wire.js';

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
  /**
   * A tarball of a data directory (`dump()` of another store) to start from instead of an empty
   * cluster: initdb is the dearest part of opening a new store, and a migrated template spares
   * the migrations too. Only for a store whose data directory is new or in memory.
   */
  template?: string;
}

export interface EmbeddedDb extends Db {
  /** The whole data directory as a tarball, to start other stores from (`template`). */
  dump(): Promise<Uint8Array>;
}

export async function openEmbedded(dataDir: string | undefined, options: EmbeddedOptions = {}): Promise<EmbeddedDb> {
  if (dataDir !== undefined) mkdirSync(dataDir, { recursive: true });
  // Run from source (tests, benchmarks, `npm run dev`), this module is TypeScript and so is the
  // worker beside it, which then needs tsx's loader too.
  const fromSource = import.meta.url.endsWith('.ts');
  const file = new URL(fromSource ? './embedded-worker.ts' : './embedded-worker.js', import.meta.url);
  const workerData = { dataDir: dataDir === undefined ? undefined : `${dataDir}/pg`, maintenanceMs: options.maintenanceMs, template: options.template };
  const worker = fromSource
    ? new Worker(`import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((tsx) => { tsx.register(); return import(${JSON.stringify(file.href)}); })`, { eval: true, workerData })
    : new Worker(file, { workerData });
  const pending = new Map<number, { resolve(value: unknown): void; reject(err: unknown): void }>();
  let nextId = 1;
  let gone: Error | null = null;

  // The thread keeps the process alive only while a request waits on it, as a socket would.
  worker.unref();
  const settle = (id: number) => {
    pending.delete(id);
    if (pending.size === 0) worker.unref();
  };
  worker.on('message', (reply: EmbeddedReply | EmbeddedWarning) => {
    if ('warning' in reply) return process.emitWarning(reply.warning);
    const waiting = pending.get(reply.id);
    if (!waiting) return;
    settle(reply.id);
    if (reply.ok) waiting.resolve(reply.value);
    else waiting.reject(Object.assign(new Error(reply.error.message), reply.error));
  });
  const fail = (err: Error) => {
    gone ??= err;
    for (const [id, waiting] of pending) {
      settle(id);
      waiting.reject(err);
    }
  };
  worker.on('error', (err) => fail(new Error(`the embedded store stopped: ${err.message}`)));
  worker.on('exit', (code) => fail(new Error(`the embedded store stopped (thread exit ${code})`)));

  function call<T>(request: Request): Promise<T> {
    if (gone) return Promise.reject(gone);
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      if (pending.size === 0) worker.ref();
      pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      // A message's own copy moves to the thread (a Buffer may share a pooled ArrayBuffer).
      if (request.op === 'run') worker.postMessage({ ...request, id }, [request.message.buffer as ArrayBuffer]);
      else worker.postMessage({ ...request, id });
    });
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
  await on().query('SELECT 1');

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
      if (gone) return;
      await call({ op: 'close' });
      gone = new Error('the embedded store is closed');
      await worker.terminate();
    },
  };
}
