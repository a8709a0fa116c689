import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Duplex } from 'node:stream';
import mqttPacket from 'mqtt-packet';
import type { IConnackPacket, IConnectPacket, IPublishPacket, Packet } from 'mqtt-packet';
import { createGateway } from '../../src/gateway/gateway.js';
import { HELLO_GRACE_MS } from '../../src/gateway/waiters.js';
import { createInProcessBus } from '../../src/bus/in-process.js';
import type { CloudEvent, DeviceAnswer, DeviceCommand } from '../../src/bus/bus.js';
import { FailureLimiter } from '../../src/domain/failure-limiter.js';
import { manualClock } from '../../src/platform/clock.js';
import type { Log } from '../../src/platform/log.js';
import type { DeviceOwner, DeviceRecord } from '../../src/repositories/devices.repository.js';

/**
 * The gateway's packet handlers in-process: devices are in-memory streams speaking mqtt-packet
 * (as Aedes' tests pair streams with it), with no sockets, no storage and a manual clock, so
 * keep-alive and the hello grace are tested by moving time rather than waiting for it. Devices
 * on real ports with mqtt.js: test/gateway-plain-mqtt.test.ts, test/gateway-bad-input.test.ts.
 */

const SECRET = 'right';
const OWNER: DeviceOwner = { kind: 'user', id: 'u1' };
const silent: Log = { error() {}, warn() {}, info() {}, debug() {} };
let nextDevice = 1;
const newId = () => (nextDevice++).toString(16).padStart(24, '0');

/** Two ends of an in-memory connection; the gateway's end records how many packets each write carried. */
function pair(): { gatewayEnd: Duplex; deviceEnd: Duplex; writes: number[] } {
  const writes: number[] = [];
  const ends: { device?: Duplex } = {};
  const gatewayEnd = new Duplex({
    allowHalfOpen: false,
    read() {},
    write(chunk: Buffer, _encoding, done) { writes.push(1); ends.device?.push(chunk); done(); },
    writev(chunks, done) { writes.push(chunks.length); ends.device?.push(Buffer.concat(chunks.map((c) => c.chunk as Buffer))); done(); },
    final(done) { ends.device?.push(null); done(); },
  });
  const deviceEnd = new Duplex({
    allowHalfOpen: false,
    read() {},
    write(chunk: Buffer, _encoding, done) { gatewayEnd.push(chunk); done(); },
    final(done) { gatewayEnd.push(null); done(); },
  });
  ends.device = deviceEnd;
  return { gatewayEnd, deviceEnd, writes };
}

/** A device at the other end of a pair: sends packets, takes the ones the gateway sends. */
class Device {
  private readonly parser: ReturnType<typeof mqttPacket.parser>;
  private readonly inbox: Packet[] = [];
  private readonly wanted: Array<{ match: (p: Packet) => boolean; resolve: (p: Packet) => void }> = [];
  readonly ended: Promise<void>;
  /** Answers the cloud's calls and reads (null: leaves them unanswered). */
  answer: ((topic: string, body: Record<string, unknown>) => void) | null = null;

  constructor(readonly id: string, private readonly end: Duplex, readonly version: 4 | 5) {
    this.parser = mqttPacket.parser({ protocolVersion: version });
    this.parser.on('packet', (p: Packet) => this.arrived(p));
    end.on('data', (chunk: Buffer) => this.parser.parse(chunk));
    this.ended = new Promise((resolve) => end.once('end', () => resolve()));
  }

  private arrived(p: Packet): void {
    if (p.cmd === 'publish' && this.answer && /\/cloud\/(call|get|config\/set)$/.test(p.topic)) {
      this.answer(p.topic, JSON.parse(p.payload.toString()) as Record<string, unknown>);
    }
    const i = this.wanted.findIndex((w) => w.match(p));
    if (i >= 0) this.wanted.splice(i, 1)[0]!.resolve(p);
    else this.inbox.push(p);
  }

  send(...packets: Packet[]): void {
    this.end.write(Buffer.concat(packets.map((p) => mqttPacket.generate(p, { protocolVersion: this.version }))));
  }

  /** The first packet from the gateway, not taken yet, that matches. */
  take<P extends Packet = Packet>(match: (p: Packet) => boolean): Promise<P> {
    const i = this.inbox.findIndex(match);
    if (i >= 0) return Promise.resolve(this.inbox.splice(i, 1)[0] as P);
    return new Promise((resolve) => this.wanted.push({ match, resolve: resolve as (p: Packet) => void }));
  }

  takeCmd<P extends Packet = Packet>(cmd: Packet['cmd']): Promise<P> {
    return this.take<P>((p) => p.cmd === cmd);
  }

  takePublish(topic: string): Promise<IPublishPacket> {
    return this.take<IPublishPacket>((p) => p.cmd === 'publish' && p.topic === topic);
  }

  async subscribe(filter: string, qos: 0 | 1 = 1): Promise<number[]> {
    this.send({ cmd: 'subscribe', messageId: 1, subscriptions: [{ topic: filter, qos }] });
    return (await this.takeCmd<mqttPacket.ISubackPacket>('suback')).granted as number[];
  }

  async unsubscribe(filter: string): Promise<void> {
    this.send({ cmd: 'unsubscribe', messageId: 2, unsubscriptions: [filter] });
    await this.takeCmd('unsuback');
  }

  /** Publishes at QoS 1 and waits for the PUBACK, so the gateway has handled it. */
  async publish(leaf: string, body: unknown): Promise<void> {
    this.send({ cmd: 'publish', topic: `devices/${this.id}/${leaf}`, payload: Buffer.from(JSON.stringify(body)), qos: 1, messageId: 7, dup: false, retain: false });
    await this.takeCmd('puback');
  }

  hello(functions: string[], variables: Record<string, string> = {}): Promise<void> {
    return this.publish('hello', { functions, variables });
  }
}

const connectPacket = (id: string, extra: Partial<IConnectPacket> = {}): IConnectPacket => ({
  cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, clientId: id, username: id, password: Buffer.from(SECRET), keepalive: 0, ...extra,
});

/** A gateway on an in-process bus with a manual clock; devices authenticate with SECRET. */
function world() {
  const clock = manualClock();
  const bus = createInProcessBus();
  const events: CloudEvent[] = [];
  bus.subscribe((e) => events.push(e));
  let requests = 0;
  const gateway = createGateway({
    bus, clock, log: () => silent,
    secrets: { token: () => `req${++requests}` },
    presence: { connected() {}, disconnected() {}, heard() {}, describe() {}, settle: async () => undefined },
    limiter: new FailureLimiter(clock, { maxConsecutive: 10, lockoutSeconds: 60, maxPerWindow: 100, windowSeconds: 60 }, { shared: () => bus.shared.table('connects', 60_000) }),
    authenticate: async (id, secret) => (secret === SECRET
      ? { id, platformId: 12, productId: 1, owner: OWNER, functions: [], variables: {}, systemFirmwareVersion: '5.8.0' } as unknown as DeviceRecord
      : null),
    claim: async () => { throw new Error('no claims here'); },
    configHello: () => undefined,
  });
  return {
    clock, bus, events, gateway,
    /** Opens a connection; nothing is sent yet. */
    open(id = newId(), version: 4 | 5 = 4) {
      const { gatewayEnd, deviceEnd, writes } = pair();
      gateway.accept(gatewayEnd, '10.0.0.1');
      return { device: new Device(id, deviceEnd, version), writes };
    },
    /** A connected device (CONNACK accepted). */
    async connect(options: { version?: 4 | 5; connect?: Partial<IConnectPacket> } = {}) {
      const version = options.version ?? 4;
      const opened = this.open(newId(), version);
      opened.device.send(connectPacket(opened.device.id, { protocolVersion: version, ...options.connect }));
      const connack = await opened.device.takeCmd<IConnackPacket>('connack');
      assert.equal(version === 5 ? connack.reasonCode : connack.returnCode, 0);
      return opened;
    },
    send: (id: string, command: DeviceCommand, timeoutMs = 60_000): Promise<DeviceAnswer> => bus.send(id, command, timeoutMs),
  };
}

test('CONNECT on MQTT 3.1.1 and 5 is answered CONNACK; a wrong secret is refused; a second CONNECT closes the connection', async () => {
  const w = world();
  const v4 = await w.connect();
  const v5 = await w.connect({ version: 5 });
  assert.equal(w.gateway.size, 2);

  const wrong = w.open();
  wrong.device.send(connectPacket(wrong.device.id, { password: Buffer.from('wrong') }));
  assert.equal((await wrong.device.takeCmd<IConnackPacket>('connack')).returnCode, 4);
  await wrong.device.ended;

  // [MQTT-3.1.0-2]; on MQTT 5 the cloud says why first (0x81, malformed packet).
  v5.device.send(connectPacket(v5.device.id, { protocolVersion: 5 }));
  assert.equal((await v5.device.takeCmd<mqttPacket.IDisconnectPacket>('disconnect')).reasonCode, 0x81);
  await v5.device.ended;
  v4.device.send(connectPacket(v4.device.id));
  await v4.device.ended;
  assert.equal(w.gateway.size, 0);
  await w.gateway.close();
});

test('packets sent between CONNECT and CONNACK are handled after CONNACK, in order', async () => {
  const w = world();
  const { device } = w.open();
  device.send(
    connectPacket(device.id),
    { cmd: 'subscribe', messageId: 3, subscriptions: [{ topic: `devices/${device.id}/cloud/#`, qos: 1 }] },
    { cmd: 'pingreq' },
  );
  const order = [await device.take(() => true), await device.take(() => true), await device.take(() => true)].map((p) => p.cmd);
  assert.deepEqual(order, ['connack', 'suback', 'pingresp']);
  await w.gateway.close();
});

test('a reply settles only a call or a read, and a config/ack only a configuration module', async () => {
  const w = world();
  const { device } = await w.connect();
  await device.subscribe(`devices/${device.id}/cloud/#`);
  await device.hello(['led'], { temp: 'double' });
  // Each request is first answered on the other kind's topic, then on its own.
  device.answer = (topic, body) => {
    const id = body.id as string;
    if (topic.endsWith('/cloud/config/set')) {
      device.send(
        { cmd: 'publish', topic: `devices/${device.id}/reply`, payload: JSON.stringify({ id, return_value: 99 }), qos: 0, dup: false, retain: false },
        { cmd: 'publish', topic: `devices/${device.id}/config/ack`, payload: JSON.stringify({ id, status: -22 }), qos: 0, dup: false, retain: false },
      );
    } else {
      device.send(
        { cmd: 'publish', topic: `devices/${device.id}/config/ack`, payload: JSON.stringify({ id, status: 0 }), qos: 0, dup: false, retain: false },
        { cmd: 'publish', topic: `devices/${device.id}/reply`, payload: JSON.stringify(topic.endsWith('/get') ? { id, result: 21.5 } : { id, return_value: 7 }), qos: 0, dup: false, retain: false },
      );
    }
  };
  assert.deepEqual(await w.send(device.id, { kind: 'call', name: 'led', arg: 'on' }), { ok: true, value: 7 });
  assert.deepEqual(await w.send(device.id, { kind: 'get', name: 'temp' }), { ok: true, value: 21.5 });
  assert.deepEqual(await w.send(device.id, { kind: 'config', module: 'rgb', value: { type: 'off' }, hash: 'h1' }), { ok: true, value: -22 });
  await w.gateway.close();
});

test('a call in the hello grace waits for the device to subscribe and say hello, then goes ahead', async () => {
  const w = world();
  const { device } = await w.connect();
  const call = w.send(device.id, { kind: 'call', name: 'led', arg: 'on' });
  device.answer = (_topic, body) => void device.publish('reply', { id: body.id, return_value: 2 });
  await device.subscribe(`devices/${device.id}/cloud/#`);
  w.clock.advance(HELLO_GRACE_MS - 1);
  await device.hello(['led']);
  assert.deepEqual(await call, { ok: true, value: 2 });
  await w.gateway.close();
});

test('once the hello grace is over by the clock, a call for a function the device never named fails at once', async () => {
  const w = world();
  const { device } = await w.connect();
  await device.subscribe(`devices/${device.id}/cloud/#`);
  device.answer = (_topic, body) => void device.publish('reply', { id: body.id, return_value: 1 });
  w.clock.advance(HELLO_GRACE_MS);
  const failed = assert.rejects(w.send(device.id, { kind: 'call', name: 'led', arg: 'on' }), { code: 'function_not_found' });
  // Had the call waited, this hello would let it through and the device would answer it.
  await device.hello(['led']);
  await failed;
  await w.gateway.close();
});

test('a call waiting in the grace fails at the device\'s next word once the grace ran out by the clock', async () => {
  const w = world();
  const { device } = await w.connect();
  device.answer = (_topic, body) => void device.publish('reply', { id: body.id, return_value: 1 });
  const failed = assert.rejects(w.send(device.id, { kind: 'call', name: 'led', arg: 'on' }), { code: 'function_not_found' });
  w.clock.advance(HELLO_GRACE_MS);
  await device.subscribe(`devices/${device.id}/cloud/#`);
  // Had the call kept waiting, this hello would let it through.
  await device.hello(['led']);
  await failed;
  await w.gateway.close();
});

test('the wait in the grace ends with the call\'s own timeout', async () => {
  const w = world();
  const { device } = await w.connect();
  await device.subscribe(`devices/${device.id}/cloud/#`);
  await assert.rejects(w.send(device.id, { kind: 'get', name: 'temp' }, 50), { code: 'variable_not_found' });
  await w.gateway.close();
});

test('keep-alive by the clock: silent for more than 1.5 times the keep-alive, a device is disconnected and its will published; any packet keeps it', async () => {
  const w = world();
  const will = { topic: '', payload: Buffer.from(JSON.stringify({ data: 'gone' })), qos: 0 as const, retain: false };
  const id = newId();
  const { device } = w.open(id);
  device.send(connectPacket(id, { keepalive: 10, will: { ...will, topic: `devices/${id}/events/lastwill` } }));
  await device.takeCmd('connack');

  w.clock.advance(15_000);
  w.gateway.sweep();
  assert.ok(w.gateway.holds(id), 'kept at exactly 1.5 times the keep-alive');
  device.send({ cmd: 'pingreq' });
  await device.takeCmd('pingresp');
  w.clock.advance(15_000);
  w.gateway.sweep();
  assert.ok(w.gateway.holds(id), 'the PINGREQ counted');
  w.clock.advance(1);
  w.gateway.sweep();
  assert.equal(w.gateway.holds(id), false);
  await device.ended;
  assert.deepEqual(w.events.filter((e) => e.coreid === id).map((e) => [e.name, e.data]), [['spark/status', 'online'], ['lastwill', 'gone'], ['spark/status', 'offline']]);
  await w.gateway.close();
});

test('a connection that sends no CONNECT within 10 s by the clock is closed', async () => {
  const w = world();
  const late = w.open();
  const silentOne = w.open();
  w.clock.advance(10_000);
  w.gateway.sweep();
  late.device.send(connectPacket(late.device.id));
  assert.equal((await late.device.takeCmd<IConnackPacket>('connack')).returnCode, 0, 'still open at the deadline');
  w.clock.advance(1);
  w.gateway.sweep();
  await silentOne.device.ended;
  assert.ok(w.gateway.holds(late.device.id));
  await w.gateway.close();
});

test('events follow the subscriptions as they change: the QoS granted, a filter subscribed again, an unsubscribe', async () => {
  const w = world();
  const { device } = await w.connect();
  const base = `devices/${device.id}/cloud`;
  assert.deepEqual(await device.subscribe(`${base}/signal`, 0), [0]);
  assert.deepEqual(await device.subscribe('devices/+/cloud/#'), [0x80], 'a wildcard before the device id is refused');
  const event = (data: string): CloudEvent => ({ name: 'alarm', data, ttl: 60, published_at: w.clock.now().toISOString(), coreid: 'api', private: true, owner: OWNER, productId: null });

  assert.deepEqual(await device.subscribe(`${base}/events/#`, 0), [0]);
  w.bus.publish(event('one'));
  assert.equal((await device.takePublish(`${base}/events/alarm`)).qos, 0);
  assert.deepEqual(await device.subscribe(`${base}/events/#`, 1), [1]);
  w.bus.publish(event('two'));
  const two = await device.takePublish(`${base}/events/alarm`);
  assert.equal(two.qos, 1);
  assert.equal(JSON.parse(two.payload.toString()).data, 'two');

  await device.unsubscribe(`${base}/events/#`);
  w.bus.publish(event('three'));
  assert.deepEqual(await w.send(device.id, { kind: 'signal', on: true }), { ok: true, value: true });
  const next = await device.take((p) => p.cmd === 'publish');
  assert.equal((next as IPublishPacket).topic, `${base}/signal`, 'the event after the unsubscribe was not delivered');
  await w.gateway.close();
});

test('what the cloud sends a device in one turn of the event loop leaves in one write', async () => {
  const w = world();
  const { device, writes } = await w.connect();
  await device.subscribe(`devices/${device.id}/cloud/#`, 0);
  await device.hello(['f']);
  device.answer = (_topic, body) => device.send({ cmd: 'publish', topic: `devices/${device.id}/reply`, payload: JSON.stringify({ id: body.id, return_value: 1 }), qos: 0, dup: false, retain: false });
  const before = writes.length;
  const calls = [1, 2, 3].map(() => w.send(device.id, { kind: 'call', name: 'f', arg: '' }));
  assert.deepEqual(await Promise.all(calls), [1, 2, 3].map(() => ({ ok: true, value: 1 })));
  assert.deepEqual(writes.slice(before), [3]);
  await w.gateway.close();
});
