import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './helpers/server.js';
import { raw } from './helpers/http.js';
import { engineSchema, newProduct, signUp } from './helpers/fixtures.js';
import { provision } from './helpers/device.js';
import { defaultSchema } from '../src/domain/config/default-schema.js';

/** The product configuration schema over the API (docs/particle-compatibility.md#schema-or-values, #restoring-the-default-schema): read, replace whole, restore. */
const SCHEMA = 'application/schema+json';
let server: TestServer;
before(async () => { server = await startTestServer(); });
after(async () => { await server.close(); });

test('read with particle-api-js, replace with a custom schema, restore the default', async () => {
  const { api, token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const device = await provision(server.url, token, product.id);

  const got = await api.getProductConfigurationSchema({ product: product.id, auth: token });
  assert.equal(got.statusCode, 200);
  assert.deepEqual(got.body, defaultSchema());
  const forDevice = await api.getProductDeviceConfigurationSchema({ product: product.id, deviceId: device.id, auth: token });
  assert.deepEqual(forDevice.body, defaultSchema());

  const custom = JSON.stringify(engineSchema());
  const put = await raw(`${server.url}/v1/products/${product.id}/config`, { method: 'PUT', token, headers: { 'content-type': SCHEMA }, body: custom });
  assert.equal(put.status, 200, put.text);
  assert.equal(put.json.version, 19);
  const after = await raw(`${server.url}/v1/products/${product.id}/config`, { token, headers: { accept: SCHEMA } });
  assert.match(after.headers.get('content-type') ?? '', /^application\/schema\+json/);
  assert.equal(after.text, custom, 'stored as sent: key order is display order');
  assert.deepEqual(Object.keys(after.json.properties).at(-1), 'engine');
  assert.deepEqual((await api.getProductDeviceConfigurationSchema({ product: product.id, deviceId: device.id, auth: token })).body, JSON.parse(custom));

  const restore = (headers: Record<string, string>) => raw(`${server.url}/v1/products/${product.id}/config`, { method: 'DELETE', token, headers, body: '{}' });
  const restored = await restore({ 'content-type': SCHEMA });
  assert.equal(restored.status, 200, restored.text);
  assert.deepEqual((await api.getProductConfigurationSchema({ product: product.id, auth: token })).body, defaultSchema());
  const again = await restore({ 'content-type': SCHEMA });
  assert.equal(again.status, 404);
  assert.match(again.json.error_description, /already the default/);
  assert.equal((await restore({ 'content-type': 'application/json' })).status, 415);
});

test('refused schemas answer 422 Invalid Schema with violations, and change nothing', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const url = `${server.url}/v1/products/${product.id}/config`;
  const put = (body: string, type = SCHEMA) => raw(url, { method: 'PUT', token, headers: { 'content-type': type }, body });
  assert.equal((await put(JSON.stringify(engineSchema()))).status, 200);
  const before = (await raw(url, { token, headers: { accept: SCHEMA } })).text;

  const dropped = engineSchema();
  delete dropped.properties.geofence;
  const withPattern = engineSchema();
  withPattern.properties.engine.properties.idle.pattern = '^1';
  const remote = engineSchema();
  remote.properties.engine.properties.fastpub = { $ref: 'https://example.com/schema.json' };
  const open = engineSchema();
  open.additionalProperties = true;
  for (const [body, pointer] of [
    [JSON.stringify(dropped), '/properties/geofence'],
    [JSON.stringify(withPattern), '/properties/engine/properties/idle/pattern'],
    [JSON.stringify(remote), '/properties/engine/properties/fastpub/$ref'],
    [JSON.stringify(open), '/additionalProperties'],
    ['{"not json', ''],
  ] as const) {
    const r = await put(body);
    assert.equal(r.status, 422, r.text);
    assert.equal(r.json.message, 'Invalid Schema');
    assert.equal(typeof r.json.description, 'string');
    assert.ok(r.json.violations.some((v: { path: string }) => v.path === pointer), `${pointer} in ${JSON.stringify(r.json.violations)}`);
  }
  assert.equal((await raw(url, { token, headers: { accept: SCHEMA } })).text, before, 'unchanged');

  // A schema sent as application/json is taken as values, and refused as such.
  assert.equal((await put(JSON.stringify(engineSchema()), 'application/json')).status, 400);
  assert.equal((await put('x'.repeat(2 * 1024 * 1024))).status, 413);
});
