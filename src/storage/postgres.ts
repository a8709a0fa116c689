import pg from 'pg';
import type { Db, Queryable } from './db.js';

// Return BIGINT (int8) columns as numbers: ids and counters here stay far below 2^53.
pg.types.setTypeParser(20, (value) => Number(value));

export async function openPostgres(url: string, options: { poolSize?: number } = {}): Promise<Db> {
  const pool = new pg.Pool({ connectionString: url, max: options.poolSize ?? 10 });
  // A pool error (a server restart dropping idle clients) must not crash the process;
  // the next query reconnects.
  pool.on('error', () => undefined);
  const client = await pool.connect(); // fail fast on a bad URL or an unreachable server
  client.release();

  const query = async <Row>(sql: string, params?: readonly unknown[]) =>
    (await pool.query(sql, params as unknown[] | undefined)).rows as Row[];

  return {
    kind: 'postgres',
    query,
    exec: async (sql) => { await pool.query(sql); },
    async transaction(work) {
      const conn = await pool.connect();
      const tx: Queryable = {
        query: async <Row>(sql: string, params?: readonly unknown[]) =>
          (await conn.query(sql, params as unknown[] | undefined)).rows as Row[],
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
