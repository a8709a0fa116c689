import type { IPubrecPacket, IPubrelPacket } from 'mqtt-packet';
import type { Session } from '../session.js';
import { send } from '../outgoing.js';

/**
 * The QoS 2 flows (docs/device-protocol.md, "Topics"). A device's QoS 2 publish was handled on
 * arrival and answered PUBREC (publish.ts); its PUBREL gets PUBCOMP.
 */
export function pubrel(s: Session, packet: IPubrelPacket): void {
  send(s, { cmd: 'pubcomp', messageId: packet.messageId ?? 0 });
}

/** The cloud sends at QoS 1 at most, but a PUBREC still gets the PUBREL the flow expects. */
export function pubrec(s: Session, packet: IPubrecPacket): void {
  send(s, { cmd: 'pubrel', messageId: packet.messageId ?? 0 });
}
