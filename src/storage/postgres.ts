import pg from 'pg';
import './pg-types.js';
import { statementName } from './statements.js';
import { rowMaker } from './rows.js';
import { abortedTransaction, commitEffects, type Db, type QueryOptions, type Tx } from './db.js';

// A prepared statement goes as a config that names it, its rows as arrays that a builder
// compiled for its columns turns into objects (rows.ts; pg grows each row key by key). Others go
// as (text, values), because pg copies a config object property by property.
function prepared(text: string, params: readonly unknown[] | undefined): pg.QueryArrayConfig {
  return { name: statementName(text), text, values: params as unknown[] | undefined, rowMode: 'array' };
}

/** A statement on the pool or on a transaction's connection, prepared when asked. */
async function run<Row>(on: pg.Pool | pg.PoolClient, sql: string, params: readonly unknown[] | undefined, options: QueryOptions | undefined): Promise<Row[]> {
  if (!options?.prepare) return (await on.query(sql, params as unknown[] | undefined)).rows as Row[];
  const result = await on.query(prepared(sql, params));
  const make = rowMaker(result.fields.map((f) => f.name));
  return result.rows.map(make) as Row[];
}

export async function openPostgres(url: string, options: { poolSize?: number } = {}): Promise<Db> {
  const pool = new pg.Pool({ connectionString: url, max: options.poolSize ?? 10 });
  // A pool error (a server restart dropping idle clients) must not crash the process;
  // the next query reconnects.
  pool.on('error', () => undefined);
  const client = await pool.connect(); // fail fast on a bad URL or an unreachable server
  client.release();

  const query = <Row>(sql: string, params?: readonly unknown[], options?: QueryOptions) => run<Row>(pool, sql, params, options);

  return {
    kind: 'postgres',
    query,
    exec: async (sql) => { await pool.query(sql); },
    async transaction(work) {
      const conn = await pool.connect();
      const effects = commitEffects();
      const tx: Tx = {
        query: <Row>(sql: string, params?: readonly unknown[], options?: QueryOptions) => run<Row>(conn, sql, params, options),
        exec: async (sql: string) => { await conn.query(sql); },
        afterCommit: effects.add,
      };
      try {
        await conn.query('BEGIN');
        const result = await work(tx);
        if ((await conn.query('COMMIT')).command === 'ROLLBACK') throw abortedTransaction();
        effects.run();
        return result;
      } catch (err) {
        await conn.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        conn.release();
      }
    },
    close: () => pool.end(),
  };
}
