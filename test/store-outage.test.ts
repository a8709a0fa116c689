import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { startTestServer, STORE, type TestServer, type TestStore } from './helpers/server.js';
import { basic, raw, type RawResponse } from './helpers/http.js';
import { newProduct, signUp } from './helpers/fixtures.js';
import { fakeDevice, provision, type FakeDevice } from './helpers/device.js';
import { openEventStream, type EventStream } from './helpers/sse.js';
import { eventually } from './helpers/eventually.js';
import { sample, scrape } from './helpers/metrics.js';
import { startPostgres, type TestPostgres } from './helpers/postgres.js';
import { openEmbedded } from '../src/storage/embedded.js';
import { openPostgres } from '../src/storage/postgres.js';
import { defaultSchema } from '../src/domain/config/default-schema.js';

/**
 * The outage drill (docs/operations.md, "When the store goes away"): token issuance, fleet
 * configuration writes, function calls and device events under load, the store taken away for
 * a while and given back, as an operator's restart or fail-over would. On PostgreSQL the test's
 * own server is stopped and started; on the embedded store its thread is ended (as a crash of
 * its WebAssembly PostgreSQL would), and the store starts it again by itself.
 *
 * Required: no 500 and no other answer than 200 or 503 (with Retry-After) while it is away, no
 * request held past its time-out, /healthz 503 meanwhile, recovery with nobody's help, nothing
 * acknowledged lost; and what needs no store goes on: the connected device stays connected,
 * calls to it from a caller already known answer 200, the event stream stays open.
 */

/** The tracker's `location` module as its defaults set it: writes replace a whole module. */
const locationDefaults = Object.fromEntries(Object.entries((defaultSchema() as { properties: { location: { properties: Record<string, { default?: unknown }> } } }).properties.location.properties)
  .filter(([, p]) => p.default !== undefined).map(([k, p]) => [k, p.default]));

/** How long a client waits for an answer: longer than the store's own time-outs (1 s here). */
const CLIENT_TIMEOUT_MS = 8_000;

let server: TestServer;
let pg: TestPostgres | undefined;
let thread: Worker | undefined;
let dataDir: string | undefined;

before(async () => {
  let store: TestStore;
  if (STORE === 'postgres') {
    pg = await startPostgres();
    const url = pg.url;
    store = { settings: { DATABASE_URL: url }, open: () => openPostgres(url, { poolSize: 6, connectTimeoutMs: 1_000, queryTimeoutMs: 2_000 }), drop: async () => undefined };
  } else {
    dataDir = mkdtempSync(join(tmpdir(), 'skyport-outage-'));
    const dir = dataDir;
    const template = process.env.TEST_EMBEDDED_TEMPLATE;
    // The thread is started again 1.5 s after it ends: an outage long enough to be under load.
    store = { settings: { DATA_DIR: dir }, open: () => openEmbedded(dir, { ...(template ? { template } : {}), restartMs: 1_500, onThread: (t) => { thread = t; } }), drop: async () => undefined };
  }
  server = await startTestServer({ store, env: { METRICS: 'open' } });
});

after(async () => {
  await server?.close();
  await pg?.destroy();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** Takes the store away: PostgreSQL stopped as a restart stops it, or the embedded store's thread ended. */
async function takeStoreAway(): Promise<void> {
  if (pg) await pg.stop('fast');
  else await thread?.terminate();
}

async function giveStoreBack(): Promise<void> {
  // The embedded store starts its thread again by itself.
  if (pg) await pg.start();
}

interface Tally {
  statuses: Map<number, number>;
  /** Answers other than 200, with their bodies, for the failure message. */
  odd: string[];
  /** 503s without Retry-After. */
  noRetryAfter: number;
  slowestMs: number;
}

function tally(): Tally {
  return { statuses: new Map(), odd: [], noRetryAfter: 0, slowestMs: 0 };
}

/** Runs `once` again and again until `running()` is false, counting answers. */
async function loop(t: Tally, running: () => boolean, once: (signal: AbortSignal) => Promise<RawResponse>): Promise<void> {
  while (running()) {
    const started = performance.now();
    let r: RawResponse;
    try {
      r = await once(AbortSignal.timeout(CLIENT_TIMEOUT_MS));
    } catch (err) {
      t.odd.push(`no answer: ${(err as Error).message}`);
      t.statuses.set(0, (t.statuses.get(0) ?? 0) + 1);
      continue;
    }
    t.slowestMs = Math.max(t.slowestMs, performance.now() - started);
    t.statuses.set(r.status, (t.statuses.get(r.status) ?? 0) + 1);
    if (r.status !== 200 && t.odd.length < 20) t.odd.push(`${r.status} ${r.text.slice(0, 200)}`);
    if (r.status === 503 && !r.headers.get('retry-after')) t.noRetryAfter += 1;
    // A client that sees 503 waits a little, as Retry-After asks (shortened: the drill is short).
    if (r.status === 503) await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test('the store goes away under load and comes back: 503 while it is away, never 500, nothing acknowledged lost', async () => {
  const owner = await signUp(server.url);
  const product = await newProduct(server.url, owner.token);
  const created = await raw(`${server.url}/v1/products/${product.id}/clients`, { method: 'POST', token: owner.token, json: { name: 'back end', type: 'installed' } });
  assert.equal(created.status, 201, created.text);
  const client = created.json.client as { id: string; secret: string };
  const who = await provision(server.url, owner.token, product.id);
  const device: FakeDevice = await fakeDevice(server.mqttUrl, who, { functions: { ping: () => 1 } });
  let closes = 0;
  device.client.on('close', () => { closes += 1; });
  const stream: EventStream = await openEventStream(`${server.url}/v1/products/${product.id}/events`, owner.token);
  const net = { network: true } as const;

  // Warm: the owner's token, the device and the owner's membership are known to the node.
  const call = (signal: AbortSignal) => raw(`${server.url}/v1/devices/${who.id}/ping`, { ...net, method: 'POST', token: owner.token, json: { arg: 'x' }, signal });
  assert.equal((await call(AbortSignal.timeout(CLIENT_TIMEOUT_MS))).status, 200);

  const issued: string[] = [];
  const written: number[] = [];
  let running = true;
  const tokens = tally();
  const writes = tally();
  const calls = tally();
  const seen = (t: Tally) => JSON.stringify(Object.fromEntries(t.statuses));
  let nextValue = 0;
  let published = 0;
  const loops = [
    ...Array.from({ length: 3 }, () => loop(tokens, () => running, async (signal) => {
      const r = await raw(`${server.url}/oauth/token`, { ...net, method: 'POST', form: { grant_type: 'client_credentials' }, headers: { authorization: basic(client.id, client.secret) }, signal });
      if (r.status === 200) issued.push(r.json.access_token as string);
      return r;
    })),
    ...Array.from({ length: 2 }, () => loop(writes, () => running, async (signal) => {
      const value = (nextValue += 1);
      const r = await raw(`${server.url}/v1/products/${product.id}/config`, { ...net, method: 'PUT', token: owner.token, json: { location: { ...locationDefaults, interval_min: value } }, signal });
      if (r.status === 200) written.push(value);
      return r;
    })),
    ...Array.from({ length: 2 }, () => loop(calls, () => running, call)),
    (async () => {
      while (running) {
        await device.publish('tick', { data: String((published += 1)) });
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })(),
  ];

  const state = () => `tokens ${seen(tokens)} ${tokens.odd.slice(0, 3).join(' | ')}; writes ${seen(writes)} ${writes.odd.slice(0, 3).join(' | ')}; calls ${seen(calls)} ${calls.odd.slice(0, 3).join(' | ')}`;
  try {
    await eventually(() => issued.length >= 5 && written.length >= 2 || undefined, 10_000, 'load before the outage').catch((err: Error) => { throw new Error(`${err.message}: ${state()}`); });
    await takeStoreAway();
    await eventually(async () => (await raw(`${server.url}/healthz`)).status === 503 || undefined, 5_000, '/healthz to say 503');
    await eventually(() => (tokens.statuses.get(503) ?? 0) > 3 && (writes.statuses.get(503) ?? 0) > 3 || undefined, 5_000, 'requests answered 503');
    // What needs no store goes on meanwhile.
    const publishedBefore = published;
    const callsBefore = calls.statuses.get(200) ?? 0;
    await eventually(() => published > publishedBefore + 3 && (calls.statuses.get(200) ?? 0) > callsBefore + 3 || undefined, 5_000, 'calls and events while the store is away');
    await eventually(() => stream.events.some((e) => e.name === 'tick' && Number(e.data) > publishedBefore + 2) || undefined, 5_000, 'events on the stream while the store is away');
    const down = sample(await scrape(server.url), 'skyport_storage_up');
    assert.equal(down, 0, 'the metrics say the store is down');

    await giveStoreBack();
    const recovered = issued.length;
    await eventually(() => issued.length > recovered + 3 || undefined, 15_000, 'token issuance to recover by itself');
    const writtenAfter = written.length;
    await eventually(() => written.length > writtenAfter + 1 || undefined, 10_000, 'configuration writes to recover by itself');
  } finally {
    running = false;
    await Promise.all(loops);
  }

  for (const [name, t] of [['tokens', tokens], ['writes', writes]] as const) {
    assert.deepEqual([...t.statuses.keys()].filter((s) => s !== 200 && s !== 503), [], `${name}: only 200 and 503 (${seen(t)}): ${t.odd.join(' | ')}`);
    assert.ok((t.statuses.get(503) ?? 0) > 0, `${name}: 503 while the store was away (${seen(t)})`);
    assert.equal(t.noRetryAfter, 0, `${name}: every 503 says Retry-After`);
    assert.ok(t.slowestMs < CLIENT_TIMEOUT_MS, `${name}: no request held past its time-out (slowest ${Math.round(t.slowestMs)} ms)`);
  }
  assert.deepEqual([...calls.statuses.keys()], [200], `calls to the connected device went on (${seen(calls)}): ${calls.odd.join(' | ')}`);
  assert.equal(closes, 0, 'the device stayed connected');
  assert.equal((await raw(`${server.url}/healthz`)).status, 200);
  const metrics = await scrape(server.url);
  assert.equal(sample(metrics, 'skyport_storage_up'), 1);
  assert.ok(sample(metrics, 'skyport_storage_unavailable_total') > 0, 'the metrics count the outage');

  // Nothing acknowledged is lost: every token issued works, every write acknowledged is in the
  // history with its value, and the fleet holds the last one acknowledged or a later one.
  for (const token of issued) {
    const r = await raw(`${server.url}/v1/access_tokens/current`, { token });
    assert.equal(r.status, 200, `an acknowledged token works: ${r.text}`);
  }
  const stored = new Set<number>();
  for (let page = 1; ; page++) {
    const list = await raw(`${server.url}/v1/products/${product.id}/config/history?kind=values&device_id=fleet&per_page=100&page=${page}`, { token: owner.token });
    assert.equal(list.status, 200, list.text);
    const versions = list.json.history as Array<{ version: number }>;
    for (const { version } of versions) {
      const r = await raw(`${server.url}/v1/products/${product.id}/config/history/${version}`, { token: owner.token });
      assert.equal(r.status, 200, r.text);
      stored.add(r.json.document.location.interval_min as number);
    }
    if (versions.length < 100) break;
  }
  assert.deepEqual(written.filter((value) => !stored.has(value)), [], 'every acknowledged write is in the history');
  stream.close();
  await device.close();
});
