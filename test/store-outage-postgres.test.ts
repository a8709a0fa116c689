import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { freshStore, startTestServer, STORE, type TestServer, type TestStore } from './helpers/server.js';
import { raw } from './helpers/http.js';
import { faultyDb, type FaultyDb } from './helpers/faults.js';
import { newProduct, signUp } from './helpers/fixtures.js';
import { eventually } from './helpers/eventually.js';
import { startProxy, type TestProxy } from './helpers/proxy.js';
import { openPostgres } from '../src/storage/postgres.js';
import { defaultSchema } from '../src/domain/config/default-schema.js';

/**
 * PostgreSQL going away in the ways a network has (docs/operations.md, "When the store goes
 * away"), between the server and its database, through a relay the test controls: a connection
 * dropped in the middle of a write of several statements, a server that stops answering, and
 * one that refuses connections. Each request answers 503 with Retry-After within the store's
 * time-outs (1 s here), nothing is half-written, and the server carries on by itself.
 */
const onPostgres = { skip: STORE !== 'postgres' && 'PostgreSQL only: the embedded store has no connection to drop' };

let server: TestServer;
let faulty: FaultyDb;
let proxy: TestProxy;
let store: TestStore;

before(async () => {
  if (STORE !== 'postgres') return;
  store = await freshStore();
  const direct = new URL(store.settings.DATABASE_URL as string);
  proxy = await startProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
  const relayed = new URL(direct);
  relayed.port = String(proxy.port);
  const url = relayed.toString();
  server = await startTestServer({
    store: { settings: { DATABASE_URL: url }, open: () => openPostgres(url, { poolSize: 4, connectTimeoutMs: 1_000, queryTimeoutMs: 1_000 }), drop: async () => undefined },
    wrapDb: (db) => (faulty = faultyDb(db)),
  });
});

after(async () => {
  await server?.close();
  await proxy?.close();
  await store?.drop();
});

const location = (interval: number) => ({
  location: {
    ...Object.fromEntries(Object.entries((defaultSchema() as { properties: { location: { properties: Record<string, { default?: unknown }> } } }).properties.location.properties)
      .filter(([, p]) => p.default !== undefined).map(([k, p]) => [k, p.default])),
    interval_min: interval,
  },
});

async function fleet() {
  const owner = await signUp(server.url);
  const product = await newProduct(server.url, owner.token);
  const config = `${server.url}/v1/products/${product.id}/config`;
  const put = (interval: number) => raw(config, { method: 'PUT', token: owner.token, json: location(interval) });
  const history = async () => (await raw(`${config}/history?kind=values`, { token: owner.token })).json.history as unknown[];
  return { owner, product, config, put, history };
}

test('a connection dropped in the middle of a write of several statements: 503, nothing half-written, the next write succeeds', onPostgres, async () => {
  const f = await fleet();
  assert.equal((await f.put(600)).status, 200);
  const before = await f.history();

  // Held just before the history is appended: the values are written, in the same transaction.
  const held = faulty.pauseAt(/INSERT INTO config_history/);
  const write = f.put(700);
  await held.reached;
  proxy.cut();
  proxy.restore();
  held.release();
  const r = await write;
  assert.equal(r.status, 503, r.text);
  assert.equal(r.json.error, 'service_unavailable');
  assert.equal(r.headers.get('retry-after'), '5');

  const now = await raw(f.config, { token: f.owner.token });
  assert.equal(now.status, 200, now.text);
  assert.equal(now.json.configuration.location.interval_min, 600, 'the values are as before the write');
  assert.equal((await f.history()).length, before.length, 'no version was appended');
  assert.equal((await f.put(800)).status, 200, 'the next write succeeds on a new connection');
});

test('a server that stops answering: 503 once the statement time-out passes, not a request held for minutes', onPostgres, async () => {
  const f = await fleet();
  proxy.stall();
  try {
    const started = performance.now();
    const r = await raw(`${server.url}/v1/products/${f.product.id}/devices`, { token: f.owner.token });
    const took = performance.now() - started;
    assert.equal(r.status, 503, r.text);
    // The statement's 1 s, or a connection's 1 s and then the statement's: well under a client's patience.
    assert.ok(took < 5_000, `answered in ${Math.round(took)} ms`);
  } finally {
    proxy.flow();
  }
  await eventually(async () => (await raw(`${server.url}/v1/products/${f.product.id}/devices`, { token: f.owner.token })).status === 200 || undefined, 5_000, 'the fleet answers again');
});

test('a server that refuses connections: 503 for whatever needs it, and back by itself', onPostgres, async () => {
  const f = await fleet();
  proxy.cut();
  try {
    const r = await f.put(900);
    assert.equal(r.status, 503, r.text);
    assert.equal((await raw(`${server.url}/healthz`)).status, 503);
  } finally {
    proxy.restore();
  }
  await eventually(async () => (await raw(`${server.url}/healthz`)).status === 200 || undefined, 5_000, '/healthz 200 again');
  assert.equal((await f.put(900)).status, 200);
});
