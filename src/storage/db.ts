/**
 * The storage port: SQL in, rows out. Two adapters implement it, PostgreSQL (pg pool) and the
 * embedded PGlite store; both run the same SQL and the same migrations, so repositories are
 * written once. Parameters use PostgreSQL's $1, $2... placeholders.
 */
export interface QueryOptions {
  /**
   * A hot statement whose text never depends on data: PostgreSQL keeps it prepared on each
   * pooled connection, so it is parsed and planned once rather than on every call (planning a
   * fleet page cost more than running it: docs/benchmarks.md). It must name its result columns:
   * a prepared `*` fails once a migration adds a column. The embedded store prepares it in its
   * one session.
   */
  prepare?: boolean;
}

export interface Queryable {
  query<Row = Record<string, unknown>>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<Row[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

/** A transaction's connection: its statements, and what is to happen once it has committed. */
export interface Tx extends Queryable {
  /**
   * Runs `effect` once the transaction has committed, and never if it rolls back: evicting a
   * cache, telling connections or delivery about the change. Run earlier, such an effect lets a
   * concurrent read see (and keep) the state from before the commit.
   */
  afterCommit(effect: () => void): void;
}

export interface Db extends Queryable {
  readonly kind: 'postgres' | 'embedded';
  /**
   * Runs `work` in one transaction; it commits when `work` resolves and rolls back when it
   * throws. A write of several statements takes a `Tx`, never the pool, so that it is all or
   * nothing.
   */
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  close(): Promise<void>;
  /**
   * The connection pool's state now, for the metrics (PostgreSQL only: the embedded store has
   * one session, which its statements take in turn).
   */
  connections?(): PoolState;
}

export interface PoolState {
  /** The most connections the pool opens (DATABASE_POOL_SIZE). */
  max: number;
  /** Connections running a statement or a transaction. */
  inUse: number;
  /** Open connections waiting for work. */
  idle: number;
  /** Statements and transactions waiting for a connection. */
  waiting: number;
}

/**
 * Runs `effect` once what was written through `q` is committed: after the commit of a
 * transaction, or at once for a statement that ran on its own (it committed when it returned).
 */
export function afterCommit(q: Queryable, effect: () => void): void {
  if (isTx(q)) q.afterCommit(effect);
  else effect();
}

/** Runs `work` in the caller's transaction when it has one, or else in a transaction of its own. */
export function inTransaction<T>(db: Db, tx: Tx | undefined, work: (tx: Tx) => Promise<T>): Promise<T> {
  return tx ? work(tx) : db.transaction(work);
}

const isTx = (q: Queryable): q is Tx => typeof (q as Partial<Tx>).afterCommit === 'function';

/**
 * The effects a transaction collects (Tx.afterCommit) and runs after its COMMIT. One failing
 * effect does not keep the others from running, nor turns the committed write into an error.
 */
export function commitEffects(): { add(effect: () => void): void; run(): void } {
  const effects: Array<() => void> = [];
  return {
    add: (effect) => { effects.push(effect); },
    run() {
      for (const effect of effects) {
        try {
          effect();
        } catch (err) {
          process.emitWarning(`an after-commit effect failed: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
    },
  };
}

/**
 * COMMIT of a transaction in which a statement failed (and whose error `work` swallowed) rolls
 * it back; PostgreSQL answers ROLLBACK rather than an error, and the store makes it one, so
 * that nothing is reported done that was not stored.
 */
export function abortedTransaction(): Error {
  return Object.assign(new Error('the transaction was rolled back: one of its statements failed'), { code: '25P02' });
}
