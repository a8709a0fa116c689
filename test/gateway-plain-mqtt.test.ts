import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect as tcpConnect } from 'node:net';
import mqtt from 'mqtt';
import mqttPacket from 'mqtt-packet';
import { manualClock, startTestServer, type TestServer } from './helpers/server.js';
import { raw } from './helpers/http.js';
import { eventually } from './helpers/eventually.js';
import { provision } from './helpers/device.js';
import { newProduct, signUp } from './helpers/fixtures.js';
import { HELLO_GRACE_MS } from '../src/gateway/waiters.js';

/**
 * A device written from docs/device-protocol.md alone, with plain mqtt.js publishes and
 * subscribes (no SDK): connect, describe itself, answer a call and a read, publish an event,
 * receive one, and be refused what it may not do.
 */
let server: TestServer;
// Time moves only when a test moves it (keep-alive, the hello grace); timers stay real.
const clock = manualClock(new Date());
before(async () => { server = await startTestServer({ clock }); });
after(async () => { await server.close(); });

function connect(url: string, id: string, secret: string, extra: mqtt.IClientOptions = {}): Promise<mqtt.MqttClient> {
  return new Promise((resolve, reject) => {
    const c = mqtt.connect(url, { clientId: id, username: id, password: secret, reconnectPeriod: 0, connectTimeout: 5000, ...extra });
    c.once('connect', () => resolve(c));
    c.once('error', (err) => { c.end(true); reject(err); });
  });
}

/** Next message on a topic matching the predicate. */
function next(c: mqtt.MqttClient, match: (topic: string) => boolean, ms = 5000): Promise<{ topic: string; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => { c.off('message', on); reject(new Error('no message')); }, ms);
    const on = (topic: string, payload: Buffer) => {
      if (!match(topic)) return;
      clearTimeout(t);
      c.off('message', on);
      resolve({ topic, body: payload.length ? JSON.parse(payload.toString()) as Record<string, unknown> : {} });
    };
    c.on('message', on);
  });
}

test('a plain MQTT client acts as a device from the protocol document', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const { id, secret } = await provision(server.url, token, product.id);

  for (const protocolVersion of [4, 5] as const) {
    const dev = await connect(server.mqttUrl, id, secret, { protocolVersion });
    await dev.subscribeAsync(`devices/${id}/cloud/#`, { qos: 1 });
    await dev.publishAsync(`devices/${id}/hello`, JSON.stringify({ functions: ['led'], variables: { temp: 'double' }, firmware_version: 3, system_firmware_version: '5.8.0' }), { qos: 1 });
    dev.on('message', (topic, payload) => {
      const body = JSON.parse(payload.toString()) as { id: string; name: string; arg?: string };
      if (topic === `devices/${id}/cloud/call`) void dev.publishAsync(`devices/${id}/reply`, JSON.stringify({ id: body.id, return_value: (body.arg ?? '').length }));
      if (topic === `devices/${id}/cloud/get`) void dev.publishAsync(`devices/${id}/reply`, JSON.stringify({ id: body.id, result: 21.5 }));
    });

    const described = await eventually(async () => {
      const r = await raw(`${server.url}/v1/products/${product.id}/devices/${id}`, { token });
      return r.json.online === true && (r.json.functions as string[]).includes('led') ? r.json : undefined;
    });
    assert.deepEqual(described.variables, { temp: 'double' });
    assert.equal(described.system_firmware_version, '5.8.0');
    assert.equal(described.last_ip_address, '127.0.0.1');
    assert.ok(described.last_handshake_at);

    const called = await raw(`${server.url}/v1/products/${product.id}/devices/${id}/led`, { method: 'POST', token, json: { arg: 'on!' } });
    assert.equal(called.status, 200, called.text);
    assert.deepEqual({ ...called.json, name: undefined }, { id, name: undefined, connected: true, return_value: 3 });

    const read = await raw(`${server.url}/v1/products/${product.id}/devices/${id}/temp`, { token });
    assert.equal(read.status, 200, read.text);
    assert.equal(read.json.result, 21.5);
    assert.equal((read.json.coreInfo as { deviceID: string }).deviceID, id);

    // Calls follow the device's subscriptions as they change: none after it unsubscribes, and
    // again once it subscribes to the call topic alone.
    await dev.unsubscribeAsync(`devices/${id}/cloud/#`);
    // (The connection is new, so the call waits for a SUBSCRIBE within its timeout first.)
    const unsubscribed = await raw(`${server.url}/v1/products/${product.id}/devices/${id}/led`, { method: 'POST', token, json: { arg: 'x', timeout: 1 } });
    assert.equal(unsubscribed.status, 400, unsubscribed.text);
    assert.match(unsubscribed.json.error_description, /not subscribed/);
    await dev.subscribeAsync(`devices/${id}/cloud/call`, { qos: 0 });
    const again = await raw(`${server.url}/v1/products/${product.id}/devices/${id}/led`, { method: 'POST', token, json: { arg: 'four' } });
    assert.equal(again.status, 200, again.text);
    assert.equal(again.json.return_value, 4);

    dev.end();
    await eventually(async () => ((await raw(`${server.url}/v1/products/${product.id}/devices/${id}`, { token })).json.online === false ? true : undefined));
  }
});

test('a call that arrives between CONNACK and the device\'s first hello waits for the hello; without one it fails once the wait ends, and after the grace at once', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const { id, secret } = await provision(server.url, token, product.id);
  const dev = await connect(server.mqttUrl, id, secret);
  try {
    // Connected, so listed online, but neither subscribed nor described yet.
    const call = raw(`${server.url}/v1/products/${product.id}/devices/${id}/led`, { method: 'POST', token, json: { arg: 'on' } });
    await new Promise((r) => setTimeout(r, 300));
    dev.on('message', (topic, payload) => {
      const body = JSON.parse(payload.toString()) as { id: string; arg: string };
      if (topic === `devices/${id}/cloud/call`) void dev.publishAsync(`devices/${id}/reply`, JSON.stringify({ id: body.id, return_value: body.arg.length }));
    });
    await dev.subscribeAsync(`devices/${id}/cloud/#`, { qos: 1 });
    await dev.publishAsync(`devices/${id}/hello`, JSON.stringify({ functions: ['led'] }), { qos: 1 });
    const answered = await call;
    assert.equal(answered.status, 200, answered.text);
    assert.equal(answered.json.return_value, 2);
  } finally {
    dev.end(true);
  }

  // A new connection that never says hello: the call waits for one within its own timeout,
  // then the function is unknown to this connection.
  const { id: silentId, secret: silentSecret } = await provision(server.url, token, product.id);
  const silent = await connect(server.mqttUrl, silentId, silentSecret);
  try {
    await silent.subscribeAsync(`devices/${silentId}/cloud/#`, { qos: 1 });
    const started = Date.now();
    const r = await raw(`${server.url}/v1/products/${product.id}/devices/${silentId}/led`, { method: 'POST', token, json: { arg: 'on', timeout: 1 } });
    assert.equal(r.status, 404, r.text);
    assert.equal(r.json.error, 'Function not found');
    assert.ok(Date.now() - started >= 900, 'the call waited for a hello');

    // Once the grace is over (by the server's clock), the device is judged at once by what it
    // said before, even with a long timeout.
    clock.advance(HELLO_GRACE_MS);
    const judged = Date.now();
    const late = await raw(`${server.url}/v1/products/${product.id}/devices/${silentId}/led`, { method: 'POST', token, json: { arg: 'on', timeout: 30 } });
    assert.equal(late.status, 404, late.text);
    assert.ok(Date.now() - judged < HELLO_GRACE_MS - 1000, 'no wait after the grace');
  } finally {
    silent.end(true);
  }
});

test('an answer settles only its own kind of request: a call\'s id on config/ack leaves the call waiting for its reply', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const { id, secret } = await provision(server.url, token, product.id);
  const dev = await connect(server.mqttUrl, id, secret);
  try {
    await dev.subscribeAsync(`devices/${id}/cloud/#`, { qos: 1 });
    await dev.publishAsync(`devices/${id}/hello`, JSON.stringify({ functions: ['led'] }), { qos: 1 });
    dev.on('message', (topic, payload) => {
      if (topic !== `devices/${id}/cloud/call`) return;
      const { id: callId } = JSON.parse(payload.toString()) as { id: string };
      // The call's correlation id on the configuration topic first (docs/device-protocol.md:
      // config/ack answers cloud/config/set only), then the reply.
      void dev.publishAsync(`devices/${id}/config/ack`, JSON.stringify({ id: callId, status: 0 }), { qos: 1 })
        .then(() => dev.publishAsync(`devices/${id}/reply`, JSON.stringify({ id: callId, return_value: 7 })));
    });
    const called = await raw(`${server.url}/v1/products/${product.id}/devices/${id}/led`, { method: 'POST', token, json: { arg: 'on' } });
    assert.equal(called.status, 200, called.text);
    assert.equal(called.json.return_value, 7, 'answered by the reply, not by the config/ack');
  } finally {
    dev.end(true);
  }
});

test('wrong secrets and unknown devices are refused in CONNACK; topics of other devices are not reachable', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const a = await provision(server.url, token, product.id);
  const b = await provision(server.url, token, product.id);

  await assert.rejects(connect(server.mqttUrl, a.id, 'wrong'), /Bad username or password|Not authorized/);
  await assert.rejects(connect(server.mqttUrl, 'ffffffffffffffffffffffff', 'x', { protocolVersion: 5 }), /Bad User Name or Password|bad/i);
  await assert.rejects(connect(server.mqttUrl, 'not-a-device', 'x'), /Identifier rejected/);

  const devA = await connect(server.mqttUrl, a.id, a.secret);
  const devB = await connect(server.mqttUrl, b.id, b.secret);
  // mqtt.js rejects a SUBSCRIBE with any refused filter; the SUBACK shows which.
  const refused = await devA.subscribeAsync([`devices/${b.id}/cloud/#`, '#', `devices/${a.id}/cloud/#`]).then(() => assert.fail('expected a refusal'), (e: { packet: { granted: number[] } }) => e.packet.granted);
  assert.deepEqual(refused, [128, 128, 0]);
  await devB.subscribeAsync(`devices/${b.id}/cloud/#`);
  // A publish into another device's topics is dropped; the publisher stays connected.
  await devA.publishAsync(`devices/${b.id}/cloud/call`, JSON.stringify({ id: 'x', name: 'led', arg: '' }), { qos: 1 });
  const errorArrives = next(devA, (t) => t === `devices/${a.id}/cloud/error`);
  await devA.publishAsync(`devices/${a.id}/hello`, 'not json', { qos: 1 });
  const error = await errorArrives;
  assert.equal(error.body.error, 'bad_payload');
  assert.equal(devA.connected, true);
  devA.end();
  devB.end();
});

test('a second connection with the same id replaces the first', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const { id, secret } = await provision(server.url, token, product.id);
  const first = await connect(server.mqttUrl, id, secret);
  const closed = new Promise<void>((resolve) => first.once('close', () => resolve()));
  const second = await connect(server.mqttUrl, id, secret);
  await closed;
  assert.equal(second.connected, true);
  const ping = await raw(`${server.url}/v1/products/${product.id}/devices/${id}/ping`, { method: 'PUT', token });
  assert.deepEqual(ping.json, { online: true, ok: true });
  second.end();
});

test('keep-alive and the will: a device that goes silent is disconnected, stored offline, and its will published', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const { id, secret } = await provision(server.url, token, product.id);
  const events = new AbortController();
  const stream = await fetch(`${server.url}/v1/products/${product.id}/events/lastwill`, { headers: { authorization: `Bearer ${token}` }, signal: events.signal });
  const reader = stream.body!.getReader();
  // A device that never pings: keep-alive 1 s, then silence; the socket stays open on its side.
  const socket = tcpConnect(Number(new URL(server.mqttUrl).port), '127.0.0.1');
  socket.on('error', () => undefined);
  socket.resume(); // read (and drop) the CONNACK, so that the server's FIN is seen
  const closedByServer = new Promise<void>((resolve) => { socket.on('close', () => resolve()); });
  socket.write(mqttPacket.generate({
    cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, clientId: id, username: id, password: Buffer.from(secret), keepalive: 1,
    will: { topic: `devices/${id}/events/lastwill`, payload: Buffer.from(JSON.stringify({ data: 'gone' })), qos: 0, retain: false },
  }));
  await eventually(async () => ((await raw(`${server.url}/v1/products/${product.id}/devices/${id}`, { token })).json.online === true ? true : undefined));
  // Silence is measured on the server's clock; the sweep runs every second, or at once here.
  const gateway = server.skyport.gateway;
  clock.advance(1500);
  gateway.sweep();
  assert.ok(gateway.holds(id), 'still connected at 1.5 times the keep-alive');
  clock.advance(1);
  gateway.sweep();
  assert.equal(gateway.holds(id), false);
  await closedByServer;
  let text = '';
  while (!text.includes('event: lastwill')) text += new TextDecoder().decode((await reader.read()).value);
  events.abort();
  assert.match(text, /"data":"gone"/);
  await eventually(async () => ((await raw(`${server.url}/v1/products/${product.id}/devices/${id}`, { token })).json.online === false ? true : undefined));
});
