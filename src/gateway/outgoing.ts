import mqttPacket from 'mqtt-packet';
import type { Packet } from 'mqtt-packet';
import { cloudEventTopic, cloudTopic } from '../domain/device-protocol.js';
import type { CloudEvent } from '../bus/bus.js';
import type { Session } from './session.js';
import { subscriptionFor } from './subscriptions.js';

/** Outgoing bytes a slow device may leave unread before the cloud drops messages to it. */
const MAX_BUFFERED = 256 * 1024;

/** Encoder options per protocol level, made once rather than per packet. */
const ENCODING = { 4: { protocolVersion: 4 }, 5: { protocolVersion: 5 } } as const;

/** Ends the cork of `send` (a static function: no closure per connection). */
function uncork(s: Session): void {
  s.corked = false;
  s.stream.uncork();
}

/** Writes one packet to the device. */
export function send(s: Session, packet: Packet): void {
  if (s.stream.destroyed || !s.stream.writable) return;
  // Packets for this device during one turn of the event loop (calls from many HTTP requests
  // read in the same poll) go out in one write: a write costs a system call whatever its size.
  if (!s.corked) {
    s.corked = true;
    s.stream.cork();
    setImmediate(uncork, s);
  }
  try {
    s.stream.write(mqttPacket.generate(packet, ENCODING[s.version]));
  } catch (err) {
    s.ctx.log.error({ err, cmd: packet.cmd }, 'could not encode a packet');
  }
}

/** Publishes to the device at `qos`, whatever it subscribed (the caller decided). */
export function publish(s: Session, topic: string, payload: Buffer, qos: 0 | 1): void {
  if (s.stream.writableLength > MAX_BUFFERED) {
    s.ctx.log.warn({ device: s.deviceId, topic }, 'device is not reading; message dropped');
    return;
  }
  if (qos === 1) {
    const messageId = s.nextMessageId;
    s.nextMessageId = messageId >= 65535 ? 1 : messageId + 1;
    send(s, { cmd: 'publish', topic, payload, qos: 1, dup: false, retain: false, messageId });
  } else {
    send(s, { cmd: 'publish', topic, payload, qos: 0, dup: false, retain: false });
  }
}

/** Publishes a JSON body if the device subscribed to the topic, at the QoS it was granted. */
export function publishToDevice(s: Session, topic: string, body: unknown): void {
  const sub = subscriptionFor(s, topic);
  if (sub) publish(s, topic, Buffer.from(JSON.stringify(body)), sub.qos);
}

/** Delivers an event if the device subscribed to it (docs/device-protocol.md, "Events"). */
export function deliver(s: Session, event: CloudEvent): void {
  const device = s.device;
  if (!device || s.state !== 'connected' || event.coreid === device.id) return;
  const topic = cloudEventTopic(device.id, event.name);
  const sub = subscriptionFor(s, topic);
  if (!sub) return;
  publish(s, topic, Buffer.from(JSON.stringify({ name: event.name, data: event.data, ttl: event.ttl, published_at: event.published_at, coreid: event.coreid })), sub.qos);
}

/** Tells the device that something it sent was refused (docs/device-protocol.md, `cloud/error`). */
export function reportError(s: Session, topic: string, error: string, message: string): void {
  const id = s.deviceId as string;
  s.ctx.log.info({ device: id, topic: topic.slice(0, 200), error }, message);
  publishToDevice(s, cloudTopic(id, 'error'), { topic, error, message });
}
