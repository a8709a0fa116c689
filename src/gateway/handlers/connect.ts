import type { IConnectPacket } from 'mqtt-packet';
import { isDeviceId } from '../../domain/devices.js';
import { isDomainError } from '../../domain/errors.js';
import { parseDeviceTopic } from '../../domain/device-protocol.js';
import type { Session } from '../session.js';
import { send } from '../outgoing.js';

/** MQTT 3.1.1 §3.2.2.3 CONNACK return codes and their MQTT 5 §3.2.2.2 reason codes. */
const REFUSED = {
  version: { v4: 1, v5: 0x84 },
  identifier: { v4: 2, v5: 0x85 },
  unavailable: { v4: 3, v5: 0x88 },
  credentials: { v4: 4, v5: 0x86 },
  banned: { v4: 5, v5: 0x8a },
} as const;

/**
 * CONNECT: the device's id and secret (docs/device-protocol.md, "Connecting"), checked against
 * storage and the failure limits, answered with CONNACK. `accepted` runs once the device is
 * connected (a static function: the dispatcher's replay of packets held meanwhile).
 */
export function connect(s: Session, packet: IConnectPacket, accepted: (s: Session) => void): void {
  // [MQTT-3.1.0-2]: a second CONNECT is a protocol violation.
  if (s.state !== 'connecting') return s.protocolError('a second CONNECT');
  s.state = 'authenticating';
  void authenticate(s, packet).then((ok) => { if (ok) accepted(s); });
}

async function authenticate(s: Session, packet: IConnectPacket): Promise<boolean> {
  try {
    return await accept(s, packet);
  } catch (err) {
    // The store or NATS away: the outage is logged once where it is seen, and the device, told
    // "server unavailable", tries again later.
    if (isDomainError(err) && err.code === 'service_unavailable') s.ctx.log.info({ ip: s.ip }, `device connect refused: ${err.message}`);
    else s.ctx.log.error({ err, ip: s.ip }, 'connect failed');
    refuse(s, 'unavailable');
    return false;
  }
}

async function accept(s: Session, packet: IConnectPacket): Promise<boolean> {
  const { ctx, ip } = s;
  const version = packet.protocolVersion;
  if (version !== 4 && version !== 5) return refuse(s, 'version');
  s.version = version;
  if (version === 5) (s.parser as unknown as { settings: { protocolVersion: number } }).settings.protocolVersion = 5;
  s.keepaliveSeconds = packet.keepalive ?? 0;
  // What the cloud sends must fit (MQTT 5 §3.1.2.11.4): firmware chunks are sized by it.
  s.maxPacketToDevice = packet.properties?.maximumPacketSize ?? 0;

  const id = (packet.username || packet.clientId || '').toLowerCase();
  if (!isDeviceId(id) || (packet.clientId && packet.clientId.toLowerCase() !== id)) return refuse(s, 'identifier');
  const key = `device:${id}@${ip}`;
  try {
    await ctx.limiter.check(key, ip);
  } catch (err) {
    if (!isDomainError(err)) throw err;
    ctx.log.warn({ device: id, ip }, 'device connect refused: too many failures from this address');
    return refuse(s, 'banned');
  }
  const secret = packet.password ? packet.password.toString('utf8') : '';
  const device = await ctx.authenticate(id, secret);
  // Counted even when the socket has gone meanwhile (hanging up early must not spare a wrong secret).
  const counted = await (device ? ctx.limiter.succeed(key) : ctx.limiter.fail(key, ip)).then(() => true, (err: unknown) => {
    // A flood of failures on this device and address right now (docs/security.md, "Lock-out in a cluster").
    if (isDomainError(err)) return false;
    throw err;
  });
  if (s.state !== 'authenticating') return false; // the socket went away meanwhile
  if (!counted) return refuse(s, 'banned');
  if (!device) {
    ctx.log.info({ device: id, ip }, 'device connect refused: unknown device or wrong secret');
    return refuse(s, 'credentials');
  }
  if (ctx.closing()) return refuse(s, 'unavailable');
  s.device = device;
  // A will is kept only if it is an event the device may publish (docs/device-protocol.md).
  if (packet.will && parseDeviceTopic(id, packet.will.topic)?.kind === 'event') {
    s.will = { topic: packet.will.topic, payload: Buffer.from(packet.will.payload) };
  }
  s.state = 'connected';
  s.connectedAt = ctx.clock.nowMs();
  send(s, s.version === 5
    ? { cmd: 'connack', sessionPresent: false, reasonCode: 0, properties: { maximumPacketSize: ctx.maxPacketBytes, retainAvailable: false, maximumQoS: 1 } }
    : { cmd: 'connack', sessionPresent: false, returnCode: 0 });
  ctx.attached(s);
  ctx.connectOutcome('accepted');
  return true;
}

function refuse(s: Session, why: keyof typeof REFUSED): false {
  const code = REFUSED[why];
  s.ctx.connectOutcome(why);
  send(s, s.version === 5 ? { cmd: 'connack', sessionPresent: false, reasonCode: code.v5 } : { cmd: 'connack', sessionPresent: false, returnCode: code.v4 });
  s.destroy();
  return false;
}
