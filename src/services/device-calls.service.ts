import { DomainError } from '../domain/errors.js';
import { MAX_NAME_LENGTH } from '../domain/device-protocol.js';
import type { Bus, DeviceAnswer, DeviceCommand } from '../bus/bus.js';
import type { DeviceRecord } from '../repositories/devices.repository.js';

/** The caller's `timeout` (seconds), bounded; the setting when absent. */
function timeoutMs(requested: number | undefined, defaultSeconds: number): number {
  if (requested === undefined) return defaultSeconds * 1000;
  if (!Number.isFinite(requested) || requested <= 0 || requested > 300) throw new DomainError('invalid_request', 'timeout must be a number of seconds between 0 and 300');
  return Math.round(requested * 1000);
}

function checkName(kind: 'function' | 'variable', name: string): void {
  if (name.length === 0 || name.length > MAX_NAME_LENGTH) throw new DomainError('invalid_request', `A ${kind} name is 1-${MAX_NAME_LENGTH} characters`);
}

/**
 * What applications ask of a connected device: function calls, variable reads, ping and signal
 * (docs/particle-compatibility.md#function-calls-variables-signal-and-ping; the messages are in
 * docs/device-protocol.md). Which device a token reaches is decided before
 * (services/devices/access.ts: mustReach / inProduct); this only talks to the bus.
 */
export function createDeviceCallService(deps: {
  bus: Bus;
  callTimeoutSeconds: number;
  /** Told of each command's outcome (`ok` or the error code) and its time: the node's metrics. */
  observe?: (kind: DeviceCommand['kind'], outcome: string, seconds: number) => void;
}) {
  const { bus, observe } = deps;

  async function send(d: DeviceRecord, command: DeviceCommand, ms: number): Promise<unknown> {
    const started = performance.now();
    const seen = (outcome: string) => observe?.(command.kind, outcome, (performance.now() - started) / 1000);
    try {
      const answer: DeviceAnswer = await bus.send(d.id, command, ms);
      if (!answer.ok) throw new DomainError('device_error', answer.error.slice(0, 200) || 'The device refused');
      seen('ok');
      return answer.value;
    } catch (err) {
      seen(err instanceof DomainError ? err.code : 'error');
      throw err;
    }
  }

  return {
    /** POST /v1/devices/:id/:function: `{id, name, connected, return_value}`. */
    async call(d: DeviceRecord, name: string, arg: string, timeout?: number) {
      checkName('function', name);
      const value = await send(d, { kind: 'call', name, arg }, timeoutMs(timeout, deps.callTimeoutSeconds));
      return { id: d.id, name: d.name, connected: true as const, return_value: value as number };
    },

    /** GET /v1/devices/:id/:variable: `{name, result, coreInfo}`. */
    async read(d: DeviceRecord, name: string, timeout?: number) {
      checkName('variable', name);
      const result = await send(d, { kind: 'get', name }, timeoutMs(timeout, deps.callTimeoutSeconds));
      return {
        name,
        result: result as number | string | boolean,
        coreInfo: { name: d.name, deviceID: d.id, connected: true as const, last_handshake_at: d.lastHandshakeAt?.toISOString() ?? null, last_app: '' },
      };
    },

    /** PUT /v1/devices/:id/ping: answered from the gateway's table of connections. */
    async ping(d: DeviceRecord) {
      const online = await bus.isConnected(d.id);
      if (online) await send(d, { kind: 'ping' }, 5000).catch(() => undefined);
      return { online, ok: true as const };
    },

    /** PUT /v1/devices/:id {signal}: `{id, connected, signaling}`. */
    async signal(d: DeviceRecord, raw: unknown) {
      const on = raw === true || raw === 1 || raw === '1' || raw === 'true';
      const off = raw === false || raw === 0 || raw === '0' || raw === 'false';
      if (!on && !off) throw new DomainError('invalid_request', 'signal must be "1" (start) or "0" (stop)');
      await send(d, { kind: 'signal', on }, 5000);
      return { id: d.id, connected: true as const, signaling: on };
    },
  };
}

export type DeviceCallService = ReturnType<typeof createDeviceCallService>;
