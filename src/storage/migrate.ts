import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Db } from './db.js';

/**
 * Forward-only, versioned migrations: `migrations/NNNN_name.sql`, applied in order, each in its
 * own transaction, recorded in `schema_migrations`. A migration, once released, is never edited:
 * a change is a new file. Both stores run the same files.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

// migrations/ sits at the package root, two levels above both src/storage and dist/storage.
const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

export function loadMigrations(dir = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((file) => ({
      version: Number(file.slice(0, 4)),
      name: file.slice(5, -4),
      sql: readFileSync(join(dir, file), 'utf8'),
    }));
}

export async function migrate(db: Db, migrations = loadMigrations()): Promise<Migration[]> {
  await db.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now())`);
  const rows = await db.query<{ version: number }>('SELECT version FROM schema_migrations');
  const applied = new Set(rows.map((r) => Number(r.version)));
  const newest = Math.max(0, ...applied);
  const known = new Set(migrations.map((m) => m.version));
  if (newest > Math.max(0, ...known)) {
    throw new Error(`the database is at schema version ${newest}, newer than this release knows (${Math.max(0, ...known)}); upgrade Skyport`);
  }
  const done: Migration[] = [];
  for (const m of migrations) {
    if (applied.has(m.version)) continue;
    await db.transaction(async (tx) => {
      await tx.exec(m.sql);
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
    });
    done.push(m);
  }
  return done;
}
