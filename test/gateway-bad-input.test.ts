import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect as tcpConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt from 'mqtt';
import mqttPacket from 'mqtt-packet';
import { startTestServer, type TestServer } from './helpers/server.js';
import { raw } from './helpers/http.js';
import { newProduct, signUp } from './helpers/fixtures.js';
import { fakeDevice, provision, type Identity } from './helpers/device.js';
import { eventually } from './helpers/eventually.js';

/**
 * What a hostile or broken client can do to the gateway: garbage bytes, oversized packets,
 * a CONNECT that is not one, floods of wrong secrets. Each is refused with the protocol's own
 * answer or dropped, and a well-behaved device on the same gateway keeps working throughout.
 */
let server: TestServer;
let token: string;
let productId: number;
let good: Identity;
let goodDevice: Awaited<ReturnType<typeof fakeDevice>>;

before(async () => {
  server = await startTestServer({ env: { IP_MAX_FAILURES: '20', MQTT_WS_PORT: '0' } });
  ({ token } = await signUp(server.url));
  productId = (await newProduct(server.url, token)).id;
  good = await provision(server.url, token, productId);
  goodDevice = await fakeDevice(server.mqttUrl, good, { functions: { ok: () => 7 } });
});
after(async () => {
  await goodDevice.close();
  await server.close();
});

async function stillWorks(): Promise<void> {
  const r = await raw(`${server.url}/v1/products/${productId}/devices/${good.id}/ok`, { method: 'POST', token, json: { arg: '' } });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.return_value, 7);
}

const port = () => Number(new URL(server.mqttUrl).port);

/** Opens a TCP connection, writes `bytes`, and answers what came back before the server closed it. */
function exchange(bytes: Buffer[], waitMs = 2000): Promise<{ data: Buffer; closed: boolean }> {
  return new Promise((resolve) => {
    const socket: Socket = tcpConnect(port(), '127.0.0.1');
    const chunks: Buffer[] = [];
    let closed = false;
    const done = () => resolve({ data: Buffer.concat(chunks), closed });
    const t = setTimeout(() => { socket.destroy(); done(); }, waitMs);
    socket.on('data', (d) => chunks.push(d));
    socket.on('error', () => undefined);
    socket.on('close', () => { closed = true; clearTimeout(t); done(); });
    socket.on('connect', () => { for (const b of bytes) socket.write(b); });
  });
}

function packets(data: Buffer, protocolVersion = 4): mqttPacket.Packet[] {
  const parser = mqttPacket.parser({ protocolVersion });
  const out: mqttPacket.Packet[] = [];
  parser.on('packet', (p) => out.push(p));
  parser.parse(data);
  return out;
}

const connectPacket = (id: string, secret: string, extra: Partial<mqttPacket.IConnectPacket> = {}) =>
  mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, clientId: id, username: id, password: Buffer.from(secret), keepalive: 30, ...extra });

test('garbage, a first packet that is not CONNECT, and an old protocol level are refused without a crash', async () => {
  const garbage = await exchange([Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n')]);
  assert.equal(garbage.closed, true);
  const notConnect = await exchange([mqttPacket.generate({ cmd: 'pingreq' })]);
  assert.equal(notConnect.closed, true);
  assert.equal(notConnect.data.length, 0);
  const v3 = await exchange([connectPacket(good.id, good.secret, { protocolId: 'MQIsdp', protocolVersion: 3 })]);
  assert.equal(v3.closed, true);
  const [connack] = packets(v3.data);
  assert.equal((connack as mqttPacket.IConnackPacket).returnCode, 1, 'unacceptable protocol version');
  // A truncated CONNECT, then silence: nothing breaks.
  await exchange([connectPacket(good.id, good.secret).subarray(0, 10)], 300);
  await stillWorks();
});

test('a packet over 16 KiB closes the connection; an oversized event is refused on cloud/error', async () => {
  const who = await provision(server.url, token, productId);
  const big = mqttPacket.generate({ cmd: 'publish', topic: `devices/${who.id}/events/big`, payload: Buffer.alloc(20_000, 'a'), qos: 0, dup: false, retain: false });
  const out = await exchange([connectPacket(who.id, who.secret), big]);
  assert.equal(out.closed, true);

  const dev = await fakeDevice(server.mqttUrl, who);
  try {
    const errors: Array<Record<string, unknown>> = [];
    dev.client.on('message', (topic, payload) => { if (topic.endsWith('/cloud/error')) errors.push(JSON.parse(payload.toString()) as Record<string, unknown>); });
    await dev.publish('big', { data: 'x'.repeat(1100) });
    await dev.client.publishAsync(`devices/${who.id}/reply`, JSON.stringify({ id: 'nobody', return_value: 1 }), { qos: 1 });
    await dev.client.publishAsync(`devices/${who.id}/events/ok`, '[1,2]', { qos: 2 });
    await dev.publish('spark/status', { data: 'online' });
    await eventually(() => (errors.length >= 3 ? true : undefined));
    assert.equal(errors.length, 3, JSON.stringify(errors));
    assert.match(errors[2]?.message as string, /reserved/);
    assert.match(errors[0]?.message as string, /1024/);
    assert.equal(errors[1]?.error, 'bad_payload');
    assert.equal(dev.client.connected, true);
  } finally {
    await dev.close();
  }
  await stillWorks();
});

test('a flood of wrong secrets from one address ends in "banned"; the right device elsewhere is not disturbed', async () => {
  const victim = await provision(server.url, token, productId);
  const codes: number[] = [];
  for (let i = 0; i < 25; i++) {
    const out = await exchange([connectPacket(victim.id, `wrong-${i}`)], 1000);
    codes.push((packets(out.data)[0] as mqttPacket.IConnackPacket).returnCode ?? -1);
  }
  assert.equal(codes[0], 4, 'bad user name or password');
  assert.equal(codes.at(-1), 5, 'not authorized once the address is over IP_MAX_FAILURES');
  await stillWorks();
});

test('MQTT over WebSocket and over TLS', async () => {
  assert.ok(server.wsUrl);
  const who = await provision(server.url, token, productId);
  const ws = await mqtt.connectAsync(server.wsUrl, { clientId: who.id, username: who.id, password: who.secret, reconnectPeriod: 0 });
  await ws.subscribeAsync(`devices/${who.id}/cloud/#`);
  await ws.publishAsync(`devices/${who.id}/hello`, JSON.stringify({ functions: ['f'] }), { qos: 1 });
  const pinged = await raw(`${server.url}/v1/products/${productId}/devices/${who.id}/ping`, { method: 'PUT', token });
  assert.deepEqual(pinged.json, { online: true, ok: true });
  await ws.endAsync();

  const dir = mkdtempSync(join(tmpdir(), 'skyport-tls-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=127.0.0.1'], { stdio: 'ignore' });
    const tls = await startTestServer({ env: { MQTT_TLS_CERT: join(dir, 'cert.pem'), MQTT_TLS_KEY: join(dir, 'key.pem') } });
    try {
      assert.match(tls.mqttUrl, /^mqtts:/);
      const owner = await signUp(tls.url);
      const p = await newProduct(tls.url, owner.token);
      const d = await provision(tls.url, owner.token, p.id);
      const secure = await mqtt.connectAsync(tls.mqttUrl, { clientId: d.id, username: d.id, password: d.secret, reconnectPeriod: 0, rejectUnauthorized: false });
      assert.equal(secure.connected, true);
      await secure.endAsync();
      // Plain MQTT on the TLS port gets nowhere.
      const plain = mqtt.connect(tls.mqttUrl.replace('mqtts:', 'mqtt:'), { clientId: d.id, username: d.id, password: d.secret, reconnectPeriod: 0, connectTimeout: 1000 });
      const outcome = await new Promise<string>((resolve) => {
        plain.once('connect', () => resolve('connected'));
        plain.once('close', () => resolve('closed'));
        plain.once('error', () => resolve('error'));
      });
      plain.end(true);
      assert.notEqual(outcome, 'connected');
    } finally {
      await tls.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
