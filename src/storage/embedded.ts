import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import type { Db, Queryable } from './db.js';

/**
 * The embedded store: PostgreSQL compiled to WebAssembly (PGlite), one connection, data under
 * `dataDir` (or in memory when `dataDir` is undefined, for tests). See docs/architecture.md for
 * why this and not SQLite: it runs the very same SQL and migrations as production.
 */
export async function openEmbedded(dataDir: string | undefined): Promise<Db> {
  if (dataDir !== undefined) mkdirSync(dataDir, { recursive: true });
  const pg = new PGlite(dataDir === undefined ? undefined : `${dataDir}/pg`);
  await pg.waitReady;

  const query = async <Row>(sql: string, params?: readonly unknown[]) =>
    (await pg.query<Row>(sql, params as unknown[] | undefined)).rows;

  return {
    kind: 'embedded',
    query,
    exec: async (sql) => { await pg.exec(sql); },
    // PGlite has a single connection; its transaction() holds it exclusively until done.
    transaction: (work) =>
      pg.transaction((t) => {
        const tx: Queryable = {
          query: async <Row>(sql: string, params?: readonly unknown[]) => (await t.query<Row>(sql, params as unknown[] | undefined)).rows,
          exec: async (sql: string) => { await t.exec(sql); },
        };
        return work(tx);
      }),
    close: () => pg.close(),
  };
}
