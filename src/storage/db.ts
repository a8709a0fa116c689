/**
 * The storage port: SQL in, rows out. Two adapters implement it, PostgreSQL (pg pool) and the
 * embedded PGlite store; both run the same SQL and the same migrations, so repositories are
 * written once. Parameters use PostgreSQL's $1, $2... placeholders.
 */
export interface QueryOptions {
  /**
   * A hot statement whose text never depends on data: PostgreSQL keeps it prepared on each
   * pooled connection, so it is parsed and planned once rather than on every call (planning a
   * fleet page took 0.9 ms, running it 0.2). It must name its result columns: a prepared `*`
   * fails once a migration adds a column. The embedded store prepares it in its one session.
   */
  prepare?: boolean;
}

export interface Queryable {
  query<Row = Record<string, unknown>>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<Row[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Db extends Queryable {
  readonly kind: 'postgres' | 'embedded';
  /** Runs `work` in one transaction; it commits when `work` resolves and rolls back when it throws. */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/**
 * COMMIT of a transaction in which a statement failed (and whose error `work` swallowed) rolls
 * it back; PostgreSQL answers ROLLBACK rather than an error, and the store makes it one, so
 * that nothing is reported done that was not stored.
 */
export function abortedTransaction(): Error {
  return Object.assign(new Error('the transaction was rolled back: one of its statements failed'), { code: '25P02' });
}
