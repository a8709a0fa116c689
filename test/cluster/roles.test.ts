import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import mqtt from 'mqtt';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import type { TestServer } from '../helpers/server.js';
import { raw } from '../helpers/http.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { fakeDevice, provision } from '../helpers/device.js';
import { freePort } from '../helpers/ports.js';

/**
 * Roles (docs/operations.md, "Roles"): an `api` node serves the REST API and event streams and
 * opens no MQTT port; a `gateway` node holds device connections and serves over HTTP only
 * GET /healthz and GET /metrics, answering anything else with a JSON 421.
 */
let cluster: TestCluster;
let api: TestServer;
let gateway: TestServer;
let apiMqttPort: number;
before(async () => {
  cluster = await startCluster([]);
  apiMqttPort = await freePort();
  // The API node is given an MQTT port, to show that it does not open it.
  api = await cluster.add('api', { env: { MQTT_PORT: String(apiMqttPort) } });
  gateway = await cluster.add('gateway', { env: { METRICS: 'open' } });
});
after(async () => { await cluster.close(); });

test('an API node opens no MQTT port and holds no device; it serves the API and reaches devices held by a gateway node', async () => {
  assert.throws(() => api.mqttUrl, /opens no MQTT port/);
  await assert.rejects(mqtt.connectAsync(`mqtt://127.0.0.1:${apiMqttPort}`, { reconnectPeriod: 0, connectTimeout: 2000 }), /ECONNREFUSED/);

  const { token } = await signUp(api.url);
  const product = await newProduct(api.url, token, 'Roles');
  const who = await provision(api.url, token, product.id);
  const device = await fakeDevice(gateway.mqttUrl, who, { functions: { twice: (arg) => Number(arg) * 2 } });
  try {
    const call = await raw(`${api.url}/v1/devices/${who.id}/twice`, { method: 'POST', token, json: { arg: '4' } });
    assert.equal(call.status, 200, call.text);
    assert.equal(call.json.return_value, 8);
    assert.equal(api.skyport.gateway.size, 0);
    assert.equal(gateway.skyport.gateway.size, 1);
  } finally {
    await device.close();
  }
  const health = await raw(`${api.url}/healthz`);
  assert.equal(health.status, 200, health.text);
  assert.deepEqual(health.json, { ok: true, storage: 'postgres', role: 'api', node_id: 'node-1', checks: { storage: 'up', nats: 'up' } });
});

test('a gateway node serves GET /healthz and GET /metrics over HTTP, and answers every other route with a JSON 421 that says so', async () => {
  const health = await raw(`${gateway.url}/healthz`);
  assert.equal(health.status, 200, health.text);
  assert.deepEqual(health.json, { ok: true, storage: 'postgres', role: 'gateway', node_id: 'node-2', checks: { storage: 'up', nats: 'up' } });
  const metrics = await raw(`${gateway.url}/metrics`);
  assert.equal(metrics.status, 200, metrics.text);
  assert.match(metrics.text, /^skyport_devices_connected \d+$/m);

  const elsewhere: Array<[string, string, Record<string, unknown>?]> = [
    ['GET', '/v1/devices'],
    ['POST', '/oauth/token', { form: { grant_type: 'password', username: 'a@example.com', password: 'x' } }],
    ['POST', '/v1/users', { json: { username: 'a@example.com', password: 'correct horse' } }],
    ['GET', '/v1/openapi.json'],
    ['GET', '/v1/products/1/events'],
    ['DELETE', '/v1/user'],
    ['GET', '/'],
    ['GET', '/no/such/route'],
  ];
  for (const [method, path, init] of elsewhere) {
    const r = await raw(`${gateway.url}${path}`, { method, ...init });
    assert.equal(r.status, 421, `${method} ${path}: ${r.text}`);
    assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(r.json.ok, false);
    assert.equal(r.json.error, 'misdirected_request');
    assert.match(r.json.error_description, /--role gateway.*GET \/healthz and GET \/metrics.*role all or api/);
  }
});
