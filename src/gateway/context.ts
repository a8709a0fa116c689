import type { Log } from '../platform/log.js';
import type { FailureLimiter } from '../domain/failure-limiter.js';
import type { Hello, VariableType } from '../domain/device-protocol.js';
import type { DeviceOwner } from '../repositories/devices.repository.js';
import type { DeviceConnection } from './connection.js';

/** What a connection knows of its device, loaded at CONNECT and kept current by `hello` and claims. */
export interface SessionDevice {
  id: string;
  platformId: number;
  productId: number | null;
  owner: DeviceOwner | null;
  functions: string[];
  variables: Record<string, VariableType | string>;
  systemFirmwareVersion: string | null;
}

/** What the gateway gives each connection: its services and its table of connections. */
export interface GatewayContext {
  readonly log: Log;
  readonly limiter: FailureLimiter;
  readonly maxPacketBytes: number;
  closing(): boolean;
  authenticate(id: string, secret: string): Promise<SessionDevice | null>;
  describe(id: string, hello: Hello): void;
  claim(id: string, code: string): Promise<DeviceOwner>;
  heard(id: string): void;
  /** The device reported what it holds of its configuration (a hash per module). */
  configHello(id: string, hashes: Record<string, string>): void;
  publishEvent(from: DeviceConnection, event: { name: string; data: string | null; ttl: number; private: boolean }): void;
  attached(conn: DeviceConnection): void;
  detached(conn: DeviceConnection, reason: string): void;
  moved(conn: DeviceConnection, to: { owner: DeviceOwner | null; productId: number | null }): void;
}
