import { randomBytes } from 'node:crypto';
import { after, before } from 'node:test';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadSettings, type Settings } from '../../src/config/settings.js';
import { createSkyport, type Seams, type Skyport } from '../../src/main.js';
import { manualClock, systemClock, type Clock } from '../../src/platform/clock.js';
import { createSecrets } from '../../src/platform/secrets.js';
import type { Db } from '../../src/storage/db.js';
import { openEmbedded } from '../../src/storage/embedded.js';
import { migrate } from '../../src/storage/migrate.js';
import type { FirmwareSource } from '../../src/services/firmware/updates/source.js';
import type { CompileSchemas } from '../../src/http/compiled-schemas.js';
import { admin, databaseUrl } from './templates.js';
import { serveInProcess } from './http.js';
import { within } from './eventually.js';

/**
 * Test servers: a real Skyport listening on free loopback ports, on the store the run asks for
 * (TEST_STORE=embedded|postgres). PostgreSQL runs get a database of their own, dropped at close.
 * The tests' own HTTP requests (raw()) reach it through Fastify's inject(); the ports are there
 * for what is about the network: devices over MQTT, event streams, particle-api-js and the CLIs.
 */
export const STORE = process.env.TEST_STORE === 'postgres' ? 'postgres' : 'embedded';

export interface TestStore {
  open(): Promise<Db>;
  drop(): Promise<void>;
  readonly settings: Partial<Record<string, string>>;
}

/**
 * A fresh store; `open` may be called again to reopen the same data (restart tests). Under
 * scripts/run-tests.mjs it is a copy of the run's migrated template (test/helpers/templates.ts);
 * a file run on its own gets an empty one. startTestServer migrates it either way.
 */
export async function freshStore(options: { dataDir?: string } = {}): Promise<TestStore> {
  if (STORE === 'postgres') {
    const server = process.env.TEST_DATABASE_URL;
    if (!server) throw new Error('TEST_STORE=postgres needs TEST_DATABASE_URL');
    const name = `skyport_t_${randomBytes(6).toString('hex')}`;
    const template = process.env.TEST_POSTGRES_TEMPLATE;
    await admin(server, template ? `CREATE DATABASE ${name} TEMPLATE ${template}` : `CREATE DATABASE ${name}`);
    const url = databaseUrl(server, name);
    return {
      settings: { DATABASE_URL: url },
      open: async () => (await import('../../src/storage/postgres.js')).openPostgres(url, { poolSize: 4 }),
      drop: () => admin(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
    };
  }
  const template = process.env.TEST_EMBEDDED_TEMPLATE;
  // A data directory is made from the template too, the first time it is opened; after that it
  // holds data of its own (restart tests reopen it).
  const fresh = () => options.dataDir === undefined || !existsSync(join(options.dataDir, 'pg', 'PG_VERSION'));
  return {
    settings: options.dataDir ? { DATA_DIR: options.dataDir } : {},
    open: () => openEmbedded(options.dataDir, template && fresh() ? { template } : {}),
    drop: async () => undefined,
  };
}

/**
 * One store for a whole test file, opened before its first test (migrated unless told not to)
 * and closed and dropped after its last. The answer stands for it from the first test on.
 */
export function storeForFile(options: { migrated?: boolean } = {}): Db {
  let store: TestStore | undefined;
  let db: Db | undefined;
  before(async () => {
    store = await freshStore();
    db = await store.open();
    if (options.migrated ?? true) await migrate(db);
  });
  after(async () => {
    await db?.close();
    await store?.drop();
  });
  const opened = (): Db => {
    if (!db) throw new Error('the store opens before the first test');
    return db;
  };
  return {
    get kind() { return opened().kind; },
    query: (sql, params, queryOptions) => opened().query(sql, params, queryOptions),
    exec: (sql) => opened().exec(sql),
    transaction: (work) => opened().transaction(work),
    close: () => opened().close(),
  };
}

export interface TestServer {
  url: string;
  /** mqtt://127.0.0.1:<port> of the device gateway; reading it on an `api` node (no gateway listens) throws. */
  readonly mqttUrl: string;
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
  /** Which firmware devices should run, and its images (createSkyport's `firmware`). */
  firmware?: FirmwareSource;
  /**
   * When the app compiles its schemas: by default each when its route is first called, since a
   * test calls few of the routes of the app it builds (src/http/compiled-schemas.ts).
   */
  compileSchemas?: CompileSchemas;
}

/**
 * Per-address limits are off in tests unless a test sets them: every request of a test comes
 * from one address, and a suite makes far more than 100 tokens (test/rate-limits.test.ts tests them).
 */
export const LIMITS_OFF: Readonly<Record<string, string>> = {
  RATE_LIMIT_REQUESTS: '0', RATE_LIMIT_EVENT_STREAMS: '0', RATE_LIMIT_OPEN_STREAMS: '0', RATE_LIMIT_TOKENS: '0',
};

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const store = options.store ?? (await freshStore());
  const settings = loadSettings({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: process.env.TEST_LOG ?? 'silent', SIGNUP: 'on', ...LIMITS_OFF, ...store.settings, ...options.env });
  const opened = await store.open();
  await migrate(opened);
  const db = options.wrapDb ? options.wrapDb(opened) : opened;
  const clock = options.clock ?? systemClock;
  const skyport = await createSkyport(settings, { db, clock, secrets: createSecrets({ fastPasswordHashing: true }), logger: process.env.TEST_LOG ? undefined : false, compileSchemas: options.compileSchemas ?? 'on-first-use', ...(options.seams ? { seams: options.seams } : {}), ...(options.firmware ? { firmware: options.firmware } : {}) });
  // A free MQTT port unless the test chose one (MQTT_PORT).
  const { url, mqttUrl, wsUrl } = await skyport.listen({ host: '127.0.0.1', port: 0, ...(options.env?.MQTT_PORT ? {} : { mqttPort: 0 }) });
  // raw() reaches it through inject(); client libraries, devices and event streams through its ports.
  const forget = serveInProcess(url, skyport.app);
  return {
    url,
    get mqttUrl(): string {
      if (mqttUrl === undefined) throw new Error(`node ${skyport.bus.nodeId} (role ${settings.role}) opens no MQTT port`);
      return mqttUrl;
    },
    wsUrl,
    skyport,
    settings,
    clock,
    async close() {
      forget();
      await closeWithin(skyport, CLOSE_LIMIT_MS);
      if (!options.store) await store.drop();
    },
  };
}

/** Far beyond what a node's shutdown takes in a test (its grace for devices is SHUTDOWN_GRACE_SECONDS). */
const CLOSE_LIMIT_MS = 60_000;

/**
 * Closes the node; one that has not closed within `ms` fails the test with the step its shutdown
 * waits for (Skyport.shutdownStage), instead of holding the test file until the runner's limit.
 */
async function closeWithin(skyport: Skyport, ms: number): Promise<void> {
  await within(skyport.close(), ms, () => `node ${skyport.bus.nodeId} did not close within ${ms / 1000} s; its shutdown was at: ${skyport.shutdownStage()}`);
}

export { manualClock };

/** A unique e-mail address per call. */
export function email(prefix = 'user'): string {
  return `${prefix}-${randomBytes(4).toString('hex')}@example.com`;
}
