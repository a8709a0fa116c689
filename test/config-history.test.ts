import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import mqtt from 'mqtt';
import { startTestServer, type TestServer } from './helpers/server.js';
import { raw } from './helpers/http.js';
import { newProduct, signUp } from './helpers/fixtures.js';
import { provision, type Identity } from './helpers/device.js';
import { eventually } from './helpers/eventually.js';
import { defaultSchema } from '../src/domain/config/default-schema.js';

/**
 * Beyond the wire format: the history of a product's configuration (who changed what, when),
 * diffs, rollback, dry runs, the fleet's rollout progress, explain, and the values a schema
 * change sets aside.
 */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const SCHEMA = 'application/schema+json';
let server: TestServer;
before(async () => { server = await startTestServer({ env: { DEVICE_CALL_TIMEOUT_SECONDS: '2' } }); });
after(async () => { await server.close(); });

function engineSchema(): string {
  const s = defaultSchema() as Json;
  s.properties.engine = {
    $id: '#/properties/engine', type: 'object', title: 'Engine', description: '', default: {},
    properties: { idle: { type: 'integer', title: 'Idle', description: '', default: 1600, minimum: 0, maximum: 10000 } },
  };
  return JSON.stringify(s);
}

/** A plain mqtt.js device (docs/device-protocol.md, "Configuration") that takes every module, or refuses `refuse`. */
async function configDevice(who: Identity, refuse: string[] = []) {
  const c = await mqtt.connectAsync(server.mqttUrl, { clientId: who.id, username: who.id, password: who.secret, reconnectPeriod: 0 });
  const got: Array<{ module: string; value: Json }> = [];
  c.on('message', (topic, payload) => {
    if (!topic.endsWith('/cloud/config/set')) return;
    const m = JSON.parse(payload.toString()) as { id: string; module: string; value: Json };
    got.push(m);
    void c.publishAsync(`devices/${who.id}/config/ack`, JSON.stringify({ id: m.id, status: refuse.includes(m.module) ? -22 : 0 }));
  });
  await c.subscribeAsync(`devices/${who.id}/cloud/#`, { qos: 1 });
  await c.publishAsync(`devices/${who.id}/config/hello`, JSON.stringify({ modules: {} }), { qos: 1 });
  return { client: c, got };
}

async function world() {
  const { token, username } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const base = `${server.url}/v1/products/${product.id}/config`;
  const req = (path: string, init: Parameters<typeof raw>[1] = {}) => raw(`${base}${path}`, { token, ...init });
  return { token, username, product, base, req };
}

test('history: every values and schema change with who and when, diffs between versions, rollback as a new change', async () => {
  const { req, username } = await world();

  const v1 = await req('', { method: 'PUT', json: { rgb: { type: 'off' } } });
  assert.equal(v1.status, 200, v1.text);
  const v2 = await req('', { method: 'PUT', json: { rgb: { type: 'tracker' }, sleep: { mode: 'enable' } } });
  assert.equal(v2.status, 200, v2.text);
  const schema = await req('', { method: 'PUT', body: engineSchema(), headers: { 'content-type': SCHEMA } });
  assert.equal(schema.status, 200, schema.text);
  assert.equal(schema.json.history_version, 3);
  const reset = await req('', { method: 'PUT' });
  assert.equal(reset.status, 200);
  assert.deepEqual([v1.json.version, v2.json.version, reset.json.version], [1, 2, 4]);

  const list = await req('/history');
  assert.equal(list.status, 200, list.text);
  assert.deepEqual(list.json.history.map((h: Json) => [h.version, h.kind, h.action, h.device_id]), [
    [4, 'values', 'reset', null], [3, 'schema', 'write', null], [2, 'values', 'write', null], [1, 'values', 'write', null],
  ]);
  assert.equal(list.json.history[0].by.kind, 'user');
  assert.equal(typeof list.json.history[0].by.id, 'string');
  assert.equal(list.json.history[0].by.username, username, 'who, in words');
  assert.ok(!Number.isNaN(Date.parse(list.json.history[0].at)));
  assert.deepEqual(list.json.meta, { page: 1, per_page: 25, total: 4, total_pages: 1 });
  assert.deepEqual((await req('/history?kind=schema')).json.history.map((h: Json) => h.version), [3]);
  assert.deepEqual((await req('/history?per_page=1&page=2')).json.history.map((h: Json) => h.version), [3]);

  const one = await req('/history/2');
  assert.equal(one.json.by.username, username);
  assert.deepEqual(one.json.document, { rgb: { type: 'tracker' }, sleep: { mode: 'enable' } });
  const diff = await req('/history/2/diff');
  assert.equal(diff.status, 200, diff.text);
  assert.equal(diff.json.from, 1);
  assert.deepEqual(diff.json.changes, [
    { path: '/rgb/type', op: 'replace', from: 'off', to: 'tracker' },
    { path: '/sleep', op: 'add', to: { mode: 'enable' } },
  ]);
  assert.deepEqual((await req('/history/4/diff?against=1')).json.changes, [{ path: '/rgb', op: 'remove', from: { type: 'off' } }]);
  const schemaDiff = await req('/history/3/diff');
  assert.deepEqual(schemaDiff.json.changes.map((c: Json) => [c.path, c.op]), [['/properties/engine', 'add']], 'against the default schema');
  const mixed = await req('/history/3/diff?against=2');
  assert.equal(mixed.status, 400);
  assert.match(mixed.json.error_description, /different scopes/);

  const back = await req('/history/2/rollback', { method: 'POST' });
  assert.equal(back.status, 200, back.text);
  assert.equal(back.json.version, 5);
  const rolledBack = (await req('')).json.configuration as Json;
  assert.deepEqual([rolledBack.rgb.type, rolledBack.sleep.mode, rolledBack.sleep.exe_min], ['tracker', 'enable', 10]);
  const latest = (await req('/history?per_page=1')).json.history[0];
  assert.deepEqual([latest.version, latest.action, latest.rolled_back_from], [5, 'rollback', 2]);

  // Schema rollbacks: to the default (recorded as a reset), then to the custom schema again.
  const restore = await req('', { method: 'DELETE', headers: { 'content-type': SCHEMA }, body: '{}' });
  assert.equal(restore.status, 200, restore.text);
  const again = await req('/history/3/rollback', { method: 'POST' });
  assert.equal(again.status, 200, again.text);
  assert.equal(again.json.kept_aside.length, 0);
  const got = await req('', { headers: { accept: SCHEMA } });
  assert.ok('engine' in got.json.properties);
  const toDefault = await req(`/history/${restore.json.history_version}/rollback`, { method: 'POST' });
  assert.equal(toDefault.status, 200, toDefault.text);
  assert.equal((await req(`/history/${restore.json.history_version}/rollback`, { method: 'POST' })).status, 400, 'already the default');

  // Bad versions: unknown is 404, malformed 400; nothing changes.
  assert.equal((await req('/history/999')).status, 404);
  assert.equal((await req('/history/999/rollback', { method: 'POST' })).status, 404);
  assert.equal((await req('/history/abc')).status, 400);
  assert.equal((await req('/history/0/diff')).status, 400);
  assert.equal((await req('/history?kind=everything')).status, 400);
});

test('dry run: a write is checked (sizes too) and previewed with the devices it would reach, and nothing is stored', async () => {
  const { req, token, product } = await world();
  const [a, b] = await Promise.all([provision(server.url, token, product.id), provision(server.url, token, product.id)]);
  const dev = await configDevice(a);
  try {
    await eventually(async () => ((await req('/rollout')).json.in_sync === 1 ? true : undefined));
    const preview = await req('?dry_run=true', { method: 'PUT', json: { rgb: { type: 'off' } } });
    assert.equal(preview.status, 200, preview.text);
    assert.equal(preview.json.dry_run, true);
    assert.equal(preview.json.configuration.rgb.type, 'off');
    assert.deepEqual(preview.json.devices, { changed: 2, online: 1, modules: { rgb: 2 } });
    assert.equal((await req('')).json.configuration.rgb.type, 'particle', 'nothing stored');
    assert.equal((await req('/history')).json.meta.total, 0, 'nothing recorded');
    assert.equal(dev.got.filter((g) => g.module === 'rgb').length, 1, 'nothing sent beyond the first sync');

    const bad = await req('?dry_run=true', { method: 'PUT', json: { rgb: { type: 'disco' } } });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.violations[0].path, '/rgb/type');
    const big = await req('?dry_run=true', { method: 'PUT', body: engineSchema().replace('"Idle"', JSON.stringify('x'.repeat(2000))), headers: { 'content-type': SCHEMA } });
    assert.equal(big.status, 200, 'a long title is the schema, not a device message');
    const badSchema = await req('?dry_run=true', { method: 'PUT', body: '{"type":"object"}', headers: { 'content-type': SCHEMA } });
    assert.equal(badSchema.status, 422);
    assert.equal((await req('', { headers: { accept: SCHEMA } })).json.properties.engine, undefined, 'the schema dry run stored nothing');

    const devicePreview = await req(`/${b.id}?dry_run=true`, { method: 'PUT', json: { geofence: { interval: 30 } } });
    assert.equal(devicePreview.status, 200, devicePreview.text);
    assert.deepEqual(devicePreview.json.devices, { changed: 1, online: 0, modules: { geofence: 1 } });
    assert.equal(devicePreview.json.configuration.geofence.interval, 30);
    assert.equal((await req(`/${b.id}`)).json.configuration.pending.geofence.interval, 0, 'nothing stored');
    const wrongScope = await req(`/${b.id}?dry_run=true`, { method: 'PUT', json: { rgb: { type: 'off' } } });
    assert.equal(wrongScope.status, 400, 'a regular device takes only device-level-only modules, dry run or not');
  } finally {
    await dev.client.endAsync();
  }
});

test('rollout progress counts devices and modules in sync, pending and refused; explain gives the source of every setting', async () => {
  const { req, token, product } = await world();
  const [a, b, c] = (await Promise.all([0, 1, 2].map(() => provision(server.url, token, product.id)))) as [Identity, Identity, Identity];
  const devA = await configDevice(a);
  const devB = await configDevice(b, ['rgb']);
  try {
    await eventually(async () => {
      const r = (await req('/rollout')).json;
      return r.in_sync === 1 && r.rejected === 1 ? r : undefined;
    });
    const rollout = (await req('/rollout')).json;
    assert.deepEqual({ ...rollout, modules: undefined }, { devices: 3, in_sync: 1, pending: 1, pending_online: 0, rejected: 1, modules: undefined });
    assert.deepEqual(rollout.modules.rgb, { in_sync: 1, pending: 1, rejected: 1 });
    assert.deepEqual(rollout.modules.location, { in_sync: 2, pending: 1, rejected: 0 });

    const fleetWrite = await req('', { method: 'PUT', json: { location: { radius: 25, interval_min: 900, interval_max: 3600, min_publish: false, lock_trigger: true } } });
    assert.equal(fleetWrite.status, 200, fleetWrite.text);
    const toDev = await raw(`${server.url}/v1/products/${product.id}/devices/${c.id}`, { method: 'PUT', token, json: { development: true } });
    assert.equal(toDev.status, 200, toDev.text);
    const own = await req(`/${c.id}`, { method: 'PUT', json: { sleep: { mode: 'enable' }, geofence: { interval: 10 } } });
    assert.equal(own.status, 202, own.text);
    const explain = await req(`/${c.id}/explain`);
    assert.equal(explain.status, 200, explain.text);
    const at = (path: string) => explain.json.settings.find((s: Json) => s.path === path);
    assert.deepEqual(at('/sleep/mode'), { path: '/sleep/mode', value: 'enable', source: 'device' });
    assert.deepEqual(at('/sleep/exe_min'), { path: '/sleep/exe_min', value: 10, source: 'default' }, "the device's module wins whole; keys it leaves out take defaults");
    assert.equal(at('/location/radius').value, 25);
    assert.equal(at('/location/radius').source, 'fleet', 'modules the device does not set follow the fleet');
    assert.equal(at('/geofence/interval').source, 'device');
    assert.equal(at('/rgb/type').source, 'default');
    assert.equal(explain.json.modules.sleep, 'device');
    assert.equal(explain.json.device_values_win, true);
    const fleetDevice = await req(`/${a.id}/explain`);
    assert.deepEqual(fleetDevice.json.settings.find((s: Json) => s.path === '/location/radius'), { path: '/location/radius', value: 25, source: 'fleet' });
    assert.equal((await req('/ffffffffffffffffffffffff/explain')).status, 404, 'not a device of this product');
  } finally {
    await Promise.all([devA.client.endAsync(), devB.client.endAsync()]);
  }
});

test('values of a module a new schema drops are kept aside, said so plainly, and come back with the module', async () => {
  const { req } = await world();
  assert.equal((await req('', { method: 'PUT', body: engineSchema(), headers: { 'content-type': SCHEMA } })).status, 200);
  assert.equal((await req('', { method: 'PUT', json: { engine: { idle: 900 } } })).status, 200);
  const restore = await req('', { method: 'DELETE', headers: { 'content-type': SCHEMA }, body: '{}' });
  assert.equal(restore.status, 200);
  assert.deepEqual(restore.json.kept_aside, ['engine']);
  assert.match(restore.json.message, /^Schema reverted to default\. Stored values of engine are kept aside/);
  assert.equal((await req('')).json.configuration.engine, undefined, 'not shown while the schema lacks it');
  const fleetWrite = await req('', { method: 'PUT', json: { rgb: { type: 'off' } } });
  assert.equal(fleetWrite.status, 200, 'harmless: writes go on');
  const back = await req('', { method: 'PUT', body: engineSchema(), headers: { 'content-type': SCHEMA } });
  assert.deepEqual(back.json.kept_aside, []);
  assert.equal(back.json.message, 'Schema saved');
  assert.equal((await req('')).json.configuration.engine.idle, 900, 'the kept values are back, through the fleet write in between');
});
