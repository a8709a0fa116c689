import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createDevice, type Device } from '../src/sdk/index.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { raw } from './helpers/http.js';
import { newProduct, signUp } from './helpers/fixtures.js';
import { provision } from './helpers/device.js';
import { eventually } from './helpers/eventually.js';
import { openEventStream } from './helpers/sse.js';
import { faultyDb, type FaultyDb } from './helpers/faults.js';
import { startReceiver, type Receiver } from './helpers/receiver.js';
import mqtt from 'mqtt';
import type { Duplex } from 'node:stream';
import { ACKS_WAITING_MAX } from '../src/gateway/handlers/publish.js';

/**
 * At least once (docs/webhooks.md): an event is acknowledged (the device's PUBACK, the API's 200)
 * only once its webhook deliveries are stored; when they cannot be, it is not acknowledged.
 */
let server: TestServer;
let receiver: Receiver;
let faulty: FaultyDb | undefined;
let owner: string;
let productId: number;
const devices: Device[] = [];
before(async () => {
  server = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: '127.0.0.1' }, wrapDb: (db) => (faulty = faultyDb(db)) });
  receiver = await startReceiver();
  ({ token: owner } = await signUp(server.url));
  productId = (await newProduct(server.url, owner)).id;
  await server.skyport.services.webhooks.manage.create({ kind: 'product', productId }, { event: 'reading', url: `${receiver.url}/acks` }, { account: { kind: 'product', id: String(productId) }, ip: null });
});
after(async () => {
  await Promise.all(devices.map((d) => d.close()));
  await receiver.close();
  await server.close();
});

async function device(protocolVersion: 4 | 5): Promise<Device> {
  const who = await provision(server.url, owner, productId);
  const d = createDevice({ url: server.mqttUrl, id: who.id, secret: who.secret, protocolVersion, reconnect: false });
  devices.push(d);
  await d.connect();
  return d;
}

const settled = (p: Promise<unknown>) => {
  const state = { done: false };
  void p.then(() => { state.done = true; }, () => { state.done = true; });
  return state;
};

test('the PUBACK waits for the deliveries to be stored, and later PUBACKs wait behind it in order', async () => {
  const d = await device(4);
  const stream = await openEventStream(`${server.url}/v1/products/${productId}/events`, owner);
  const held = (faulty as FaultyDb).pauseAt(/INSERT INTO webhook_deliveries/);
  const first = d.publish('reading', '1');
  await held.reached;
  // An event no webhook takes, published after: its PUBACK may not overtake the first's.
  const second = d.publish('other', '2');
  const a = settled(first);
  const b = settled(second);
  // The cloud has both events (its streams show them; an immediate PUBACK goes out with that), and acknowledged neither.
  await eventually(() => stream.events.find((e) => e.name === 'other'));
  stream.close();
  assert.deepEqual([a.done, b.done], [false, false]);
  held.release();
  await first;
  await second;
  await eventually(() => (receiver.received.some((r) => new URLSearchParams(r.body).get('data') === '1') ? true : undefined));
});

test('a client that publishes without waiting for its PUBACKs while the store is slow is not read further: its events wait in TCP, not in memory', async () => {
  const who = await provision(server.url, owner, productId);
  // The server's side of the next connection.
  const { gateway } = server.skyport;
  const accept = gateway.accept.bind(gateway);
  let socket: Duplex | undefined;
  gateway.accept = (stream, ip) => {
    socket ??= stream;
    accept(stream, ip);
  };
  const client = await mqtt.connectAsync(server.mqttUrl, { clientId: who.id, username: who.id, password: who.secret, reconnectPeriod: 0 });
  gateway.accept = accept;
  const held = (faulty as FaultyDb).pauseAt(/INSERT INTO webhook_deliveries/);
  try {
    const stream = await openEventStream(`${server.url}/v1/products/${productId}/events/reading-flood`, owner);
    let acked = 0;
    const count = 2000;
    for (let n = 0; n < count; n++) {
      client.publish(`devices/${who.id}/events/reading-flood`, JSON.stringify({ data: `f-${n}`, ttl: 60, private: true }), { qos: 1 }, (err) => { if (!err) acked += 1; });
    }
    await held.reached;
    await eventually(() => (socket?.isPaused() ? true : undefined), 10_000, 'the connection no longer read');
    await eventually(() => (stream.events.length >= ACKS_WAITING_MAX ? true : undefined), 10_000, 'the events read so far in the stream');
    assert.equal(acked, 0, 'none acknowledged while the deliveries wait');
    held.release();
    await eventually(() => (acked === count ? true : undefined), 30_000, 'every event acknowledged once the store answers');
    assert.equal(socket?.isPaused(), false, 'read again');
    await eventually(() => (stream.events.length === count ? true : undefined), 10_000, 'every event in the stream, once');
    stream.close();
  } finally {
    held.release();
    client.end(true);
  }
});

test('deliveries that cannot be stored: MQTT 5 hears 0x80 and the publish fails; a 3.1.1 device is disconnected, and its publish fails', async () => {
  const v5 = await device(5);
  (faulty as FaultyDb).crashAt(/INSERT INTO webhook_deliveries/);
  await assert.rejects(v5.publish('reading', 'lost?'), (err: Error & { code?: number }) => err.code === 0x80 || /0x80|Unspecified|128/i.test(err.message));
  assert.equal((faulty as FaultyDb).crashed, true);
  assert.equal(v5.state, 'online', 'the connection stays');

  const v4 = await device(4);
  (faulty as FaultyDb).crashAt(/INSERT INTO webhook_deliveries/);
  const gone = new Promise<void>((resolve) => v4.once('offline', () => resolve()));
  // Not acknowledged, and the next connection is a new client that does not send it again: the
  // publish fails as its connection closes, rather than never settling.
  const outcome = v4.publish('reading', 'again').then(() => 'acknowledged', (err: Error) => err.message);
  await gone;
  assert.notEqual(v4.state, 'online');
  assert.match(await Promise.race([outcome, new Promise<string>((resolve) => setTimeout(() => resolve('not settled'), 2000))]), /connection closed before the cloud acknowledged/);
});

test('event data with a NUL or a lone surrogate, which the store cannot hold, is refused as bad input; the device stays and its next event is delivered', async () => {
  for (const bad of ['a\u0000b', 'half \ud800 a pair']) {
    const d = await device(4);
    const outcome = await d.publish('reading', bad).then(() => 'acknowledged', (err: Error) => err.message);
    assert.equal(d.state, 'online', `the connection stays (${outcome})`);
    await d.publish('reading', `after ${bad.length}`);
    await eventually(() => receiver.received.find((r) => r.url === '/acks' && r.body.includes(`after+${bad.length}`)), 5000, 'the next event is delivered');
    assert.equal(receiver.received.some((r) => r.url === '/acks' && r.body.includes('data=a%00b')), false);
  }
});

test('the API answers 200 once the deliveries are stored, 503 when they cannot be', async () => {
  const url = `${server.url}/v1/products/${productId}/events`;
  const ok = await raw(url, { method: 'POST', token: owner, json: { name: 'reading', data: 'from-api' } });
  assert.equal(ok.status, 200, ok.text);
  await eventually(() => (receiver.received.some((r) => new URLSearchParams(r.body).get('data') === 'from-api') ? true : undefined));
  (faulty as FaultyDb).unreachable = true;
  try {
    const refused = await raw(url, { method: 'POST', token: owner, json: { name: 'reading', data: 'down' } });
    assert.equal(refused.status, 503, refused.text);
    assert.equal(refused.json.error, 'service_unavailable');
  } finally {
    (faulty as FaultyDb).unreachable = false;
  }
});

test('a node\'s shutdown lets a delivery under way finish, and says meanwhile that it waits for it', async () => {
  const node = await startTestServer({ env: { WEBHOOK_ALLOW_PRIVATE: '127.0.0.1' } });
  let closing: Promise<void> | undefined;
  receiver.answer((r) => (r.url === '/slow' ? { status: 200, body: 'ok', delayMs: 1500 } : { status: 200, body: 'ok' }));
  try {
    const { token } = await signUp(node.url);
    const product = (await newProduct(node.url, token)).id;
    await node.skyport.services.webhooks.manage.create({ kind: 'product', productId: product }, { event: 'slow', url: `${receiver.url}/slow` }, { account: { kind: 'product', id: String(product) }, ip: null });
    const sent = await raw(`${node.url}/v1/products/${product}/events`, { method: 'POST', token, json: { name: 'slow', data: 'x' } });
    assert.equal(sent.status, 200, sent.text);
    const request = await eventually(() => receiver.received.find((r) => r.url === '/slow'), 5000, 'the delivery at the receiver');
    assert.equal(node.skyport.shutdownStage(), null, 'no shutdown before close');
    closing = node.close();
    await eventually(() => (node.skyport.shutdownStage() === 'finishing the webhook deliveries under way' ? true : undefined), 1400, 'the shutdown to wait for the delivery');
    await closing;
    assert.equal(node.skyport.shutdownStage(), 'closed');
    assert.ok(Date.now() - request.at >= 1500, 'the node closed only once the receiver had answered');
  } finally {
    receiver.answer({ status: 200, body: 'ok' });
    await (closing ?? node.close());
  }
});
