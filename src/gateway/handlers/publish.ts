import type { IPublishPacket } from 'mqtt-packet';
import { isDomainError } from '../../domain/errors.js';
import {
  BadPayload, CLAIMED_EVENT, cloudTopic, parseClaim, parseConfigAck, parseConfigHello, parseDeviceEvent, parseDeviceTopic, parseHello, parseReply, publishLimit,
} from '../../domain/device-protocol.js';
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
    return acknowledge(s, packet, 0x87);
  }
  acknowledge(s, packet, 0);
  const payload = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload;
  try {
    switch (target.kind) {
      case 'hello': return hello(s, payload);
      case 'reply': return reply(s, payload);
      case 'claim': return claim(s, payload);
      case 'event': return deviceEvent(s, target.name, payload);
      case 'config': return target.path === 'hello' ? s.ctx.configHello(device.id, parseConfigHello(payload)) : configAck(s, payload);
    }
  } catch (err) {
    if (err instanceof BadPayload) return reportError(s, packet.topic, 'bad_payload', err.message);
    throw err;
  }
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
      s.ctx.publishEvent(s, { name: CLAIMED_EVENT, data: 'claimed', ttl: 60, private: true });
    },
    (err: unknown) => {
      const error = isDomainError(err) ? (err.code === 'device_claimed_by_other' ? 'device_claimed' : err.code) : 'server_error';
      if (!isDomainError(err)) s.ctx.log.error({ err, device: device.id }, 'claim failed');
      publishToDevice(s, cloudTopic(device.id, 'claim'), { ok: false, error });
    },
  );
}

function deviceEvent(s: Session, name: string, payload: Buffer): void {
  const device = s.device as SessionDevice;
  if (name.startsWith('spark/')) throw new BadPayload('event names that start with spark/ are reserved for the cloud');
  const e = parseDeviceEvent(payload, publishLimit(device.systemFirmwareVersion, device.platformId));
  s.ctx.publishEvent(s, { name, data: e.data, ttl: e.ttl, private: e.private });
}

/** A connection lost without DISCONNECT publishes its will, an event of the device's (connect.ts). */
export function publishWill(s: Session): void {
  const will = s.will;
  if (!will || !s.device) return;
  const target = parseDeviceTopic(s.device.id, will.topic);
  try {
    if (target?.kind === 'event') deviceEvent(s, target.name, will.payload);
  } catch {
    // A malformed will is dropped like any malformed publish.
  }
}
