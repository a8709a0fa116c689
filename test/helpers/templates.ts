import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openEmbedded } from '../../src/storage/embedded.js';
import { migrate } from '../../src/storage/migrate.js';

/**
 * Migrated, empty stores made once per run (scripts/run-tests.mjs), which every test server then
 * starts from: an embedded store's data directory as a tarball (a new one loads it in about a
 * third of the time initdb takes), and a PostgreSQL database that `CREATE DATABASE … TEMPLATE`
 * copies. Usage (compiled, as the runner runs it): `node .build/test/helpers/templates.js make
 * <dir> [postgres-url]` prints the environment the tests read; `… drop <postgres-url> <database>`
 * removes the database.
 */
export interface Templates { TEST_EMBEDDED_TEMPLATE: string; TEST_POSTGRES_TEMPLATE?: string }

export async function makeTemplates(dir: string, postgresUrl?: string): Promise<Templates> {
  const embedded = await openEmbedded(undefined);
  await migrate(embedded);
  // Each test store loads the whole tarball: without initdb's template databases, which an
  // embedded store never copies (it has one database), a copy loads in about half the time.
  // Checkpointed, it starts without replaying the migrations' write-ahead log.
  for (const name of ['template1', 'template0']) {
    // One statement at a time: DROP DATABASE runs outside a transaction only.
    await embedded.exec(`ALTER DATABASE ${name} IS_TEMPLATE false`);
    await embedded.exec(`DROP DATABASE ${name}`);
  }
  await embedded.exec('CHECKPOINT');
  const file = join(dir, 'embedded-template.tar');
  writeFileSync(file, await embedded.dump());
  await embedded.close();
  if (!postgresUrl) return { TEST_EMBEDDED_TEMPLATE: file };

  const name = `skyport_template_${randomBytes(4).toString('hex')}`;
  await admin(postgresUrl, `CREATE DATABASE ${name}`);
  const { openPostgres } = await import('../../src/storage/postgres.js');
  const db = await openPostgres(databaseUrl(postgresUrl, name), { poolSize: 1 });
  try {
    await migrate(db);
  } finally {
    // No session may stay on a template: CREATE DATABASE … TEMPLATE refuses to copy one in use.
    await db.close();
  }
  return { TEST_EMBEDDED_TEMPLATE: file, TEST_POSTGRES_TEMPLATE: name };
}

/** Runs one statement on the server's maintenance connection (CREATE or DROP DATABASE). */
export async function admin(postgresUrl: string, sql: string): Promise<void> {
  // Loaded when used: a test on the embedded store never needs pg's client.
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: postgresUrl });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** The URL of another database on the same server. */
export function databaseUrl(postgresUrl: string, name: string): string {
  const url = new URL(postgresUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  const [command, a, b] = process.argv.slice(2);
  if (command === 'make' && a) process.stdout.write(JSON.stringify(await makeTemplates(a, b)));
  else if (command === 'drop' && a && b && /^skyport_template_[0-9a-f]+$/.test(b)) await admin(a, `DROP DATABASE IF EXISTS ${b} WITH (FORCE)`);
  else throw new Error('usage: templates.ts make <dir> [postgres-url] | drop <postgres-url> <database>');
}
