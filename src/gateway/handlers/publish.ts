import type { IPublishPacket } from 'mqtt-packet';
import { isDomainError } from '../../domain/errors.js';
import {
  BadPayload, CLAIMED_EVENT, cloudTopic, parseClaim, parseConfigAck, parseConfigHello, parseDeviceEvent, parseDeviceTopic, parseHello, parseReply, publishLimit,
} from '../../domain/device-protocol.js';
import { parseOtaMessage } from '../../domain/ota-protocol.js';
import type { SessionDevice } from '../context.js';
import type { Session } from '../session.js';
import { publishToDevice, reportError, send } from '../outgoing.js';
import { wakeWaiters } from '../waiters.js';

/**
 * PUBLISH from a device: only to its own device → cloud topics (docs/device-protocol.md,
 * "Topics"); anything else is dropped, and on MQTT 5 a QoS 1 publish hears 0x87 (not authorized).
 * A payload that is not what the topic takes is answered on `cloud/error`.
 */
export function publish(s: Session, packet: IPublishPacket): void {
  const device = s.device as SessionDevice;
  const target = parseDeviceTopic(device.id, packet.topic);
  if (!target) {
    s.ctx.log.warn({ device: device.id, topic: packet.topic.slice(0, 200) }, 'publish to a topic the device may not use; dropped');
    return acknowledgeAfter(s, packet, null, 0x87);
  }
  const payload = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload;
  let stored: Promise<void> | null = null;
  try {
    switch (target.kind) {
      case 'hello': hello(s, payload); break;
      case 'reply': reply(s, payload); break;
      case 'claim': claim(s, payload); break;
      case 'event': stored = deviceEvent(s, target.name, payload); break;
      case 'config': if (target.path === 'hello') s.ctx.configHello(device.id, parseConfigHello(payload)); else configAck(s, payload); break;
      case 'ota': {
        const refused = s.ctx.ota(device.id, parseOtaMessage(target.path, payload));
        if (refused) reportError(s, packet.topic, refused.error, refused.message);
        break;
      }
    }
  } catch (err) {
    if (!(err instanceof BadPayload)) throw err;
    reportError(s, packet.topic, 'bad_payload', err.message);
  }
  acknowledgeAfter(s, packet, stored);
}

/**
 * Acknowledgements one connection may have held back at most before the gateway stops reading
 * its socket, and how few before it reads again. An MQTT 3.1.1 client may publish without waiting
 * for its PUBACKs; while the store is slow, each waiting event (its deliveries, its place in the
 * order) would stay in memory, as many as the client sends. Not read, its packets wait in the
 * kernel's buffers and then in the client (TCP's flow control).
 */
export const ACKS_WAITING_MAX = 64;
const ACKS_WAITING_RESUME = 32;

/**
 * The PUBACK of an event that webhooks take goes once their deliveries are stored, so that an
 * acknowledged event is never lost (docs/webhooks.md, "At least once"). Acknowledgements keep the
 * order of their PUBLISHes: while one waits, the next wait behind it. When the deliveries cannot
 * be stored the event is not acknowledged: MQTT 5 hears reason 0x80; a 3.1.1 device, which has
 * no negative acknowledgement, is disconnected and sends it again when it is back.
 */
function acknowledgeAfter(s: Session, packet: IPublishPacket, stored: Promise<void> | null, reasonCode = 0): void {
  if (packet.qos === 0) return;
  if (stored === null && s.acksWaiting === 0) return acknowledge(s, packet, reasonCode);
  s.acksWaiting += 1;
  if (s.acksWaiting === ACKS_WAITING_MAX) s.stream.pause();
  const outcome = (stored ?? Promise.resolve()).then(() => reasonCode, (err: unknown) => {
    s.ctx.log.warn({ err, device: s.deviceId }, 'webhook deliveries could not be stored; the event is not acknowledged');
    return 0x80;
  });
  s.acks = Promise.all([s.acks, outcome]).then(([, code]) => {
    s.acksWaiting -= 1;
    if (s.state === 'closed') return;
    if (s.acksWaiting === ACKS_WAITING_RESUME && s.stream.isPaused()) s.stream.resume();
    if (code !== 0x80 || s.version === 5) acknowledge(s, packet, code);
    else s.expire();
  });
}

/** PUBACK for QoS 1, PUBREC for QoS 2 (handled once, on arrival); MQTT 5 adds the reason. */
function acknowledge(s: Session, packet: IPublishPacket, reasonCode: number): void {
  const messageId = packet.messageId ?? 0;
  const v5 = s.version === 5;
  if (packet.qos === 1) send(s, v5 ? { cmd: 'puback', messageId, reasonCode } : { cmd: 'puback', messageId });
  else if (packet.qos === 2) send(s, v5 ? { cmd: 'pubrec', messageId, reasonCode } : { cmd: 'pubrec', messageId });
}

function hello(s: Session, payload: Buffer): void {
  const said = parseHello(payload);
  const device = s.device as SessionDevice;
  if (said.functions) device.functions = said.functions;
  if (said.variables) device.variables = said.variables;
  if (said.systemFirmwareVersion) device.systemFirmwareVersion = said.systemFirmwareVersion;
  s.ctx.describe(device.id, said);
  const first = !s.helloed;
  s.helloed = true;
  s.ctx.firmwareHello(device.id, said, first);
  wakeWaiters(s);
}

/** `reply`: the answer to a function call or a variable read, never to anything else (calls.ts). */
function reply(s: Session, payload: Buffer): void {
  const r = parseReply(payload);
  s.calls?.settle(r.id, 'reply', r.ok ? { ok: true, value: r.value } : { ok: false, error: r.error });
}

/** `config/ack`: the device's status for one configuration module, never a call's answer. */
function configAck(s: Session, payload: Buffer): void {
  const ack = parseConfigAck(payload);
  s.calls?.settle(ack.id, 'config/ack', { ok: true, value: ack.status });
}

function claim(s: Session, payload: Buffer): void {
  const code = parseClaim(payload);
  const device = s.device as SessionDevice;
  s.ctx.claim(device.id, code).then(
    (to) => {
      s.ctx.moved(s, to);
      publishToDevice(s, cloudTopic(device.id, 'claim'), { ok: true });
      // The new owner's event streams see it happen: an app waiting for its device during
      // setup learns it is claimed without polling (docs/device-protocol.md, "Claiming").
      s.ctx.publishEvent(s, { name: CLAIMED_EVENT, data: 'claimed', ttl: 60, private: true })?.catch(() => undefined);
    },
    (err: unknown) => {
      const error = isDomainError(err) ? (err.code === 'device_claimed_by_other' ? 'device_claimed' : err.code) : 'server_error';
      if (!isDomainError(err)) s.ctx.log.error({ err, device: device.id }, 'claim failed');
      publishToDevice(s, cloudTopic(device.id, 'claim'), { ok: false, error });
    },
  );
}

function deviceEvent(s: Session, name: string, payload: Buffer): Promise<void> | null {
  const device = s.device as SessionDevice;
  if (name.startsWith('spark/')) throw new BadPayload('event names that start with spark/ are reserved for the cloud');
  const e = parseDeviceEvent(payload, publishLimit(device.systemFirmwareVersion, device.platformId));
  return s.ctx.publishEvent(s, { name, data: e.data, ttl: e.ttl, private: e.private });
}

/** A connection lost without DISCONNECT publishes its will, an event of the device's (connect.ts). */
export function publishWill(s: Session): void {
  const will = s.will;
  if (!will || !s.device) return;
  const target = parseDeviceTopic(s.device.id, will.topic);
  try {
    // Nothing to acknowledge: a delivery that cannot be stored is logged by the webhooks.
    if (target?.kind === 'event') deviceEvent(s, target.name, will.payload)?.catch(() => undefined);
  } catch {
    // A malformed will is dropped like any malformed publish.
  }
}
