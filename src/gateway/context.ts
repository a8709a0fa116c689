import type { Log } from '../platform/log.js';
import type { Clock } from '../platform/clock.js';
import type { Secrets } from '../platform/secrets.js';
import type { FailureLimiter } from '../domain/failure-limiter.js';
import type { Hello, VariableType } from '../domain/device-protocol.js';
import type { OtaMessage } from '../domain/ota-protocol.js';
import type { DeviceOwner } from '../repositories/devices.repository.js';
import type { Session } from './session.js';

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
  /** Time for every decision that compares times (keep-alive, the hello grace, presence). */
  readonly clock: Clock;
  /** Correlation ids of requests to devices. */
  readonly secrets: Pick<Secrets, 'token'>;
  readonly maxPacketBytes: number;
  closing(): boolean;
  authenticate(id: string, secret: string): Promise<SessionDevice | null>;
  describe(id: string, hello: Hello): void;
  claim(id: string, code: string): Promise<{ owner: DeviceOwner; productId: number | null }>;
  heard(id: string): void;
  /** The device reported what it holds of its configuration (a hash per module). */
  configHello(id: string, hashes: Record<string, string>): void;
  /** The device said `hello` (`first`: the first of this connection): firmware updates look at it. */
  firmwareHello(id: string, hello: Hello, first: boolean): void;
  /** The device said something about a firmware transfer; a refusal is answered on `cloud/error`. */
  ota(id: string, message: OtaMessage): { error: string; message: string } | null;
  connectOutcome(outcome: string): void;
  /** Publishes a device's event; the promise (null: nothing to wait for) says its webhook deliveries are stored. */
  publishEvent(from: Session, event: { name: string; data: string | null; ttl: number; private: boolean }): Promise<void> | null;
  attached(session: Session): void;
  detached(session: Session, reason: string): void;
  moved(session: Session, to: { owner: DeviceOwner | null; productId: number | null }): void;
}
