import pg from 'pg';
import { createHash } from 'node:crypto';
import type { Db, Queryable, QueryOptions } from './db.js';

// Return BIGINT (int8) columns as numbers: ids and counters here stay far below 2^53.
pg.types.setTypeParser(20, (value) => Number(value));

const parseTimestamptzSlowly = pg.types.getTypeParser(1184, 'text') as (text: string) => Date | string;

/**
 * timestamptz in a UTC session (`2026-11-23 20:45:36.379256+00`) is ISO 8601 but for the space
 * and the bare offset, and the engine parses ISO text about twice as fast as pg's general parser
 * (a fleet page has a hundred timestamps). Any other form (another time zone, BC, infinity) goes
 * to pg's parser.
 */
export function parseTimestamptz(text: string): Date | string {
  if (text.length >= 22 && text.length <= 29 && text.charCodeAt(10) === 32 && text.endsWith('+00')) {
    return new Date(`${text.slice(0, 10)}T${text.slice(11, -3)}Z`);
  }
  return parseTimestamptzSlowly(text);
}
pg.types.setTypeParser(1184, parseTimestamptz);

/** A prepared statement is named after its text, so every connection prepares it once. */
const names = new Map<string, string>();

// Other statements go as (text, values): pg copies a config object property by property.
function prepared(text: string, params: readonly unknown[] | undefined): pg.QueryConfig {
  let name = names.get(text);
  if (name === undefined) {
    name = `skyport_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
    names.set(text, name);
  }
  return { name, text, values: params as unknown[] | undefined };
}

/** A statement on the pool or on a transaction's connection, prepared when asked. */
async function run<Row>(on: pg.Pool | pg.PoolClient, sql: string, params: readonly unknown[] | undefined, options: QueryOptions | undefined): Promise<Row[]> {
  const result = options?.prepare ? await on.query(prepared(sql, params)) : await on.query(sql, params as unknown[] | undefined);
  return result.rows as Row[];
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
      const tx: Queryable = {
        query: <Row>(sql: string, params?: readonly unknown[], options?: QueryOptions) => run<Row>(conn, sql, params, options),
        exec: async (sql: string) => { await conn.query(sql); },
      };
      try {
        await conn.query('BEGIN');
        const result = await work(tx);
        await conn.query('COMMIT');
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
