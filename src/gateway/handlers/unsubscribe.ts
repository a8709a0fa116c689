import type { IUnsubscribePacket } from 'mqtt-packet';
import type { Session } from '../session.js';
import { send } from '../outgoing.js';
import { revoke } from '../subscriptions.js';

/** UNSUBSCRIBE, answered UNSUBACK (MQTT 5: reason 0 per filter, as MQTT 5 §3.11.3 lists one each). */
export function unsubscribe(s: Session, packet: IUnsubscribePacket): void {
  revoke(s, packet.unsubscriptions);
  const messageId = packet.messageId ?? 0;
  send(s, s.version === 5
    ? { cmd: 'unsuback', messageId, granted: packet.unsubscriptions.map(() => 0) }
    : { cmd: 'unsuback', messageId, granted: [] });
}
