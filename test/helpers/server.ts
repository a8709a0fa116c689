import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { loadSettings, type Settings } from '../../src/config/settings.js';
import { createSkyport, type Seams, type Skyport } from '../../src/main.js';
import { manualClock, systemClock, type Clock } from '../../src/platform/clock.js';
import { createSecrets } from '../../src/platform/secrets.js';
import type { Db } from '../../src/storage/db.js';
import { openEmbedded } from '../../src/storage/embedded.js';
import { migrate } from '../../src/storage/migrate.js';
import { openPostgres } from '../../src/storage/postgres.js';

/**
 * Test servers: a real Skyport listening on a free loopback port, on the store the run asks for
 * (TEST_STORE=embedded|postgres). PostgreSQL runs get a database of their own, dropped at close.
 */
export const STORE = process.env.TEST_STORE === 'postgres' ? 'postgres' : 'embedded';

export interface TestStore {
  open(): Promise<Db>;
  drop(): Promise<void>;
  readonly settings: Partial<Record<string, string>>;
}

/** A fresh, empty store; `open` may be called again to reopen the same data (restart tests). */
export async function freshStore(options: { dataDir?: string } = {}): Promise<TestStore> {
  if (STORE === 'postgres') {
    const admin = process.env.TEST_DATABASE_URL;
    if (!admin) throw new Error('TEST_STORE=postgres needs TEST_DATABASE_URL');
    const name = `skyport_t_${randomBytes(6).toString('hex')}`;
    const c = new pg.Client({ connectionString: admin });
    await c.connect();
    await c.query(`CREATE DATABASE ${name}`);
    await c.end();
    const url = new URL(admin);
    url.pathname = `/${name}`;
    return {
      settings: { DATABASE_URL: url.toString() },
      open: () => openPostgres(url.toString(), { poolSize: 4 }),
      async drop() {
        const d = new pg.Client({ connectionString: admin });
        await d.connect();
        await d.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await d.end();
      },
    };
  }
  return {
    settings: options.dataDir ? { DATA_DIR: options.dataDir } : {},
    open: () => openEmbedded(options.dataDir),
    drop: async () => undefined,
  };
}

export interface TestServer {
  url: string;
  /** mqtt://127.0.0.1:<port> of the device gateway. */
  mqttUrl: string;
  /** ws://127.0.0.1:<port>/mqtt when the test set MQTT_WS_PORT. */
  wsUrl: string | undefined;
  skyport: Skyport;
  settings: Settings;
  clock: Clock;
  close(): Promise<void>;
}

export interface TestServerOptions {
  env?: Record<string, string>;
  clock?: Clock;
  /** Reuse a store (restart tests); it is not dropped at close. */
  store?: TestStore;
  /** Puts something between the server and its store (e.g. faultyDb, to crash writes). */
  wrapDb?: (db: Db) => Db;
  /** Puts something between parts of the server, to order what races would (createSkyport's seams). */
  seams?: Seams;
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const store = options.store ?? (await freshStore());
  const settings = loadSettings({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: process.env.TEST_LOG ?? 'silent', SIGNUP: 'on', ...store.settings, ...options.env });
  const opened = await store.open();
  await migrate(opened);
  const db = options.wrapDb ? options.wrapDb(opened) : opened;
  const clock = options.clock ?? systemClock;
  const skyport = await createSkyport(settings, { db, clock, secrets: createSecrets({ fastPasswordHashing: true }), logger: process.env.TEST_LOG ? undefined : false, ...(options.seams ? { seams: options.seams } : {}) });
  const { url, mqttUrl, wsUrl } = await skyport.listen({ host: '127.0.0.1', port: 0, mqttPort: 0 });
  return {
    url,
    mqttUrl,
    wsUrl,
    skyport,
    settings,
    clock,
    async close() {
      await skyport.close();
      if (!options.store) await store.drop();
    },
  };
}

export { manualClock };

/** A unique e-mail address per call. */
export function email(prefix = 'user'): string {
  return `${prefix}-${randomBytes(4).toString('hex')}@example.com`;
}
