import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './helpers/server.js';
import { raw } from './helpers/http.js';
import { faultyDb, type FaultyDb } from './helpers/faults.js';
import { engineSchema, newProduct, signUp } from './helpers/fixtures.js';
import { provision } from './helpers/device.js';

// Configuration writes are all or nothing: the store fails ("crashes") just before a later
// statement of the write, and what the write had done before it must be undone: no values, no
// schema, no history version, and regular devices still following their own values.

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
let server: TestServer;
let faulty: FaultyDb;
before(async () => { server = await startTestServer({ wrapDb: (db) => (faulty = faultyDb(db)) }); });
after(async () => { await server.close(); });

async function crashing(pattern: RegExp, write: () => Promise<{ status: number; text: string }>): Promise<void> {
  faulty.crashAt(pattern);
  const r = await write();
  assert.equal(faulty.crashed, true, `no statement matched ${pattern}`);
  assert.equal(r.status, 500, r.text);
}

async function product() {
  const { token } = await signUp(server.url);
  const p = await newProduct(server.url, token);
  const base = `${server.url}/v1/products/${p.id}/config`;
  const versions = async () => ((await raw(`${base}/history`, { token })).json.history as Json[]).map((h) => `${h.kind} ${h.device_id ?? 'fleet'} ${h.action}`);
  return { token, p, base, versions };
}

test('a fleet write: a crash after the values were replaced leaves the old values, the devices\' own values winning, and no version', async () => {
  const { token, p, base, versions } = await product();
  const who = await provision(server.url, token, p.id);
  const device = `${server.url}/v1/products/${p.id}/devices/${who.id}`;
  assert.equal((await raw(base, { method: 'PUT', token, json: { rgb: { type: 'off' } } })).status, 200);
  // A development device's own value, then back to regular: its own value wins until the next fleet write.
  assert.equal((await raw(device, { method: 'PUT', token, json: { development: true } })).status, 200);
  assert.equal((await raw(`${base}/${who.id}`, { method: 'PUT', token, json: { rgb: { type: 'tracker' } } })).status, 202);
  assert.equal((await raw(device, { method: 'PUT', token, json: { development: false } })).status, 200);

  for (const pattern of [/INSERT INTO config_values/, /UPDATE devices SET config_own_wins = false/, /INSERT INTO config_history/]) {
    await crashing(pattern, () => raw(base, { method: 'PUT', token, json: { rgb: { type: 'particle' }, sleep: { mode: 'enable' } } }));
    assert.deepEqual((await raw(base, { token })).json.configuration.rgb, { type: 'off' }, `${pattern}: the fleet's values are the old ones`);
    assert.equal((await raw(`${base}/${who.id}/explain`, { token })).json.modules.rgb, 'device', `${pattern}: the device's own value still wins`);
  }
  assert.deepEqual(await versions(), [`values ${who.id} write`, 'values fleet write']);
});

test('a device write: a crash after its values were replaced leaves the old ones and no version', async () => {
  const { token, p, base, versions } = await product();
  const who = await provision(server.url, token, p.id);
  assert.equal((await raw(`${base}/${who.id}`, { method: 'PUT', token, json: { geofence: { interval: 30 } } })).status, 202);
  for (const pattern of [/INSERT INTO config_values/, /INSERT INTO config_history/]) {
    await crashing(pattern, () => raw(`${base}/${who.id}`, { method: 'PUT', token, json: { geofence: { interval: 90 } } }));
    assert.deepEqual((await raw(`${base}/${who.id}`, { token })).json.own, { geofence: { interval: 30 } }, `${pattern}: the old own values`);
  }
  assert.deepEqual(await versions(), [`values ${who.id} write`]);
});

test('a schema replaced or restored: a crash before its version is recorded leaves the schema in force', async () => {
  const { token, base, versions } = await product();
  const schema = (await raw(base, { token, headers: { accept: 'application/schema+json' } })).text;
  await crashing(/INSERT INTO config_history/, () => raw(base, { method: 'PUT', token, headers: { 'content-type': 'application/schema+json' }, body: JSON.stringify(engineSchema()) }));
  assert.equal((await raw(base, { token, headers: { accept: 'application/schema+json' } })).text, schema, 'still the default schema');

  assert.equal((await raw(base, { method: 'PUT', token, headers: { 'content-type': 'application/schema+json' }, body: JSON.stringify(engineSchema()) })).status, 200);
  await crashing(/INSERT INTO config_history/, () => raw(base, { method: 'DELETE', token, headers: { 'content-type': 'application/schema+json' }, body: '{}' }));
  assert.match((await raw(base, { token, headers: { accept: 'application/schema+json' } })).text, /"engine"/, 'still the custom schema');
  assert.deepEqual(await versions(), ['schema fleet write']);
});
