/**
 * The device protocol of docs/device-protocol.md as pure functions: topic names, the rules of
 * what a device may publish and subscribe, payload checks, and the publish limit. No MQTT here.
 */

export const TOPIC_ROOT = 'devices';
export const MAX_NAME_LENGTH = 64;
export const MAX_FUNCTIONS = 15;
export const MAX_VARIABLES = 20;
export const VARIABLE_TYPES = ['int32', 'double', 'string', 'bool'] as const;
export type VariableType = (typeof VARIABLE_TYPES)[number];

/** Cloud → device topics (docs/device-protocol.md, "Topics"). */
export const cloudTopic = (deviceId: string, leaf: 'call' | 'get' | 'signal' | 'claim' | 'error' | 'config/set' | 'ota/begin' | 'ota/chunk'): string => `${TOPIC_ROOT}/${deviceId}/cloud/${leaf}`;
/** The cloud's event, from the device, once a claim code made it someone's. */
export const CLAIMED_EVENT = 'spark/device/claimed';
export const cloudEventTopic = (deviceId: string, name: string): string => `${TOPIC_ROOT}/${deviceId}/cloud/events/${name}`;

/** What a device publishes, read from the topic; null when the device may not publish there. */
export type DeviceTopic =
  | { kind: 'hello' }
  | { kind: 'reply' }
  | { kind: 'claim' }
  | { kind: 'event'; name: string }
  | { kind: 'config'; path: 'hello' | 'ack' }
  | { kind: 'ota'; path: 'ready' | 'ack' | 'done' };

export function parseDeviceTopic(deviceId: string, topic: string): DeviceTopic | null {
  const prefix = `${TOPIC_ROOT}/${deviceId}/`;
  if (!topic.startsWith(prefix)) return null;
  const rest = topic.slice(prefix.length);
  if (rest === 'hello' || rest === 'reply' || rest === 'claim') return { kind: rest };
  if (rest.startsWith('events/')) {
    const name = rest.slice('events/'.length);
    return isEventName(name) ? { kind: 'event', name } : null;
  }
  if (rest === 'config/hello' || rest === 'config/ack') return { kind: 'config', path: rest === 'config/hello' ? 'hello' : 'ack' };
  if (rest === 'ota/ready' || rest === 'ota/ack' || rest === 'ota/done') return { kind: 'ota', path: rest.slice('ota/'.length) as 'ready' | 'ack' | 'done' };
  return null;
}

/** Event names: 1–64 characters, no MQTT wildcards, no control characters (they would break SSE lines). */
export function isEventName(name: unknown): name is string {
  return typeof name === 'string' && name.length >= 1 && name.length <= MAX_NAME_LENGTH && !/[+#\u0000-\u001f\u007f]/.test(name);
}

/** A device may subscribe only within its own topics, with no wildcard before them. */
export function mayDeviceSubscribe(deviceId: string, filter: string): boolean {
  const prefix = `${TOPIC_ROOT}/${deviceId}/`;
  return filter.startsWith(prefix) && filter.length > prefix.length && isValidFilter(filter);
}

/** MQTT 3.1.1 §4.7.1: `#` only last and alone in its level, `+` alone in its level. */
export function isValidFilter(filter: string): boolean {
  if (filter.length === 0 || filter.includes('\u0000')) return false;
  const levels = filter.split('/');
  return levels.every((level, i) => (level.includes('#') ? level === '#' && i === levels.length - 1 : !level.includes('+') || level === '+'));
}

/** Whether a topic name matches a filter (MQTT 3.1.1 §4.7). */
export function topicMatches(filter: string, topic: string): boolean {
  const f = filter.split('/');
  const t = topic.split('/');
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '#') return true;
    if (i >= t.length) return false;
    if (f[i] !== '+' && f[i] !== t[i]) return false;
  }
  return f.length === t.length;
}

/**
 * The largest publish a device takes (docs/particle-compatibility.md#publish-size-limits, from
 * https://docs.particle.io/reference/device-os/api/cloud-functions/overview-of-api-field-limits/):
 * 622 bytes on Device OS before 3.0.0, 864 on 3.x for Gen 2 (Photon 6, P1 8, Electron 10), 1024
 * on 3.0.0 and later otherwise. A device that has not said gets the smallest.
 */
export function publishLimit(systemFirmwareVersion: string | null, platformId: number): number {
  const major = systemFirmwareVersion ? Number(/^(\d+)\./.exec(systemFirmwareVersion)?.[1]) : NaN;
  if (!Number.isFinite(major) || major < 3) return 622;
  return [6, 8, 10].includes(platformId) ? 864 : 1024;
}

export class BadPayload extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BadPayload';
  }
}

export function jsonObject(payload: Buffer): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(payload.toString('utf8'));
  } catch {
    throw new BadPayload('the payload is not JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new BadPayload('the payload must be a JSON object');
  return value as Record<string, unknown>;
}

const isName = (v: unknown): v is string => typeof v === 'string' && v.length >= 1 && v.length <= MAX_NAME_LENGTH && !v.includes('\u0000');

export interface Hello {
  functions?: string[];
  variables?: Record<string, VariableType>;
  firmwareVersion?: number;
  systemFirmwareVersion?: string;
  /** Whether the device takes firmware updates now (Device OS's System.disableUpdates()). */
  updatesEnabled?: boolean;
}

export function parseHello(payload: Buffer): Hello {
  const o = jsonObject(payload);
  const out: Hello = {};
  if (o.functions !== undefined) {
    if (!Array.isArray(o.functions) || o.functions.length > MAX_FUNCTIONS || !o.functions.every(isName)) {
      throw new BadPayload(`functions must be an array of at most ${MAX_FUNCTIONS} names of 1-${MAX_NAME_LENGTH} characters`);
    }
    out.functions = [...new Set(o.functions as string[])];
  }
  if (o.variables !== undefined) {
    const v = o.variables;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new BadPayload('variables must be an object of name: type');
    const entries = Object.entries(v as Record<string, unknown>);
    if (entries.length > MAX_VARIABLES) throw new BadPayload(`at most ${MAX_VARIABLES} variables`);
    for (const [name, type] of entries) {
      if (!isName(name)) throw new BadPayload(`variable names are 1-${MAX_NAME_LENGTH} characters`);
      if (!(VARIABLE_TYPES as readonly unknown[]).includes(type)) throw new BadPayload(`variable ${name}: type must be one of ${VARIABLE_TYPES.join(', ')}`);
    }
    out.variables = Object.fromEntries(entries) as Record<string, VariableType>;
  }
  if (o.firmware_version !== undefined) {
    if (!Number.isInteger(o.firmware_version) || (o.firmware_version as number) < 0 || (o.firmware_version as number) > 2_147_483_647) throw new BadPayload('firmware_version must be a whole number');
    out.firmwareVersion = o.firmware_version as number;
  }
  if (o.system_firmware_version !== undefined) {
    if (typeof o.system_firmware_version !== 'string' || !/^\d{1,4}\.\d{1,4}\.\d{1,4}([-+][\w.-]{1,32})?$/.test(o.system_firmware_version)) {
      throw new BadPayload('system_firmware_version must look like 5.8.0');
    }
    out.systemFirmwareVersion = o.system_firmware_version;
  }
  if (o.updates_enabled !== undefined) {
    if (typeof o.updates_enabled !== 'boolean') throw new BadPayload('updates_enabled must be true or false');
    out.updatesEnabled = o.updates_enabled;
  }
  return out;
}

export type Reply = { id: string; ok: true; value: unknown } | { id: string; ok: false; error: string };

export function parseReply(payload: Buffer): Reply {
  const o = jsonObject(payload);
  if (typeof o.id !== 'string' || o.id.length === 0 || o.id.length > 64) throw new BadPayload('a reply needs the id of the request');
  if (typeof o.error === 'string') return { id: o.id, ok: false, error: o.error.slice(0, 200) };
  if ('return_value' in o) {
    const v = o.return_value;
    if (!Number.isInteger(v) || (v as number) < -2_147_483_648 || (v as number) > 2_147_483_647) throw new BadPayload('return_value must be a 32-bit whole number');
    return { id: o.id, ok: true, value: v };
  }
  if ('result' in o) {
    const v = o.result;
    if (!['number', 'string', 'boolean'].includes(typeof v)) throw new BadPayload('result must be a number, string or boolean');
    return { id: o.id, ok: true, value: v };
  }
  throw new BadPayload('a reply needs return_value, result or error');
}

export interface DeviceEvent { data: string | null; ttl: number; private: boolean }

/** Half of a UTF-16 surrogate pair: with the u flag a pair is one code point, so this matches only unpaired halves. */
export const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

export function parseDeviceEvent(payload: Buffer, limit: number): DeviceEvent {
  if (payload.length === 0) return { data: null, ttl: 60, private: true };
  const o = jsonObject(payload);
  const data = o.data ?? null;
  if (data !== null && typeof data !== 'string') throw new BadPayload('data must be a string');
  // Neither can be stored as text or JSON, and an event that fails its write fails every other
  // event of the same batch with it (the webhooks' deliveries); the API refuses both too.
  if (data !== null && (data.includes('\u0000') || LONE_SURROGATE.test(data))) throw new BadPayload('data may not hold a NUL character or half of a UTF-16 surrogate pair');
  if (data !== null && Buffer.byteLength(data) > limit) throw new BadPayload(`data is ${Buffer.byteLength(data)} bytes; this device's limit is ${limit}`);
  const ttl = o.ttl ?? 60;
  if (!Number.isInteger(ttl) || (ttl as number) < 0 || (ttl as number) > 16_777_215) throw new BadPayload('ttl must be a whole number of seconds');
  const priv = o.private ?? true;
  if (typeof priv !== 'boolean') throw new BadPayload('private must be true or false');
  return { data, ttl: ttl as number, private: priv };
}

export function parseClaim(payload: Buffer): string {
  const o = jsonObject(payload);
  if (typeof o.code !== 'string' || o.code.length === 0 || o.code.length > 200) throw new BadPayload('a claim needs a code');
  return o.code;
}

/** `config/hello`: the hash of each module the device holds (docs/device-protocol.md, "Configuration"). */
export function parseConfigHello(payload: Buffer): Record<string, string> {
  const o = jsonObject(payload);
  const modules = o.modules ?? {};
  if (typeof modules !== 'object' || modules === null || Array.isArray(modules)) throw new BadPayload('modules must be an object of module: hash');
  const out: Record<string, string> = {};
  for (const [m, h] of Object.entries(modules as Record<string, unknown>)) {
    if (!isName(m) || typeof h !== 'string' || h.length > 64) throw new BadPayload('modules maps module names to hash strings');
    out[m] = h;
  }
  return out;
}

/** `config/ack`: the device's status for one module: 0 applied, negative refused. */
export function parseConfigAck(payload: Buffer): { id: string; status: number } {
  const o = jsonObject(payload);
  if (typeof o.id !== 'string' || o.id.length === 0 || o.id.length > 64) throw new BadPayload('an ack needs the id of the config/set');
  if (!Number.isInteger(o.status)) throw new BadPayload('status must be a whole number (0, or a negative code)');
  return { id: o.id, status: o.status as number };
}
