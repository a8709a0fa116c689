import type { ISubscribePacket } from 'mqtt-packet';
import type { Session } from '../session.js';
import { send } from '../outgoing.js';
import { grant } from '../subscriptions.js';
import { wakeWaiters } from '../waiters.js';

/**
 * SUBSCRIBE: each filter granted or refused on its own (docs/device-protocol.md, "Topics"):
 * SUBACK 0x80 (MQTT 3.1.1) or 0x87 (MQTT 5) for a refused one. Calls waiting for a new
 * connection to subscribe look again (waiters.ts).
 */
export function subscribe(s: Session, packet: ISubscribePacket): void {
  const granted = packet.subscriptions.map(({ topic, qos }) => {
    const q = grant(s, topic, qos);
    if (q !== undefined) return q;
    s.ctx.log.warn({ device: s.deviceId, filter: topic.slice(0, 200) }, 'subscription refused');
    return s.version === 5 ? 0x87 : 0x80;
  });
  send(s, { cmd: 'suback', messageId: packet.messageId ?? 0, granted });
  wakeWaiters(s);
}
