import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, STORE, type TestServer } from './helpers/server.js';
import { basic, raw } from './helpers/http.js';
import { newProduct, PASSWORD, signUp } from './helpers/fixtures.js';
import { configDevice, fakeDevice, provision, type Holdings } from './helpers/device.js';
import { eventually } from './helpers/eventually.js';
import { sample } from './helpers/metrics.js';

/** GET /metrics (docs/operations.md, "Metrics"): off by default, open, or behind a bearer token. */
const TOKEN = 'a-metrics-token-of-at-least-32-characters';
let open: TestServer;
let guarded: TestServer;
let off: TestServer;
before(async () => {
  [open, guarded, off] = await Promise.all([
    startTestServer({ env: { METRICS: 'open' } }),
    startTestServer({ env: { METRICS: 'token', METRICS_TOKEN: TOKEN } }),
    startTestServer(),
  ]);
});
after(async () => {
  await Promise.all([open.close(), guarded.close(), off.close()]);
});

test('open: HTTP requests by route pattern and status, connected devices, the event-loop lag', async () => {
  const { token } = await signUp(open.url);
  const product = await newProduct(open.url, token);
  const who = await provision(open.url, token, product.id);
  await raw(`${open.url}/v1/devices/${who.id}`, { token });
  await raw(`${open.url}/v1/devices/${'f'.repeat(24)}`, { token });
  const device = await fakeDevice(open.mqttUrl, who);
  try {
    const r = await raw(`${open.url}/metrics`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^text\/plain/);
    // The route's pattern, never the device id of the path.
    assert.equal(sample(r.text, 'skyport_http_requests_total', 'route="/v1/devices/:deviceId",status="200"'), 1);
    assert.equal(sample(r.text, 'skyport_http_requests_total', 'route="/v1/devices/:deviceId",status="403"'), 1);
    assert.ok(!r.text.includes(who.id), 'no device id in a label');
    assert.match(r.text, /^skyport_devices_connected 1$/m);
    assert.equal(sample(r.text, 'skyport_device_connects_total', 'outcome="accepted"'), 1);
    assert.match(r.text, /^nodejs_eventloop_lag_seconds \d/m);
    assert.match(r.text, /skyport_http_request_duration_seconds_bucket\{le="0.1",method="GET",route="\/v1\/devices\/:deviceId"\}/);
    // signUp logged in with the password grant.
    assert.ok(sample(r.text, 'skyport_tokens_issued_total', 'grant="password"') >= 1, 'tokens issued by grant');
  } finally {
    await device.close();
  }
  // A refused CONNECT: counted with why.
  await assert.rejects(fakeDevice(open.mqttUrl, { id: who.id, secret: 'not-its-secret' }));
  assert.equal(sample((await raw(`${open.url}/metrics`)).text, 'skyport_device_connects_total', 'outcome="credentials"'), 1);
  // A call to a device that is not connected: counted with its outcome and time.
  const offline = await raw(`${open.url}/v1/devices/${who.id}/led`, { method: 'POST', token, json: { arg: 'on' } });
  const after = (await raw(`${open.url}/metrics`)).text;
  const outcome = offline.json.error as string;
  assert.equal(sample(after, 'skyport_device_commands_seconds_count', `kind="call",outcome="${outcome}"`), 1, `${outcome} in\n${after.split('\n').filter((l) => l.includes('device_commands')).join('\n')}`);
});

test('the connections to the store: on PostgreSQL the pool in use, idle, its size and what waits for it; none on the embedded store', async () => {
  const text = (await raw(`${open.url}/metrics`)).text;
  if (STORE === 'postgres') {
    // The test servers' pool has four connections (test/helpers/server.ts), the smallest DATABASE_POOL_SIZE takes.
    assert.equal(sample(text, 'skyport_storage_connections_max'), 4);
    assert.equal(sample(text, 'skyport_storage_waiting'), 0);
    const inUse = sample(text, 'skyport_storage_connections', 'state="in_use"');
    const idle = sample(text, 'skyport_storage_connections', 'state="idle"');
    // The scrape itself may hold one (the webhook queue's gauges read the store), and idle ones close after 10 s.
    assert.ok(inUse >= 0 && idle >= 0 && inUse + idle <= 4, `in use ${inUse}, idle ${idle}`);
  } else {
    assert.ok(!text.includes('skyport_storage_connections'), 'no pool to report');
    assert.ok(!text.includes('skyport_storage_waiting'));
  }
});

test('token: no token 400, a wrong one 401, the right one 200; off: no such route', async () => {
  const none = await raw(`${guarded.url}/metrics`);
  assert.equal(none.status, 400);
  const wrong = await raw(`${guarded.url}/metrics`, { token: 'x'.repeat(40) });
  assert.equal(wrong.status, 401);
  assert.equal(wrong.json.error, 'invalid_token');
  const right = await raw(`${guarded.url}/metrics`, { token: TOKEN });
  assert.equal(right.status, 200);
  assert.match(right.text, /skyport_devices_connected/);
  assert.equal((await raw(`${off.url}/metrics`)).status, 404);
});

test('a refresh of a token counts as issued, by its grant', async () => {
  const { username } = await signUp(open.url);
  const consoleClient = basic('skyport-console', 'skyport-console');
  const first = await raw(`${open.url}/oauth/token`, { method: 'POST', headers: { authorization: consoleClient }, form: { grant_type: 'password', username, password: PASSWORD } });
  const before = sample((await raw(`${open.url}/metrics`)).text, 'skyport_tokens_issued_total', 'grant="refresh_token"') || 0;
  const next = await raw(`${open.url}/oauth/token`, { method: 'POST', headers: { authorization: consoleClient }, form: { grant_type: 'refresh_token', refresh_token: first.json.refresh_token } });
  assert.equal(next.status, 200, next.text);
  assert.equal(sample((await raw(`${open.url}/metrics`)).text, 'skyport_tokens_issued_total', 'grant="refresh_token"'), before + 1);
});

test('configuration deliveries by outcome, the deliveries in progress, and bus round trips (none on one node)', async () => {
  const { token } = await signUp(open.url);
  const product = await newProduct(open.url, token);
  const who = await provision(open.url, token, product.id);
  const count = async (outcome: string) => sample((await raw(`${open.url}/metrics`)).text, 'skyport_config_deliveries_total', `outcome="${outcome}"`) || 0;
  const [acknowledged, refused, offline] = [await count('acknowledged'), await count('refused'), await count('pending_offline')];
  const held: Holdings = new Map();
  const device = await configDevice(open.mqttUrl, who, held, (module) => (module === 'geofence' && held.has('geofence') ? -33 : 0));
  try {
    await eventually(() => (held.size === 9 ? true : undefined));
    await eventually(async () => ((await count('acknowledged')) === acknowledged + 9 ? true : undefined));
    const put = await raw(`${open.url}/v1/products/${product.id}/config/${who.id}`, { method: 'PUT', token, json: { geofence: { interval: 7 } } });
    assert.equal(put.status, 400, put.text);
    assert.equal(await count('refused'), refused + 1);
  } finally {
    await device.client.endAsync();
  }
  await eventually(async () => ((await raw(`${open.url}/v1/devices/${who.id}`, { token })).json.online === false ? true : undefined));
  const put = await raw(`${open.url}/v1/products/${product.id}/config/${who.id}`, { method: 'PUT', token, json: { geofence: { interval: 8 } } });
  assert.equal(put.status, 202, put.text);
  assert.equal(await count('pending_offline'), offline + 1);
  const text = (await raw(`${open.url}/metrics`)).text;
  assert.match(text, /^skyport_config_deliveries_in_progress 0$/m);
  // One node reaches its devices without a bus round trip: the histogram has no samples.
  assert.match(text, /^# TYPE skyport_bus_requests_seconds histogram$/m);
  assert.ok(!text.includes('skyport_bus_requests_seconds_count{'), 'no bus round trips on one node');
});
