/**
 * The storage port: SQL in, rows out. Two adapters implement it, PostgreSQL (pg pool) and the
 * embedded PGlite store; both run the same SQL and the same migrations, so repositories are
 * written once. Parameters use PostgreSQL's $1, $2... placeholders.
 */
export interface Queryable {
  query<Row = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<Row[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Db extends Queryable {
  readonly kind: 'postgres' | 'embedded';
  /** Runs `work` in one transaction; it commits when `work` resolves and rolls back when it throws. */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
