import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { STORE, startTestServer, type TestServer } from './helpers/server.js';
import { raw } from './helpers/http.js';
import { engineSchema, newProduct, signUp } from './helpers/fixtures.js';
import { faultyDb, type FaultyDb } from './helpers/faults.js';
import { configDevice, provision, type Holdings } from './helpers/device.js';
import { eventually } from './helpers/eventually.js';
import type { ConfigReader } from '../src/services/config/reader.js';

/**
 * Configuration writes close together, with delivery's reads finishing out of order: each device
 * must end on the newest committed value. The order is forced through a seam that holds a read
 * back until the test lets it go, never by sleeping.
 */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Holds back the next `effective` read, once it has read, until `release()`; `reached` resolves when it waits. */
function readGate() {
  let armed = false;
  let reached: () => void = () => undefined;
  let release: () => void = () => undefined;
  return {
    arm(): { reached: Promise<void>; release(): void } {
      armed = true;
      const waiting = new Promise<void>((r) => { reached = r; });
      return { reached: waiting, release: () => release() };
    },
    wrap: (reader: ConfigReader): ConfigReader => ({
      ...reader,
      async effective(...args) {
        const result = await reader.effective(...args);
        if (armed) {
          armed = false;
          const go = new Promise<void>((r) => { release = r; });
          reached();
          await go;
        }
        return result;
      },
    }),
  };
}

const gate = readGate();
let server: TestServer;
before(async () => { server = await startTestServer({ seams: { configReader: gate.wrap } }); });
after(async () => { await server.close(); });

test('pairs of close fleet writes: every connected device ends on the newest value, though the older write\'s fan-out read last', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const base = `${server.url}/v1/products/${product.id}/config`;
  const ids = await Promise.all(Array.from({ length: 5 }, () => provision(server.url, token, product.id)));
  const holdings = ids.map((): Holdings => new Map());
  const devices = await Promise.all(ids.map((who, i) => configDevice(server.mqttUrl, who, holdings[i] as Holdings)));
  const inSync = async () => (await raw(`${base}/rollout`, { token })).json as Json;
  // The devices' first sync is the setting, not the subject: on a loaded machine it may take more than the usual 5 s.
  await eventually(async () => ((await inSync()).in_sync === ids.length ? true : undefined), 30_000);

  for (let pair = 0; pair < 8; pair += 1) {
    const older = { rgb: { type: 'off' }, sleep: { mode: 'disable', exe_min: 10 + pair } };
    const newer = { rgb: { type: 'tracker' }, sleep: { mode: 'disable', exe_min: 10 + pair } };
    for (const d of devices) d.values.length = 0;

    // The older write's fan-out reads, then waits; the newer write commits and is delivered meanwhile.
    const held = gate.arm();
    assert.equal((await raw(base, { method: 'PUT', token, json: older })).status, 200);
    await held.reached;
    assert.equal((await raw(base, { method: 'PUT', token, json: newer })).status, 200);
    // Delivered: each device has this pair's sleep setting (its rgb is tracker already after the first pair).
    await eventually(() => (holdings.every((h) => h.get('sleep')?.value.exe_min === 10 + pair && h.get('rgb')?.value.type === 'tracker') ? true : undefined));
    held.release();

    // A sentinel in each device's turn, behind whatever the older fan-out queued: a device write
    // answers once the device applied it, so by then the older fan-out's turn has run.
    for (const who of ids) {
      const sentinel = await raw(`${base}/${who.id}`, { method: 'PUT', token, json: { geofence: { interval: 100 + pair } } });
      assert.equal(sentinel.status, 200, sentinel.text);
    }
    devices.forEach((d, i) => {
      const rgb = d.values.filter((v) => v.module === 'rgb').map((v) => v.value.type as string);
      assert.ok(!rgb.includes('off'), `pair ${pair}: device ${i} was sent rgb ${rgb.join(' then ')}: the older value after the newer`);
      assert.equal(holdings[i]?.get('rgb')?.value.type, 'tracker', `pair ${pair}: device ${i} ends on the newest value`);
    });
    const rollout = await inSync();
    assert.equal(rollout.in_sync, ids.length, `pair ${pair}: ${JSON.stringify(rollout)}`);
  }
  await Promise.all(devices.map((d) => d.client.endAsync()));
});

test('a fleet write is checked against the schema in force when it gets its turn, not the one before a schema change it waited for', {
  skip: STORE !== 'postgres' && 'on the embedded store a transaction holds the one session: the second write cannot read before the first commits',
}, async () => {
  let db: FaultyDb | undefined;
  const own = await startTestServer({ wrapDb: (d) => (db = faultyDb(d)) });
  try {
    const { token } = await signUp(own.url);
    const product = await newProduct(own.url, token);
    const base = `${own.url}/v1/products/${product.id}/config`;
    const custom = await raw(base, { method: 'PUT', token, headers: { 'content-type': 'application/schema+json' }, body: JSON.stringify(engineSchema()) });
    assert.equal(custom.status, 200, custom.text);

    // Restoring the default schema (no engine module) is held inside its transaction, after the lock...
    const held = (db as FaultyDb).pauseAt(/INSERT INTO config_history/);
    const restoring = raw(base, { method: 'DELETE', token, headers: { 'content-type': 'application/schema+json' }, body: '{}' });
    await held.reached;
    // ...while a fleet write that only the custom schema allows comes in and waits for its turn.
    const writing = raw(base, { method: 'PUT', token, json: { engine: { idle: 900 } } });
    const admin = new pg.Client({ connectionString: own.settings.databaseUrl });
    await admin.connect();
    try {
      await eventually(async () => {
        const waiting = await admin.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'");
        return waiting.rows[0].n > 0 ? true : undefined;
      });
    } finally {
      await admin.end();
    }
    held.release();
    assert.equal((await restoring).status, 200);
    const refused = await writing;
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.json.error, 'invalid_configuration');
    assert.match(JSON.stringify(refused.json.violations), /Unknown module/);
    const history = await raw(`${base}/history`, { token });
    assert.deepEqual(history.json.history.map((h: Json) => `${h.kind} ${h.action}`), ['schema reset', 'schema write'], 'the refused write left no version');
  } finally {
    await own.close();
  }
});

test('a fleet write reaches a connected device whose connect is not stored yet', async () => {
  let db: FaultyDb | undefined;
  const own = await startTestServer({ wrapDb: (d) => (db = faultyDb(d)) });
  try {
    const { token } = await signUp(own.url);
    const product = await newProduct(own.url, token);
    const who = await provision(own.url, token, product.id);
    // The device's connect is written in the background after its CONNACK (presence batches):
    // held back here, the store still lists the device offline while it takes its configuration.
    const presence = (db as FaultyDb).pauseAt(/^\s*UPDATE devices d SET\s+online/);
    const held: Holdings = new Map();
    const dev = await configDevice(own.mqttUrl, who, held);
    try {
      await presence.reached;
      await eventually(() => (held.size === 9 ? true : undefined), 5000, 'the configuration at connect');
      const fleet = await raw(`${own.url}/v1/products/${product.id}/config`, { method: 'PUT', token, json: { rgb: { type: 'off' } } });
      assert.equal(fleet.status, 200, fleet.text);
      await eventually(() => (held.get('rgb')?.value.type === 'off' ? true : undefined), 5000, 'the fleet write');
    } finally {
      presence.release();
      await dev.client.endAsync();
    }
  } finally {
    await own.close();
  }
});
