import { DomainError } from '../domain/errors.js';
import { cloudTopic, publishLimit } from '../domain/device-protocol.js';
import { deviceOffline, type DeviceAnswer, type DeviceCommand } from '../bus/bus.js';
import type { SessionDevice } from './context.js';
import type { Session } from './session.js';
import { MAX_PENDING, PendingCalls } from './calls.js';
import { publish, publishToDevice } from './outgoing.js';
import { subscriptionFor } from './subscriptions.js';
import { untilDeviceSaysMore } from './waiters.js';

type Request = Extract<DeviceCommand, { kind: 'call' | 'get' | 'config' }>;

/** Random bytes of a request's correlation id (8 base64url characters). */
const ID_BYTES = 6;

const requestTopic = (deviceId: string, command: Request) => cloudTopic(deviceId, command.kind === 'config' ? 'config/set' : command.kind);

/**
 * Serves a command from the bus (docs/device-protocol.md, "Function calls", "Variable reads",
 * "Configuration", "Signal", "Ping"): calls, reads and configuration wait for the device's
 * answer under a correlation id (calls.ts).
 */
export async function serve(s: Session, command: Exclude<DeviceCommand, { kind: 'sync' }>, timeoutMs: number): Promise<DeviceAnswer> {
  if (s.state !== 'connected' || !s.device) throw deviceOffline();
  if (command.kind === 'ping') return { ok: true, value: true };
  if (command.kind === 'signal') {
    publishToDevice(s, cloudTopic(s.device.id, 'signal'), { signal: command.on });
    return { ok: true, value: command.on };
  }
  // Just after CONNACK the device may not have subscribed or said `hello` yet: what it would be
  // refused for may be on its way (waiters.ts).
  const clock = s.ctx.clock;
  const started = clock.nowMs();
  for (;;) {
    if (s.state !== 'connected') throw new DomainError('device_offline', 'The device disconnected before it answered');
    const refused = refusal(s, command);
    if (!refused) break;
    if (!(await untilDeviceSaysMore(s, timeoutMs - (clock.nowMs() - started)))) throw refused;
  }
  timeoutMs = Math.max(1, timeoutMs - (clock.nowMs() - started));
  const device = s.device as SessionDevice;
  if (command.kind === 'call') {
    const limit = publishLimit(device.systemFirmwareVersion, device.platformId);
    if (Buffer.byteLength(command.arg) > limit) throw new DomainError('invalid_request', `The argument is ${Buffer.byteLength(command.arg)} bytes; this device takes at most ${limit}`);
  }
  const calls = (s.calls ??= new PendingCalls());
  if (calls.size >= MAX_PENDING) throw new DomainError('rate_limit_exceeded', `The device already has ${MAX_PENDING} calls waiting`, { retryAfterSeconds: 1 });

  const id = s.ctx.secrets.token(ID_BYTES, 'base64url');
  const answer = calls.open(id, command.kind, timeoutMs);
  // QoS 0 whatever the subscription: the answer is the acknowledgement, and a PUBACK before it
  // would hold the answer back behind Nagle's algorithm on devices that leave it on.
  const body = command.kind === 'call' ? { id, name: command.name, arg: command.arg }
    : command.kind === 'get' ? { id, name: command.name }
      : { id, module: command.module, value: command.value, hash: command.hash };
  publish(s, requestTopic(device.id, command), Buffer.from(JSON.stringify(body)), 0);
  return answer;
}

/** What the device would refuse this request for now, by its `hello` and its subscriptions. */
function refusal(s: Session, command: Request): DomainError | undefined {
  const device = s.device as SessionDevice;
  if (command.kind === 'call' && !device.functions.includes(command.name)) return new DomainError('function_not_found', `The device has no function "${command.name}"`);
  if (command.kind === 'get' && !(command.name in device.variables)) return new DomainError('variable_not_found', `The device has no variable "${command.name}"`);
  const topic = requestTopic(device.id, command);
  if (subscriptionFor(s, topic) === undefined) return new DomainError('device_error', `The device is not subscribed to ${topic}, so it cannot take calls`);
  return undefined;
}
