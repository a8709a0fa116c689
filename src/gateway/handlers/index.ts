import type { Packet } from 'mqtt-packet';
import type { Session } from '../session.js';
import { connect } from './connect.js';
import { disconnect } from './disconnect.js';
import { ping } from './ping.js';
import { publish } from './publish.js';
import { pubrec, pubrel } from './qos.js';
import { subscribe } from './subscribe.js';
import { unsubscribe } from './unsubscribe.js';

/** Packets a device may send between CONNECT and CONNACK before the cloud closes the connection. */
const MAX_HELD = 64;
/** `last_heard` is stored at most this often per device (docs/device-protocol.md, "Presence"). */
const HEARD_EVERY_MS = 30_000;

/**
 * Every packet from a device, to the handler of its kind (one handler per packet kind, as in
 * Aedes' lib/handlers). Handlers run only once the connection is accepted, but for CONNECT.
 */
export function dispatch(s: Session, packet: Packet): void {
  // A packet that arrived whole in one chunk is checked here (session.ts checks one in pieces).
  if (s.state === 'closed' || !s.fits(packet.length)) return;
  // [MQTT-3.1.0-1]: the first packet is a CONNECT.
  if (s.state === 'connecting' && packet.cmd !== 'connect') return s.protocolError(`first packet was ${packet.cmd}, not connect`);
  // MQTT allows packets right after CONNECT, before CONNACK: keep them until the device is known.
  if (s.state === 'authenticating') return hold(s, packet);
  if (s.state === 'connected') heard(s);
  switch (packet.cmd) {
    case 'connect': return connect(s, packet, replayHeld);
    case 'publish': return publish(s, packet);
    case 'puback': case 'pubcomp': return; // the cloud keeps no QoS 1 or 2 state to release
    case 'pubrec': return pubrec(s, packet);
    case 'pubrel': return pubrel(s, packet);
    case 'subscribe': return subscribe(s, packet);
    case 'unsubscribe': return unsubscribe(s, packet);
    case 'pingreq': return ping(s);
    case 'disconnect': return disconnect(s);
    default: return s.protocolError(`unexpected ${packet.cmd}`);
  }
}

function hold(s: Session, packet: Packet): void {
  const held = (s.queued ??= []);
  if (held.length < MAX_HELD) held.push(packet);
  else s.destroy();
}

/** Handles what arrived between CONNECT and CONNACK, once CONNACK accepted the device. */
function replayHeld(s: Session): void {
  const held = s.queued;
  s.queued = null;
  if (held) for (const packet of held) dispatch(s, packet);
}

/** Every packet refreshes the device's `last_heard`, stored at most every HEARD_EVERY_MS. */
function heard(s: Session): void {
  const now = s.ctx.clock.nowMs();
  if (s.device && now - s.lastHeardWrite > HEARD_EVERY_MS) {
    s.lastHeardWrite = now;
    // The connect itself stored the device as heard.
    if (now - s.openedAt > 1000) s.ctx.heard(s.device.id);
  }
}
