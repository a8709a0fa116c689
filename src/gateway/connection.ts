import type { Duplex } from 'node:stream';
import mqttPacket from 'mqtt-packet';
import type { IConnectPacket, IPublishPacket, ISubscribePacket, IUnsubscribePacket, Packet } from 'mqtt-packet';
import { DomainError, isDomainError } from '../domain/errors.js';
import { isDeviceId } from '../domain/devices.js';
import { randomText } from '../platform/secrets.js';
import {
  BadPayload, cloudEventTopic, cloudTopic, mayDeviceSubscribe, parseClaim, parseConfigAck, parseConfigHello, parseDeviceEvent, parseDeviceTopic, parseHello, parseReply,
  publishLimit, topicMatches,
} from '../domain/device-protocol.js';
import type { CloudEvent, DeviceAnswer, DeviceCommand } from '../bus/bus.js';
import type { DeviceOwner } from '../repositories/devices.repository.js';
import type { GatewayContext, SessionDevice } from './context.js';

/** MQTT 3.1.1 §3.2.2.3 CONNACK return codes and their MQTT 5 §3.2.2.2 reason codes. */
const REFUSED = {
  version: { v4: 1, v5: 0x84 },
  identifier: { v4: 2, v5: 0x85 },
  unavailable: { v4: 3, v5: 0x88 },
  credentials: { v4: 4, v5: 0x86 },
  banned: { v4: 5, v5: 0x8a },
} as const;

const MAX_PENDING = 32;
/**
 * A device subscribes and says `hello` right after CONNACK; for this long after CONNACK a call
 * the device would be refused for waits for its next `hello` or SUBSCRIBE instead of failing at
 * once (docs/device-protocol.md, "Function calls").
 */
export const HELLO_GRACE_MS = 5000;
const MAX_SUBSCRIPTIONS = 32;
/** Outgoing bytes a slow device may leave unread before the cloud drops messages to it. */
const MAX_BUFFERED = 256 * 1024;

interface Pending {
  resolve(answer: DeviceAnswer): void;
  reject(err: unknown): void;
  timer: NodeJS.Timeout;
}

/**
 * One device's MQTT connection (docs/device-protocol.md): CONNECT and authentication, the topic
 * rules on every PUBLISH and SUBSCRIBE, requests from the bus with their correlation ids, and
 * events both ways. The gateway (gateway.ts) owns the table of connections.
 */
export class DeviceConnection {
  state: 'connecting' | 'authenticating' | 'connected' | 'closed' = 'connecting';
  device: SessionDevice | null = null;
  readonly openedAt = Date.now();
  lastSeen = Date.now();
  keepaliveSeconds = 0;
  /** Set when a newer connection of the same device took over. */
  replaced = false;

  private version: 4 | 5 = 4;
  private readonly parser = mqttPacket.parser();
  private readonly queued: Packet[] = [];
  private subscriptions: Array<{ filter: string; qos: 0 | 1 }> = [];
  private readonly pending = new Map<string, Pending>();
  private will: { topic: string; payload: Buffer } | null = null;
  private nextMessageId = 1;
  private lastHeardWrite = 0;
  private connectedAt = 0;
  /** Calls waiting for this new connection's `hello` or subscriptions (see HELLO_GRACE_MS). */
  private readonly waiters = new Set<() => void>();

  constructor(private readonly ctx: GatewayContext, private readonly stream: Duplex, readonly ip: string) {
    this.parser.on('packet', (packet: Packet) => this.onPacket(packet));
    this.parser.on('error', (err: Error) => this.protocolError(err.message));
    stream.on('data', (chunk: Buffer) => this.onData(chunk));
    stream.on('error', () => this.close('socket error'));
    stream.on('close', () => this.close('socket closed'));
  }

  get deviceId(): string | null {
    return this.device?.id ?? null;
  }

  private onData(chunk: Buffer): void {
    if (this.state === 'closed') return;
    this.lastSeen = Date.now();
    this.parser.parse(chunk);
    // The parser buffers a packet until it is whole; refuse to buffer one larger than the limit.
    this.checkSize((this.parser as unknown as { packet: { length: number } }).packet.length);
  }

  private checkSize(length: number | undefined): boolean {
    if (length === undefined || length <= this.ctx.maxPacketBytes || this.state === 'closed') return true;
    this.ctx.log.warn({ device: this.deviceId, ip: this.ip, length }, 'packet too large; closing');
    if (this.state === 'connected' && this.version === 5) this.send({ cmd: 'disconnect', reasonCode: 0x95 });
    this.destroy();
    return false;
  }

  private onPacket(packet: Packet): void {
    // A packet that arrived whole in one chunk is checked here.
    if (this.state === 'closed' || !this.checkSize(packet.length)) return;
    if (this.state === 'connecting') {
      if (packet.cmd !== 'connect') return this.protocolError(`first packet was ${packet.cmd}, not connect`);
      this.state = 'authenticating';
      void this.onConnect(packet).catch((err) => {
        this.ctx.log.error({ err, ip: this.ip }, 'connect failed');
        this.refuse('unavailable');
      });
      return;
    }
    // MQTT allows packets right after CONNECT, before CONNACK: keep them until the device is known.
    if (this.state === 'authenticating') {
      if (this.queued.length < 64) this.queued.push(packet);
      else this.destroy();
      return;
    }
    this.handle(packet);
  }

  private handle(packet: Packet): void {
    this.heard();
    switch (packet.cmd) {
      case 'publish': return this.onPublish(packet);
      case 'pubrel': return this.send({ cmd: 'pubcomp', messageId: packet.messageId ?? 0 });
      case 'subscribe': return this.onSubscribe(packet);
      case 'unsubscribe': return this.onUnsubscribe(packet);
      case 'pingreq': return this.send({ cmd: 'pingresp' });
      case 'disconnect':
        this.will = null;
        return this.destroy();
      case 'puback': case 'pubrec': case 'pubcomp':
        if (packet.cmd === 'pubrec') this.send({ cmd: 'pubrel', messageId: packet.messageId ?? 0 });
        return;
      default:
        return this.protocolError(`unexpected ${packet.cmd}`);
    }
  }

  private async onConnect(packet: IConnectPacket): Promise<void> {
    const version = packet.protocolVersion;
    if (version !== 4 && version !== 5) {
      this.version = 4;
      return this.refuse('version');
    }
    this.version = version;
    if (version === 5) (this.parser as unknown as { settings: { protocolVersion: number } }).settings.protocolVersion = 5;
    this.keepaliveSeconds = packet.keepalive ?? 0;

    const id = (packet.username || packet.clientId || '').toLowerCase();
    if (!isDeviceId(id) || (packet.clientId && packet.clientId.toLowerCase() !== id)) return this.refuse('identifier');
    const key = `device:${id}@${this.ip}`;
    try {
      this.ctx.limiter.check(key, this.ip);
    } catch {
      this.ctx.log.warn({ device: id, ip: this.ip }, 'device connect refused: too many failures from this address');
      return this.refuse('banned');
    }
    const secret = packet.password ? packet.password.toString('utf8') : '';
    const device = await this.ctx.authenticate(id, secret);
    if (this.state !== 'authenticating') return; // the socket went away meanwhile
    if (!device) {
      this.ctx.limiter.fail(key, this.ip);
      this.ctx.log.info({ device: id, ip: this.ip }, 'device connect refused: unknown device or wrong secret');
      return this.refuse('credentials');
    }
    if (this.ctx.closing()) return this.refuse('unavailable');
    this.ctx.limiter.succeed(key);
    this.device = device;
    if (packet.will && parseDeviceTopic(id, packet.will.topic)?.kind === 'event') {
      this.will = { topic: packet.will.topic, payload: Buffer.from(packet.will.payload) };
    }
    this.state = 'connected';
    this.connectedAt = Date.now();
    this.send(this.version === 5
      ? { cmd: 'connack', sessionPresent: false, reasonCode: 0, properties: { maximumPacketSize: this.ctx.maxPacketBytes, retainAvailable: false, maximumQoS: 1 } }
      : { cmd: 'connack', sessionPresent: false, returnCode: 0 });
    this.ctx.attached(this);
    for (const p of this.queued.splice(0)) this.handle(p);
  }

  private refuse(why: keyof typeof REFUSED): void {
    const code = REFUSED[why];
    this.send(this.version === 5 ? { cmd: 'connack', sessionPresent: false, reasonCode: code.v5 } : { cmd: 'connack', sessionPresent: false, returnCode: code.v4 });
    this.destroy();
  }

  private onPublish(packet: IPublishPacket): void {
    const device = this.device as SessionDevice;
    const payload = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload;
    const target = parseDeviceTopic(device.id, packet.topic);
    const ack = (reasonCode: number) => {
      if (packet.qos === 1) this.send(this.version === 5 ? { cmd: 'puback', messageId: packet.messageId ?? 0, reasonCode } : { cmd: 'puback', messageId: packet.messageId ?? 0 });
      if (packet.qos === 2) this.send(this.version === 5 ? { cmd: 'pubrec', messageId: packet.messageId ?? 0, reasonCode } : { cmd: 'pubrec', messageId: packet.messageId ?? 0 });
    };
    if (!target) {
      this.ctx.log.warn({ device: device.id, topic: packet.topic.slice(0, 200) }, 'publish to a topic the device may not use; dropped');
      return ack(0x87);
    }
    ack(0);
    try {
      switch (target.kind) {
        case 'hello': return this.onHello(payload);
        case 'reply': return this.onReply(payload);
        case 'claim': return this.onClaim(payload);
        case 'event': return this.onEvent(target.name, payload);
        case 'config': return target.path === 'hello' ? this.ctx.configHello(this.device!.id, parseConfigHello(payload)) : this.onConfigAck(payload);
      }
    } catch (err) {
      if (err instanceof BadPayload) return this.reportError(packet.topic, 'bad_payload', err.message);
      throw err;
    }
  }

  private onHello(payload: Buffer): void {
    const hello = parseHello(payload);
    const device = this.device as SessionDevice;
    if (hello.functions) device.functions = hello.functions;
    if (hello.variables) device.variables = hello.variables;
    if (hello.systemFirmwareVersion) device.systemFirmwareVersion = hello.systemFirmwareVersion;
    this.ctx.describe(device.id, hello);
    this.wakeWaiters();
  }

  private wakeWaiters(): void {
    for (const wake of this.waiters) wake();
    this.waiters.clear();
  }

  /** What the device would refuse this command for now, by its `hello` and its subscriptions. */
  private refusal(command: Exclude<DeviceCommand, { kind: 'ping' | 'signal' }>): DomainError | undefined {
    const device = this.device as SessionDevice;
    if (command.kind === 'call' && !device.functions.includes(command.name)) return new DomainError('function_not_found', `The device has no function "${command.name}"`);
    if (command.kind === 'get' && !(command.name in device.variables)) return new DomainError('variable_not_found', `The device has no variable "${command.name}"`);
    const topic = cloudTopic(device.id, command.kind === 'config' ? 'config/set' : command.kind);
    if (!this.subscribed(topic)) return new DomainError('device_error', `The device is not subscribed to ${topic}, so it cannot take calls`);
    return undefined;
  }

  /**
   * While the connection is new (HELLO_GRACE_MS), resolves at its next `hello` or SUBSCRIBE, or
   * when the grace or `leftMs` runs out; afterwards undefined.
   */
  private untilDeviceSaysMore(leftMs: number): Promise<void> | undefined {
    const left = Math.min(leftMs, HELLO_GRACE_MS - (Date.now() - this.connectedAt));
    if (left <= 0) return undefined;
    return new Promise<void>((resolve) => {
      const wake = () => { clearTimeout(timer); this.waiters.delete(wake); resolve(); };
      const timer = setTimeout(wake, left);
      this.waiters.add(wake);
    });
  }

  private onReply(payload: Buffer): void {
    const reply = parseReply(payload);
    const waiting = this.pending.get(reply.id);
    if (!waiting) return; // late, or not ours: dropped (docs/device-protocol.md, "Function calls")
    this.pending.delete(reply.id);
    clearTimeout(waiting.timer);
    waiting.resolve(reply.ok ? { ok: true, value: reply.value } : { ok: false, error: reply.error });
  }

  private onConfigAck(payload: Buffer): void {
    const ack = parseConfigAck(payload);
    const waiting = this.pending.get(ack.id);
    if (!waiting) return;
    this.pending.delete(ack.id);
    clearTimeout(waiting.timer);
    waiting.resolve({ ok: true, value: ack.status });
  }

  private onClaim(payload: Buffer): void {
    const code = parseClaim(payload);
    const device = this.device as SessionDevice;
    this.ctx.claim(device.id, code).then(
      (owner: DeviceOwner) => {
        this.ctx.moved(this, { owner, productId: device.productId });
        this.publishToDevice(cloudTopic(device.id, 'claim'), { ok: true });
      },
      (err: unknown) => {
        const error = isDomainError(err) ? (err.code === 'device_claimed_by_other' ? 'device_claimed' : err.code) : 'server_error';
        if (!isDomainError(err)) this.ctx.log.error({ err, device: device.id }, 'claim failed');
        this.publishToDevice(cloudTopic(device.id, 'claim'), { ok: false, error });
      },
    );
  }

  private onEvent(name: string, payload: Buffer): void {
    const device = this.device as SessionDevice;
    if (name.startsWith('spark/')) throw new BadPayload('event names that start with spark/ are reserved for the cloud');
    const e = parseDeviceEvent(payload, publishLimit(device.systemFirmwareVersion, device.platformId));
    this.ctx.publishEvent(this, { name, data: e.data, ttl: e.ttl, private: e.private });
  }

  private onSubscribe(packet: ISubscribePacket): void {
    const device = this.device as SessionDevice;
    const granted = packet.subscriptions.map(({ topic, qos }) => {
      if (!mayDeviceSubscribe(device.id, topic) || this.subscriptions.length >= MAX_SUBSCRIPTIONS) {
        this.ctx.log.warn({ device: device.id, filter: topic.slice(0, 200) }, 'subscription refused');
        return this.version === 5 ? 0x87 : 0x80;
      }
      const q = (qos >= 1 ? 1 : 0) as 0 | 1;
      this.subscriptions = [...this.subscriptions.filter((s) => s.filter !== topic), { filter: topic, qos: q }];
      return q;
    });
    this.send({ cmd: 'suback', messageId: packet.messageId ?? 0, granted });
    this.wakeWaiters();
  }

  private onUnsubscribe(packet: IUnsubscribePacket): void {
    this.subscriptions = this.subscriptions.filter((s) => !packet.unsubscriptions.includes(s.filter));
    this.send(this.version === 5
      ? { cmd: 'unsuback', messageId: packet.messageId ?? 0, granted: packet.unsubscriptions.map(() => 0) }
      : { cmd: 'unsuback', messageId: packet.messageId ?? 0, granted: [] });
  }

  /** Serves a command from the bus (docs/device-protocol.md, "Function calls", "Variable reads"). */
  async serve(command: DeviceCommand, timeoutMs: number): Promise<DeviceAnswer> {
    if (this.state !== 'connected' || !this.device) throw new DomainError('device_offline', 'The device is not connected to the cloud');
    if (command.kind === 'ping') return { ok: true, value: true };
    if (command.kind === 'signal') {
      this.publishToDevice(cloudTopic(this.device.id, 'signal'), { signal: command.on });
      return { ok: true, value: command.on };
    }
    // Just after CONNACK the device may not have subscribed or said `hello` yet: what it would be
    // refused for may be on its way (HELLO_GRACE_MS).
    const started = Date.now();
    for (;;) {
      if (this.state !== 'connected') throw new DomainError('device_offline', 'The device disconnected before it answered');
      const refused = this.refusal(command);
      if (!refused) break;
      const more = this.untilDeviceSaysMore(timeoutMs - (Date.now() - started));
      if (!more) throw refused;
      await more;
    }
    timeoutMs = Math.max(1, timeoutMs - (Date.now() - started));
    const device = this.device;
    if (command.kind === 'call') {
      const limit = publishLimit(device.systemFirmwareVersion, device.platformId);
      if (Buffer.byteLength(command.arg) > limit) throw new DomainError('invalid_request', `The argument is ${Buffer.byteLength(command.arg)} bytes; this device takes at most ${limit}`);
    }
    if (this.pending.size >= MAX_PENDING) throw new DomainError('rate_limit_exceeded', `The device already has ${MAX_PENDING} calls waiting`, { retryAfterSeconds: 1 });
    const topic = cloudTopic(device.id, command.kind === 'config' ? 'config/set' : command.kind);

    const id = randomText(6, 'base64url');
    const answer = new Promise<DeviceAnswer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new DomainError('device_timeout', `The device did not answer within ${Math.round(timeoutMs / 100) / 10} s`));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
    });
    // QoS 0 whatever the subscription: the reply is the acknowledgement, and a PUBACK before it
    // would hold the reply back behind Nagle's algorithm on devices that leave it on.
    const body = command.kind === 'call' ? { id, name: command.name, arg: command.arg }
      : command.kind === 'get' ? { id, name: command.name }
        : { id, module: command.module, value: command.value, hash: command.hash };
    this.publishRaw(topic, Buffer.from(JSON.stringify(body)), 0);
    return answer;
  }

  /** Delivers an event if the device subscribed to it (docs/device-protocol.md, "Events"). */
  deliver(event: CloudEvent): void {
    const device = this.device;
    if (!device || this.state !== 'connected' || event.coreid === device.id) return;
    const topic = cloudEventTopic(device.id, event.name);
    const sub = this.subscriptionFor(topic);
    if (!sub) return;
    this.publishRaw(topic, Buffer.from(JSON.stringify({ name: event.name, data: event.data, ttl: event.ttl, published_at: event.published_at, coreid: event.coreid })), sub.qos);
  }

  /** The best subscription for a topic, remembered until the subscriptions change (every call asks). */
  private subscriptionFor(topic: string) {
    // Made on first use and dropped with the subscriptions it was computed from: an idle
    // connection carries no map.
    if (this.matched === undefined || this.matched.subscriptions !== this.subscriptions || this.matched.best.size >= 256) {
      this.matched = { subscriptions: this.subscriptions, best: new Map() };
    }
    const best = this.matched.best;
    if (best.has(topic)) return best.get(topic);
    let found: { filter: string; qos: 0 | 1 } | undefined;
    for (const s of this.subscriptions) if (topicMatches(s.filter, topic) && (!found || s.qos > found.qos)) found = s;
    best.set(topic, found);
    return found;
  }

  private matched: { subscriptions: unknown; best: Map<string, { filter: string; qos: 0 | 1 } | undefined> } | undefined;

  private subscribed(topic: string): boolean {
    return this.subscriptionFor(topic) !== undefined;
  }

  private publishToDevice(topic: string, body: unknown): void {
    const sub = this.subscriptionFor(topic);
    if (sub) this.publishRaw(topic, Buffer.from(JSON.stringify(body)), sub.qos);
  }

  private publishRaw(topic: string, payload: Buffer, qos: 0 | 1): void {
    if (this.stream.writableLength > MAX_BUFFERED) {
      this.ctx.log.warn({ device: this.deviceId, topic }, 'device is not reading; message dropped');
      return;
    }
    if (qos === 1) {
      const messageId = this.nextMessageId;
      this.nextMessageId = this.nextMessageId >= 65535 ? 1 : this.nextMessageId + 1;
      this.send({ cmd: 'publish', topic, payload, qos: 1, dup: false, retain: false, messageId });
    } else {
      this.send({ cmd: 'publish', topic, payload, qos: 0, dup: false, retain: false });
    }
  }

  private reportError(topic: string, error: string, message: string): void {
    const device = this.device as SessionDevice;
    this.ctx.log.info({ device: device.id, topic: topic.slice(0, 200), error }, message);
    this.publishToDevice(cloudTopic(device.id, 'error'), { topic, error, message });
  }

  private corked = false;

  /** Ends the cork of `send` (a static function: no closure per connection). */
  private static uncork(c: DeviceConnection): void {
    c.corked = false;
    c.stream.uncork();
  }

  private heard(): void {
    const now = Date.now();
    if (this.device && now - this.lastHeardWrite > 30_000) {
      this.lastHeardWrite = now;
      if (now - this.openedAt > 1000) this.ctx.heard(this.device.id);
    }
  }

  private send(packet: Packet): void {
    if (this.stream.destroyed || !this.stream.writable) return;
    // Packets for this device during one turn of the event loop (calls from many HTTP requests
    // read in the same poll) go out in one write: a write costs a system call whatever its size.
    if (!this.corked) {
      this.corked = true;
      this.stream.cork();
      setImmediate(DeviceConnection.uncork, this);
    }
    try {
      this.stream.write(mqttPacket.generate(packet, { protocolVersion: this.version }));
    } catch (err) {
      this.ctx.log.error({ err, cmd: packet.cmd }, 'could not encode a packet');
    }
  }

  private protocolError(message: string): void {
    this.ctx.log.info({ device: this.deviceId, ip: this.ip }, `MQTT protocol error: ${message}`);
    if (this.state === 'connected' && this.version === 5) this.send({ cmd: 'disconnect', reasonCode: 0x81 });
    this.destroy();
  }

  /** A newer connection of the same device takes over (MQTT 3.1.1 §3.1.4; MQTT 5 reason 0x8E). */
  replace(): void {
    this.replaced = true;
    this.will = null;
    if (this.version === 5) this.send({ cmd: 'disconnect', reasonCode: 0x8e });
    this.destroy();
  }

  /** The cloud is shutting down (MQTT 5 reason 0x8B). */
  shutdown(): void {
    this.will = null;
    if (this.state === 'connected' && this.version === 5) this.send({ cmd: 'disconnect', reasonCode: 0x8b });
    this.destroy();
  }

  /** Lost without DISCONNECT: keep-alive expired or never connected in time. */
  expire(): void {
    this.destroy();
  }

  private destroy(): void {
    if (this.stream.destroyed) return this.close('destroyed');
    this.stream.end();
    // Give the last packet (CONNACK refusal, DISCONNECT) a moment to leave, then cut.
    setTimeout(() => this.stream.destroy(), 50).unref();
    this.close('closing');
  }

  private close(reason: string): void {
    if (this.state === 'closed') return;
    const wasConnected = this.state === 'connected';
    this.state = 'closed';
    this.wakeWaiters();
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new DomainError('device_offline', 'The device disconnected before it answered'));
      this.pending.delete(id);
    }
    if (wasConnected && this.device && this.will) {
      const target = parseDeviceTopic(this.device.id, this.will.topic);
      try {
        if (target?.kind === 'event') this.onEvent(target.name, this.will.payload);
      } catch {
        // A malformed will is dropped like any malformed publish.
      }
    }
    this.ctx.detached(this, reason);
  }
}
