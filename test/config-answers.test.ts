import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './helpers/server.js';
import { raw } from './helpers/http.js';
import { engineSchema, newProduct, signUp } from './helpers/fixtures.js';
import { configDevice, provision, type Holdings } from './helpers/device.js';
import { eventually } from './helpers/eventually.js';
import { schemaVersion } from '../src/domain/config/default-schema.js';
import type { ProductRecord } from '../src/repositories/products.repository.js';

/**
 * The configuration routes' answers are serialized by their response schemas
 * (src/http/routes/config.schemas.ts), which write only the fields they name: each answer here
 * is what the service behind it gives, field for field, or, for writes, exactly the fields of
 * their kind.
 */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const SCHEMA = 'application/schema+json';
let server: TestServer;
before(async () => { server = await startTestServer({ env: { DEVICE_CALL_TIMEOUT_SECONDS: '2' } }); });
after(async () => { await server.close(); });

/** A value as it crosses the wire with JSON.stringify: what an answer that dropped nothing is. */
const wire = (value: unknown): Json => JSON.parse(JSON.stringify(value)) as Json;
const keys = (o: Json) => Object.keys(o).sort();

async function world() {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const base = `${server.url}/v1/products/${product.id}/config`;
  const req = (path: string, init: Parameters<typeof raw>[1] = {}) => raw(`${base}${path}`, { token, ...init });
  const { config } = server.skyport.services;
  // The history's reads need only the product's id.
  const record = { id: product.id } as ProductRecord;
  /** The fleet's values and a device's configuration as the services give them now. */
  const fleetNow = async () => {
    const { schema } = await config.reader.schema(product.id);
    return wire({ configuration: config.reader.fleetView(schema, await config.reader.fleetValues(product.id, schema)) });
  };
  const deviceNow = async (id: string) => wire(await config.status.device(product.id, id));
  return { token, product, req, config, record, fleetNow, deviceNow };
}

test('reads: the fleet, a device, explain, rollout and the history answer what the services give', async () => {
  const { token, product, req, config, record, fleetNow, deviceNow } = await world();
  const put = await req('', { method: 'PUT', body: JSON.stringify(engineSchema()), headers: { 'content-type': SCHEMA } });
  assert.equal(put.status, 200, put.text);
  const who = await provision(server.url, token, product.id);
  const held: Holdings = new Map();
  // It refuses the engine module it is sent as it connects: its view has a refusal code, the
  // rollout a refused device; it takes a value of its own.
  const device = await configDevice(server.mqttUrl, who, held, (module) => (module === 'engine' ? -33 : 0));
  try {
    await eventually(async () => ((await req(`/${who.id}`)).json.rejected?.engine === -33 ? true : undefined));
    const took = await req(`/${who.id}`, { method: 'PUT', json: { geofence: { interval: 30 } } });
    assert.equal(took.status, 200, took.text);
    const view = await req(`/${who.id}`);
    assert.equal(view.status, 200, view.text);
    assert.deepEqual(view.json, await deviceNow(who.id));
    assert.ok(Object.keys(view.json.own).length > 0 && Object.keys(view.json.delivery).length > 0);
    assert.equal(view.json.delivery.engine.code, -33);

    const explain = await req(`/${who.id}/explain`);
    assert.equal(explain.status, 200, explain.text);
    assert.deepEqual(explain.json, wire(await config.status.explain(product.id, who.id)));
    assert.ok(explain.json.settings.some((s: Json) => s.source === 'device'));

    const rollout = await req('/rollout');
    assert.equal(rollout.status, 200, rollout.text);
    assert.deepEqual(rollout.json, wire(await config.status.rollout(product.id)));
    assert.equal(rollout.json.rejected, 1);

    const fleet = await req('');
    assert.equal(fleet.status, 200, fleet.text);
    assert.deepEqual(fleet.json, await fleetNow());

    const schemaText = await req('', { headers: { accept: SCHEMA } });
    assert.equal(schemaText.status, 200);
    assert.match(schemaText.headers.get('content-type') ?? '', /^application\/schema\+json/);
    assert.deepEqual(JSON.parse(schemaText.text), engineSchema(), 'the schema is sent as stored');
    assert.deepEqual(JSON.parse((await req(`/${who.id}`, { headers: { accept: SCHEMA } })).text), engineSchema());

    const history = await req('/history');
    assert.equal(history.status, 200, history.text);
    assert.deepEqual(history.json, wire(await config.history.list(record, { page: 1, perPage: 25 })));
    for (const h of history.json.history as Json[]) {
      const one = await req(`/history/${h.version}`);
      assert.deepEqual(one.json, wire(await config.history.get(record, h.version)));
      const diff = await req(`/history/${h.version}/diff`);
      assert.deepEqual(diff.json, wire(await config.history.diff(record, h.version)));
      assert.ok(diff.json.changes.length > 0);
    }
  } finally {
    await device.client.endAsync();
  }
});

test('writes: values, dry runs, schemas and rollbacks answer every field of their kind', async () => {
  const { token, product, req, config, fleetNow, deviceNow } = await world();

  // The fleet's values: written, then a dry run (a dry run changes nothing, so the service gives it again).
  const written = await req('', { method: 'PUT', json: { rgb: { type: 'off' } } });
  assert.equal(written.status, 200, written.text);
  assert.deepEqual(written.json, { ...(await fleetNow()), version: 1 });
  const body = { rgb: { type: 'tracker' } };
  const dry = await req('?dry_run=true', { method: 'PUT', json: body });
  assert.equal(dry.status, 200, dry.text);
  assert.deepEqual(dry.json, wire(await config.previews.fleet(product.id, body)));
  assert.deepEqual(keys(dry.json), ['configuration', 'devices', 'dry_run']);

  // A schema: a dry run, written, restored.
  const text = JSON.stringify(engineSchema());
  const schemaDry = await req('?dry_run=true', { method: 'PUT', body: text, headers: { 'content-type': SCHEMA } });
  assert.equal(schemaDry.status, 200, schemaDry.text);
  assert.deepEqual(schemaDry.json, wire(await config.previews.schema(product.id, text)));
  const schema = await req('', { method: 'PUT', body: text, headers: { 'content-type': SCHEMA } });
  assert.equal(schema.status, 200, schema.text);
  assert.deepEqual(schema.json, { ok: true, message: 'Schema saved', version: schemaVersion(engineSchema()), history_version: 2, kept_aside: [] });
  const restored = await req('', { method: 'DELETE', headers: { 'content-type': SCHEMA } });
  assert.equal(restored.status, 200, restored.text);
  assert.deepEqual(restored.json, { ok: true, message: 'Schema reverted to default', history_version: 3, kept_aside: [] });

  // A device's own values: taken by the connected device (200), then while it is offline (202).
  const who = await provision(server.url, token, product.id);
  const device = await configDevice(server.mqttUrl, who, new Map());
  const online = async () => (await raw(`${server.url}/v1/products/${product.id}/devices/${who.id}`, { token })).json.online as boolean;
  await eventually(async () => ((await online()) ? true : undefined));
  const own = { geofence: { interval: 12 } };
  const deviceDry = await req(`/${who.id}?dry_run=true`, { method: 'PUT', json: own });
  assert.equal(deviceDry.status, 200, deviceDry.text);
  assert.deepEqual(deviceDry.json, wire(await config.previews.device(product.id, who.id, own)));
  const took = await req(`/${who.id}`, { method: 'PUT', json: own });
  assert.equal(took.status, 200, took.text);
  assert.deepEqual(took.json, { ...(await deviceNow(who.id)), version: 4 });
  await device.client.endAsync();
  await eventually(async () => ((await online()) ? undefined : true));
  const held = await req(`/${who.id}`, { method: 'PUT', json: { geofence: { interval: 15 } } });
  assert.equal(held.status, 202, held.text);
  assert.ok(Object.keys(held.json.configuration.pending).length > 0);
  assert.deepEqual(held.json, { ...(await deviceNow(who.id)), version: 5 });

  // Rollbacks answer as the writes they repeat.
  const fleetBack = await req('/history/1/rollback', { method: 'POST' });
  assert.equal(fleetBack.status, 200, fleetBack.text);
  assert.deepEqual(fleetBack.json, { ...(await fleetNow()), version: 6 });
  const schemaBack = await req('/history/2/rollback', { method: 'POST' });
  assert.equal(schemaBack.status, 200, schemaBack.text);
  assert.deepEqual(schemaBack.json, { ok: true, message: 'Schema of version 2 restored', version: schemaVersion(engineSchema()), history_version: 7, kept_aside: [] });
  const deviceBack = await req('/history/4/rollback', { method: 'POST' });
  assert.equal(deviceBack.status, 202, deviceBack.text);
  assert.deepEqual(deviceBack.json, { ...(await deviceNow(who.id)), version: 8 });
});

test('new device identities: their ids and secrets as JSON, or as CSV', async () => {
  const { token, product } = await world();
  const url = `${server.url}/v1/products/${product.id}/device_identities`;
  const made = await raw(url, { method: 'POST', token, json: { quantity: 2 } });
  assert.equal(made.status, 201, made.text);
  assert.deepEqual(keys(made.json), ['devices', 'ok']);
  assert.equal(made.json.devices.length, 2);
  for (const d of made.json.devices as Json[]) {
    assert.deepEqual(keys(d), ['device_secret', 'id']);
    assert.match(d.id, /^[0-9a-f]{24}$/);
    assert.ok(d.device_secret.length > 0);
  }
  const csv = await raw(url, { method: 'POST', token, json: { quantity: 1 }, headers: { accept: 'text/csv' } });
  assert.equal(csv.status, 201, csv.text);
  assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/);
  assert.match(csv.text, /^device_id,device_secret\n[0-9a-f]{24},\S+\n$/);
});
