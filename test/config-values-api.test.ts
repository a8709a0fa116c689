import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './helpers/server.js';
import { raw } from './helpers/http.js';
import { newProduct, rejection, signUp } from './helpers/fixtures.js';
import { provision } from './helpers/device.js';
import { defaultSchema } from '../src/domain/config/default-schema.js';
import { schemaDefaults } from '../src/domain/config/values.js';

/**
 * Configuration values over the API with particle-api-js (docs/particle-compatibility.md#writing-values),
 * and the development-device rules (#development-devices) one transition at a time, read through the device's effective configuration.
 */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
let server: TestServer;
before(async () => { server = await startTestServer(); });
after(async () => { await server.close(); });
const DEFAULTS = schemaDefaults(defaultSchema(), { deviceLevelOnly: true }) as Json;

async function setup() {
  const { api, token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const device = await provision(server.url, token, product.id);
  const effective = async () => (await api.getProductDeviceConfiguration({ product: product.id, deviceId: device.id, auth: token })).body as Json;
  const setDev = (development: boolean) => raw(`${server.url}/v1/products/${product.id}/devices/${device.id}`, { method: 'PUT', token, json: { development } });
  return { api, token, product, device, effective, setDev };
}

test('fleet values: read, replace whole, refuse with pointers, reset with an empty body', async () => {
  const { api, token, product } = await setup();
  const read = await api.getProductConfiguration({ product: product.id, auth: token });
  assert.equal('geofence' in read.body.configuration, false, 'the fleet never shows device-level-only modules');
  assert.deepEqual(read.body.configuration.rgb, { type: 'particle' });

  const set = await api.setProductConfiguration({ product: product.id, auth: token, config: { rgb: { type: 'off' }, sleep: { mode: 'enable', exe_min: 20, conn_max: 120 } } });
  assert.equal(set.statusCode, 200);
  assert.deepEqual(set.body.configuration.rgb, { type: 'off' });
  // Whole-object writes: a second write without sleep takes sleep back to its defaults.
  await api.setProductConfiguration({ product: product.id, auth: token, config: { rgb: { type: 'tracker' } } });
  const after = (await api.getProductConfiguration({ product: product.id, auth: token })).body.configuration;
  assert.deepEqual(after.sleep, DEFAULTS.sleep);
  assert.deepEqual(after.rgb, { type: 'tracker' });

  const bad = await rejection(api.setProductConfiguration({ product: product.id, auth: token, config: { rgb: { type: 'disco' }, sleep: { exe_min: 'soon' }, geofence: {}, warp: {} } }));
  assert.equal(bad.statusCode, 400);
  assert.equal(bad.body.error, 'invalid_configuration');
  assert.deepEqual((bad.body.violations as Array<{ path: string }>).map((v) => v.path).sort(), ['/geofence', '/rgb/type', '/sleep/exe_min', '/warp']);
  assert.deepEqual((await api.getProductConfiguration({ product: product.id, auth: token })).body.configuration.rgb, { type: 'tracker' }, 'a refused write changes nothing');
  const malformed = await raw(`${server.url}/v1/products/${product.id}/config`, { method: 'PUT', token, headers: { 'content-type': 'application/json' }, body: '{"rgb":' });
  assert.equal(malformed.status, 400);

  const reset = await raw(`${server.url}/v1/products/${product.id}/config`, { method: 'PUT', token, headers: { 'content-type': 'application/json' }, body: '' });
  assert.equal(reset.status, 200, reset.text);
  assert.deepEqual(reset.json.configuration.rgb, DEFAULTS.rgb);
});

test('the development-device rules, transition by transition', async () => {
  const { api, token, product, device, effective, setDev } = await setup();
  const put = (config: Json) => raw(`${server.url}/v1/products/${product.id}/config/${device.id}`, { method: 'PUT', token, json: config });
  const rgb = async () => (await effective()).configuration.pending.rgb.type;

  // Added to the product: the device gets the fleet settings.
  await api.setProductConfiguration({ product: product.id, auth: token, config: { rgb: { type: 'off' } } });
  assert.equal(await rgb(), 'off');
  assert.equal((await effective()).sources.rgb, 'fleet');
  // Regular device: only device-level-only modules per device.
  const refused = await put({ rgb: { type: 'tracker' } });
  assert.equal(refused.status, 400);
  assert.match(refused.json.violations[0].message, /development device/);
  const zone = await api.setProductDeviceConfiguration({ product: product.id, deviceId: device.id, auth: token, config: { geofence: { interval: 30, zone1: { enable: true, lat: 47.5, lon: 8.5, radius: 100 } } } });
  assert.equal(zone.statusCode, 202, 'held for the offline device');
  assert.equal(zone.body.configuration.pending.geofence.zone1.lat, 47.5);
  assert.equal(zone.body.configuration.pending.geofence.zone2.enable, false);
  // Fleet change reaches the regular device.
  await api.setProductConfiguration({ product: product.id, auth: token, config: { rgb: { type: 'particle' } } });
  assert.equal(await rgb(), 'particle');
  // Development device: every module, and its own values win.
  assert.equal((await setDev(true)).status, 200);
  assert.equal((await put({ rgb: { type: 'tracker' }, geofence: { interval: 30 } })).status, 202);
  assert.equal(await rgb(), 'tracker');
  await api.setProductConfiguration({ product: product.id, auth: token, config: { rgb: { type: 'off' } } });
  assert.equal(await rgb(), 'tracker', 'development values win over a fleet change');
  // Back to regular: keeps its development values until the next fleet change...
  assert.equal((await setDev(false)).status, 200);
  assert.equal(await rgb(), 'tracker');
  // ...then follows the fleet again.
  await api.setProductConfiguration({ product: product.id, auth: token, config: { rgb: { type: 'off' } } });
  assert.equal(await rgb(), 'off');
  // Device-level-only modules stay per device throughout; an empty body resets to inheritance.
  assert.equal((await effective()).configuration.pending.geofence.interval, 30);
  const reset = await raw(`${server.url}/v1/products/${product.id}/config/${device.id}`, { method: 'PUT', token, headers: { 'content-type': 'application/json' }, body: '' });
  assert.equal(reset.status, 202);
  assert.deepEqual(reset.json.configuration.pending.geofence, DEFAULTS.geofence);
});

test('a device write must fit the device: the refusal names module, size and limit', async () => {
  const { token, product, device, setDev } = await setup();
  await setDev(true);
  const s = defaultSchema() as Json;
  s.properties.notes = { type: 'object', title: 'Notes', description: '', default: {}, properties: { text: { type: 'string', title: 'Text', description: '', default: '' } } };
  assert.equal((await raw(`${server.url}/v1/products/${product.id}/config`, { method: 'PUT', token, headers: { 'content-type': 'application/schema+json' }, body: JSON.stringify(s) })).status, 200);
  const big = await raw(`${server.url}/v1/products/${product.id}/config/${device.id}`, { method: 'PUT', token, json: { notes: { text: 'x'.repeat(700) } } });
  assert.equal(big.status, 400, big.text);
  assert.match(big.json.violations[0].message, /Module notes is 7\d\d bytes in one device message; the limit is 622/);
  assert.equal((await raw(`${server.url}/v1/products/${product.id}/config/${device.id}`, { method: 'PUT', token, json: { notes: { text: 'short' } } })).status, 202);
});
