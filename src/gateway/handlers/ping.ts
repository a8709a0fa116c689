import type { Session } from '../session.js';
import { send } from '../outgoing.js';

/** PINGREQ gets PINGRESP [MQTT-3.12.4-1]; the packet itself kept the connection alive (session.ts). */
export function ping(s: Session): void {
  send(s, { cmd: 'pingresp' });
}
