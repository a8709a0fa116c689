import pg from 'pg';
import './pg-types.js';
import { statementName } from './statements.js';
import { rowMaker } from './rows.js';
import { abortedTransaction, commitEffects, type Db, type QueryOptions, type Tx } from './db.js';
import { isStoreUnavailable, translated } from './unavailable.js';

// A prepared statement goes as a config that names it, its rows as arrays that a builder
// compiled for its columns turns into objects (rows.ts; pg grows each row key by key). Others go
// as (text, values), because pg copies a config object property by property.
function prepared(text: string, params: readonly unknown[] | undefined): pg.QueryArrayConfig {
  return { name: statementName(text), text, values: params as unknown[] | undefined, rowMode: 'array' };
}

/**
 * A statement on the pool or on a transaction's connection, prepared when asked. A failure to
 * reach the server is the store's unavailability (unavailable.ts: 503), anything else is thrown
 * as PostgreSQL said it.
 */
async function run<Row>(on: pg.Pool | pg.PoolClient, sql: string, params: readonly unknown[] | undefined, options: QueryOptions | undefined): Promise<Row[]> {
  try {
    if (!options?.prepare) return (await on.query(sql, params as unknown[] | undefined)).rows as Row[];
    const result = await on.query(prepared(sql, params));
    const make = rowMaker(result.fields.map((f) => f.name));
    return result.rows.map(make) as Row[];
  } catch (err) {
    return translated(err);
  }
}

export interface PostgresOptions {
  /** The most connections the pool opens (DATABASE_POOL_SIZE; default 10, pg's own). */
  poolSize?: number;
  /**
   * How long a statement waits for a connection, from the pool or a new one, before it fails as
   * unavailable: without it, a pool whose connections all hang keeps requests waiting for ever.
   */
  connectTimeoutMs?: number;
  /**
   * How long a statement waits for the server's answer before it fails as unavailable and its
   * connection is dropped (a server that went silent, a network that drops packets: TCP alone
   * would wait many minutes).
   */
  queryTimeoutMs?: number;
}

export async function openPostgres(url: string, options: PostgresOptions = {}): Promise<Db> {
  const max = options.poolSize ?? 10;
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
    query_timeout: options.queryTimeoutMs ?? 30_000,
    // Finds a dead server under an idle connection before a statement is sent to it.
    keepAlive: true,
  });
  // A pool error (a server restart dropping idle clients) must not crash the process;
  // the next query reconnects.
  pool.on('error', () => undefined);
  const client = await pool.connect(); // fail fast on a bad URL or an unreachable server
  client.release();

  const query = <Row>(sql: string, params?: readonly unknown[], options?: QueryOptions) => run<Row>(pool, sql, params, options);

  return {
    kind: 'postgres',
    query,
    exec: async (sql) => {
      // Scripts are migrations, which may rewrite a large table: not the statements' time-out.
      await pool.query({ text: sql, query_timeout: MIGRATION_TIMEOUT_MS } as pg.QueryConfig).catch(translated);
    },
    async transaction(work) {
      const conn = await pool.connect().catch(translated);
      // A checked-out connection that dies between statements (the server shut down while `work`
      // hashed a password) reports it as an 'error' event, which with no listener would end the
      // process; the next statement fails on it instead.
      let broken: unknown = null;
      const onError = (err: unknown) => { broken ??= err; };
      conn.on('error', onError);
      const effects = commitEffects();
      const tx: Tx = {
        query: <Row>(sql: string, params?: readonly unknown[], options?: QueryOptions) => run<Row>(conn, sql, params, options),
        exec: async (sql: string) => { await conn.query(sql).catch(translated); },
        afterCommit: effects.add,
      };
      try {
        await run(conn, 'BEGIN', undefined, undefined);
        const result = await work(tx);
        if ((await conn.query('COMMIT').catch(translated)).command === 'ROLLBACK') throw abortedTransaction();
        effects.run();
        return result;
      } catch (err) {
        // A connection that failed (or whose statement timed out) is not asked for anything more:
        // it is closed below, and the server rolls back what it had of the transaction.
        if (isStoreUnavailable(err)) broken ??= err;
        else await conn.query('ROLLBACK').catch((rollback: unknown) => { broken ??= rollback; });
        throw err;
      } finally {
        conn.off('error', onError);
        // A connection that failed is dropped from the pool rather than handed to the next caller.
        conn.release(broken === null ? undefined : broken instanceof Error ? broken : new Error('the connection failed'));
      }
    },
    close: () => pool.end(),
    connections: () => ({ max, inUse: pool.totalCount - pool.idleCount, idle: pool.idleCount, waiting: pool.waitingCount }),
  };
}

/** A migration's time-out: an hour, not none, so that a server gone silent still ends it. */
const MIGRATION_TIMEOUT_MS = 60 * 60 * 1000;
