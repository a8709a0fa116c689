import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import mqtt from 'mqtt';
import { createDevice, ConnectionRefusedError, CredentialsRefusedError, backoffDelay, type CloudWarning, type Device, type DeviceOptions } from '../src/sdk/index.js';
import { startTestServer, email, type TestServer } from './helpers/server.js';
import { basic, raw } from './helpers/http.js';
import { PASSWORD, newProduct, signUp } from './helpers/fixtures.js';
import { provision } from './helpers/device.js';
import { eventually } from './helpers/eventually.js';
import { freePort } from './helpers/ports.js';
import { answerCall, answerGet } from '../src/sdk/replies.js';

/** The device SDK against a real gateway: calls, reads, events, signal, claim, reconnects. */
let server: TestServer;
let token: string;
let productId: number;
before(async () => {
  // WebSocket too; a short lock-out so the "banned" test does not wait half an hour.
  server = await startTestServer({ env: { MQTT_WS_PORT: '0', LOGIN_MAX_FAILURES: '2', LOGIN_LOCKOUT_SECONDS: '1' } });
  ({ token } = await signUp(server.url));
  productId = (await newProduct(server.url, token)).id;
});
after(async () => { await server.close(); });

async function sdkDevice(setup: (d: Device) => void = () => undefined, options: Partial<DeviceOptions> = {}): Promise<Device> {
  const who = await provision(server.url, token, productId);
  const d = createDevice({ url: server.mqttUrl, id: who.id, secret: who.secret, reconnect: { minMs: 50, maxMs: 200 }, ...options });
  setup(d);
  await d.connect();
  return d;
}

test('backoff: full jitter under an exponential ceiling, capped', () => {
  assert.equal(backoffDelay(0, { minMs: 1000, maxMs: 60_000 }, () => 0.999), 999);
  assert.equal(backoffDelay(3, { minMs: 1000, maxMs: 60_000 }, () => 0.5), 4000);
  assert.equal(backoffDelay(20, { minMs: 1000, maxMs: 60_000 }, () => 0.5), 30_000);
  assert.equal(backoffDelay(5, {}, () => 0), 0);
});

test('replies: unknown names, throwing handlers and values the cloud would refuse become error replies', async () => {
  assert.deepEqual(await answerCall(undefined, { id: 'a', name: 'nope', arg: 'x' }), { id: 'a', error: 'no function nope' });
  assert.deepEqual(await answerCall((arg) => arg.length, { id: 'b', name: 'len', arg: 'four' }), { id: 'b', return_value: 4 });
  assert.deepEqual(await answerCall(async () => { throw new Error('jammed'); }, { id: 'c', name: 'f', arg: '' }), { id: 'c', error: 'jammed' });
  assert.match((await answerCall(() => 2 ** 31, { id: 'd', name: 'f', arg: '' }) as { error: string }).error, /32-bit/);
  assert.match((await answerCall(() => 1.5, { id: 'e', name: 'f', arg: '' }) as { error: string }).error, /32-bit/);
  assert.deepEqual(await answerGet(undefined, { id: 'f', name: 'nope' }), { id: 'f', error: 'no variable nope' });
  assert.deepEqual(await answerGet({ type: 'bool', get: async () => true }, { id: 'g', name: 'v' }), { id: 'g', result: true });
  assert.deepEqual(await answerGet({ type: 'string', get: () => 'x' }, { id: 'h', name: 'v' }), { id: 'h', result: 'x' });
  assert.match((await answerGet({ type: 'int32', get: () => 2.5 }, { id: 'i', name: 'v' }) as { error: string }).error, /32-bit/);
  assert.match((await answerGet({ type: 'double', get: () => Number.NaN }, { id: 'j', name: 'v' }) as { error: string }).error, /finite/);
  assert.match((await answerGet({ type: 'string', get: () => 3 }, { id: 'k', name: 'v' }) as { error: string }).error, /string/);
});

test('functions, variables and signal through the REST API; registering later re-describes the device', async () => {
  const signals: boolean[] = [];
  const d = await sdkDevice((dev) => dev
    .function('led', (arg) => (arg === 'on' ? 1 : 0))
    .function('boom', () => { throw new Error('fuse blown'); })
    .variable('temp', 'double', () => 21.25)
    .onSignal((on) => signals.push(on)));
  try {
    const base = `${server.url}/v1/products/${productId}/devices/${d.id}`;
    await eventually(async () => ((await raw(base, { token })).json.functions?.length === 2 ? true : undefined));
    assert.equal((await raw(`${base}/led`, { method: 'POST', token, json: { args: 'on' } })).json.return_value, 1);
    assert.equal((await raw(`${base}/temp`, { token })).json.result, 21.25);
    // The same through the device routes (POST /v1/devices/:id/:fn with {arg}, GET /v1/devices/:id/:var).
    const call = await raw(`${server.url}/v1/devices/${d.id}/led`, { method: 'POST', token, json: { arg: 'off' } });
    assert.equal(call.status, 200, call.text);
    assert.deepEqual({ connected: call.json.connected, return_value: call.json.return_value }, { connected: true, return_value: 0 });
    const read = await raw(`${server.url}/v1/devices/${d.id}/temp`, { token });
    assert.equal(read.status, 200, read.text);
    assert.equal(read.json.result, 21.25);
    const boom = await raw(`${base}/boom`, { method: 'POST', token, json: { arg: '' } });
    assert.equal(boom.status, 400);
    assert.equal(boom.json.error, 'device_error');
    assert.match(boom.json.error_description, /fuse blown/);
    await raw(base, { method: 'PUT', token, json: { signal: '1' } });
    await eventually(() => (signals.length === 1 ? true : undefined));

    d.function('later', () => 5);
    await eventually(async () => ((await raw(base, { token })).json.functions?.includes('later') ? true : undefined));
    assert.equal((await raw(`${base}/later`, { method: 'POST', token, json: {} })).json.return_value, 5);
  } finally {
    await d.close();
  }
});

test('a wrong secret is refused once, without a reconnect loop', async () => {
  const who = await provision(server.url, token, productId);
  const d = createDevice({ url: server.mqttUrl, id: who.id, secret: 'wrong', reconnect: { minMs: 10, maxMs: 20 } });
  let errors = 0;
  d.on('error', () => { errors++; });
  await assert.rejects(d.connect(), CredentialsRefusedError);
  // Once its connection is gone it is closed, not waiting for a next try: none will come.
  await eventually(() => (d.state === 'closed' ? true : undefined), 5000, `closed (is ${d.state})`);
  assert.equal(errors, 1);
  await d.close();
});

test('reconnects after the connection is lost, with backoff, and comes back online', async () => {
  const d = await sdkDevice((dev) => dev.function('f', () => 1));
  try {
    const offline = new Promise<void>((resolve) => d.once('offline', () => resolve()));
    const online = new Promise<void>((resolve) => offline.then(() => d.once('online', () => resolve())));
    // Another connection with the device's id takes over; the SDK reconnects and takes it back.
    const who = d.id;
    const secret = (d as unknown as { options: { secret: string } }).options.secret;
    const intruder = await mqtt.connectAsync(server.mqttUrl, { clientId: who, username: who, password: secret, reconnectPeriod: 0 });
    await offline;
    await online;
    await eventually(() => (intruder.connected ? undefined : true));
    assert.equal(d.connected, true);
    assert.equal((await raw(`${server.url}/v1/products/${productId}/devices/${who}/f`, { method: 'POST', token, json: {} })).json.return_value, 1);
    intruder.end(true);
  } finally {
    await d.close();
  }
});

test('events between devices of one product, and a claim by a customer', async () => {
  const got: string[] = [];
  const a = await sdkDevice();
  const b = await sdkDevice((dev) => dev.subscribe('door/#', (e) => got.push(`${e.name}=${e.data}`)));
  try {
    await a.publish('door/open', 'front');
    await a.publish('window', 'left');
    await eventually(() => (got.length === 1 ? true : undefined));
    assert.deepEqual(got, ['door/open=front']);

    const client = await raw(`${server.url}/v1/products/${productId}/clients`, { method: 'POST', token, json: { name: 'app', type: 'installed', scope: 'customers:create' } });
    const customer = await raw(`${server.url}/v1/products/${productId}/customers`, { method: 'POST', headers: { authorization: basic(client.json.client.id, client.json.client.secret) }, form: { email: email('sdk'), password: PASSWORD } });
    const code = await raw(`${server.url}/v1/products/${productId}/device_claims`, { method: 'POST', token: customer.json.access_token, json: {} });
    await assert.rejects(a.claim('made-up'), /claim_code_invalid/);
    await a.claim(code.json.claim_code as string);
    const mine = await raw(`${server.url}/v1/devices`, { token: customer.json.access_token });
    assert.deepEqual(mine.json.map((x: { id: string }) => x.id), [a.id]);
  } finally {
    await a.close();
    await b.close();
  }
});

test('MQTT 5 and WebSocket: the same device API; a wrong secret is CONNACK 0x86 on MQTT 5', async () => {
  const v5 = await sdkDevice((dev) => dev.function('f', () => 5), { protocolVersion: 5 });
  assert.ok(server.wsUrl);
  const ws = await sdkDevice((dev) => dev.variable('label', 'string', () => 'over ws'), { url: server.wsUrl });
  try {
    await eventually(async () => ((await raw(`${server.url}/v1/devices/${v5.id}`, { token })).json.functions?.length === 1 ? true : undefined));
    assert.equal((await raw(`${server.url}/v1/devices/${v5.id}/f`, { method: 'POST', token, json: { arg: '' } })).json.return_value, 5);
    await eventually(async () => ((await raw(`${server.url}/v1/devices/${ws.id}`, { token })).json.variables?.label ? true : undefined));
    assert.equal((await raw(`${server.url}/v1/devices/${ws.id}/label`, { token })).json.result, 'over ws');
  } finally {
    await v5.close();
    await ws.close();
  }
  const who = await provision(server.url, token, productId);
  const refused = createDevice({ url: server.mqttUrl, id: who.id, secret: 'wrong', protocolVersion: 5 });
  const err = await refused.connect().then(() => assert.fail('connected with a wrong secret'), (e: unknown) => e);
  assert.ok(err instanceof CredentialsRefusedError);
  assert.equal(err.code, 0x86);
  assert.equal(err.final, true);
  await refused.close();
});

test('banned for a while (too many failures) is not final: the device keeps trying and gets in once the lock-out ends', async () => {
  const who = await provision(server.url, token, productId);
  for (let i = 0; i < 2; i++) {
    const wrong = createDevice({ url: server.mqttUrl, id: who.id, secret: 'wrong' });
    await assert.rejects(wrong.connect(), CredentialsRefusedError);
    await wrong.close();
  }
  // LOGIN_MAX_FAILURES=2, LOGIN_LOCKOUT_SECONDS=1: the right secret is refused with code 5 for a second.
  const d = createDevice({ url: server.mqttUrl, id: who.id, secret: who.secret, reconnect: { minMs: 50, maxMs: 200 } });
  const refusals: ConnectionRefusedError[] = [];
  d.on('error', (e: Error) => { if (e instanceof ConnectionRefusedError) refusals.push(e); });
  try {
    await d.connect({ timeoutMs: 5000 });
    assert.ok(refusals.length >= 1, 'refused while locked out');
    assert.deepEqual(refusals.map((e) => [e.code, e.final]), refusals.map(() => [5, false]));
    assert.equal(d.connected, true);
  } finally {
    await d.close();
  }
});

test('connect() rejects when closed first, and after timeoutMs when nothing answers; no reconnect after', async () => {
  // A port that accepts nothing: a free one, left closed.
  const port = await freePort();
  const nowhere = createDevice({ url: `mqtt://127.0.0.1:${port}`, id: '0123456789abcdef01234567', secret: 's', reconnect: { minMs: 10, maxMs: 20 } });
  let errors = 0;
  nowhere.on('error', () => { errors++; });
  const started = Date.now();
  await assert.rejects(nowhere.connect({ timeoutMs: 300 }), /did not connect within 300 ms/);
  assert.ok(Date.now() - started < 2000);
  assert.ok(errors >= 2, 'network errors are retried with backoff until the timeout');
  assert.equal(nowhere.state, 'closed', 'timed out: closed, with no next try waiting');

  const early = createDevice({ url: server.mqttUrl, id: '0123456789abcdef01234567', secret: 's' });
  const pending = early.connect();
  await early.close();
  await assert.rejects(pending, /closed/);
});

test('events: exact names, families, a throwing handler does not take the device down; cloud/error is a warning', async () => {
  const got: string[] = [];
  const warnings: CloudWarning[] = [];
  const errors: Error[] = [];
  const a = await sdkDevice((dev) => dev.on('warning', (w: CloudWarning) => warnings.push(w)));
  const b = await sdkDevice((dev) => dev
    .subscribe('window', (e) => got.push(`exact ${e.name}=${e.data}`))
    .subscribe('+/temp', (e) => got.push(`wild ${e.name} from ${e.coreid === a.id ? 'a' : e.coreid}`))
    .subscribe('boom', () => { throw new Error('handler bug'); })
    .on('error', (e: Error) => errors.push(e)));
  try {
    await a.publish('window/left', 'no');
    await a.publish('boom');
    await a.publish('window', 'open', { ttl: 30, private: true });
    await a.publish('kitchen/temp', '21');
    await eventually(() => (got.length === 2 ? true : undefined));
    assert.deepEqual(got, ['exact window=open', 'wild kitchen/temp from a']);
    assert.deepEqual(errors.map((e) => e.message), ['handler bug']);
    assert.equal(b.connected, true);

    await a.publish('spark/mine', 'x');
    await eventually(() => (warnings.length === 1 ? true : undefined));
    assert.equal(warnings[0]?.error, 'bad_payload');
    assert.equal(warnings[0]?.topic, `devices/${a.id}/events/spark/mine`);
    assert.equal(a.connected, true);
  } finally {
    await a.close();
    await b.close();
  }
});

test('a device is sent only the events it subscribed to; a filter added while online takes effect at once; a bad filter throws', async () => {
  const a = await sdkDevice();
  const b = await sdkDevice();
  // What reaches b's MQTT client, beneath the SDK's own matching.
  const sent: string[] = [];
  (b as unknown as { client: mqtt.MqttClient }).client.on('message', (topic) => { if (topic.includes('/cloud/events/')) sent.push(topic.slice(topic.indexOf('/cloud/events/') + 14)); });
  const got: string[] = [];
  try {
    await a.publish('noise', '1');
    b.subscribe('late/#', (e) => got.push(`${e.name}=${e.data}`));
    // The subscription is on its way; the sentinel is published until it arrives.
    await eventually(async () => {
      await a.publish('late/sentinel', 'x');
      return got.length > 0 ? true : undefined;
    });
    await a.publish('noise', '2');
    await a.publish('late/last', 'y');
    await eventually(() => (got.includes('late/last=y') ? true : undefined));
    assert.ok(sent.every((name) => name.startsWith('late/')), `only what b asked for is sent to it: ${sent.join(', ')}`);
    assert.throws(() => b.subscribe('a/#/b', () => undefined), TypeError);
    assert.throws(() => b.subscribe('', () => undefined), TypeError);
    assert.throws(() => b.subscribe('sens+ors', () => undefined), TypeError);
  } finally {
    await a.close();
    await b.close();
  }
});

test('close() rejects a claim still waiting; claim() and publish() need a connection', async () => {
  const d = await sdkDevice(undefined, { claimTimeoutMs: 60_000 });
  const waiting = d.claim('anything');
  const rejected = assert.rejects(waiting, /closed/);
  await d.close();
  await rejected;
  assert.throws(() => d.claim('x'), /not connected/);
  await assert.rejects(d.publish('x'), /not connected/);
});
