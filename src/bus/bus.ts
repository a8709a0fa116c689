import { DomainError } from '../domain/errors.js';
import type { DeviceOwner } from '../repositories/devices.repository.js';
import type { SharedTables } from './shared.js';

/**
 * The bus: how an API node reaches the gateway node that holds a device's connection, and how
 * events travel between devices, gateways and event streams (docs/architecture.md, "Devices: the
 * gateway and the bus"). Routes and services talk only to this interface, so the in-process
 * default and a multi-node deployment (NATS or Redis behind the same interface) run the same code.
 */

/** The answer for a device no gateway holds now, whichever part of the bus finds it so. */
export const deviceOffline = () => new DomainError('device_offline', 'The device is not connected to the cloud');

/** What the API may ask of a connected device. */
export type DeviceCommand =
  | { kind: 'call'; name: string; arg: string }
  | { kind: 'get'; name: string }
  | { kind: 'signal'; on: boolean }
  | { kind: 'ping' }
  /** One configuration module; the answer's value is the device's status (0, or a negative code). */
  | { kind: 'config'; module: string; value: Record<string, unknown>; hash: string }
  /**
   * Not for the device: its gateway node brings it up to date with what is committed, in the
   * device's turn (services/config/delivery.ts), and answers each module's outcome. `modules`
   * are those a write of the device's own values set, which the answer reports on.
   */
  | { kind: 'sync'; productId: number; modules: string[] };

/** A device's answer: a value (return_value, variable result, true) or the device's own error. */
export type DeviceAnswer = { ok: true; value: unknown } | { ok: false; error: string };

/** Serves the commands for one connected device; given by the gateway that holds it. */
export type DeviceHandler = (command: DeviceCommand, timeoutMs: number) => Promise<DeviceAnswer>;

/**
 * An event, as streams and devices see it (docs/particle-compatibility.md#events), with who may
 * see it.
 */
export interface CloudEvent {
  name: string;
  data: string | null;
  ttl: number;
  published_at: string;
  /** The publishing device, or `api`. */
  coreid: string;
  private: boolean;
  /** Scope: the owner whose stream it belongs to, and the product whose stream it belongs to. */
  owner: DeviceOwner | null;
  productId: number | null;
}

export interface Bus {
  /** This node's name in the cluster (`local` for the in-process bus). */
  readonly nodeId: string;
  /**
   * Sends a command to the device wherever it is connected; rejects `device_offline`,
   * `device_timeout`, or `service_unavailable` when the bus itself is down.
   */
  send(deviceId: string, command: DeviceCommand, timeoutMs: number): Promise<DeviceAnswer>;
  /**
   * A gateway takes a device's connection; returns the release. A later hold replaces an earlier
   * one; when the later one is on another node, `evicted` is called here (the session was taken
   * over: MQTT 3.1.1 §3.1.4), and the earlier holder closes its connection.
   */
  hold(deviceId: string, handler: DeviceHandler, evicted?: () => void): () => void;
  /** Whether some gateway holds the device now. */
  isConnected(deviceId: string): Promise<boolean>;
  /** Publishes an event to every subscriber (streams, gateways). */
  publish(event: CloudEvent): void;
  /** Receives every event; returns the unsubscribe. Subscribers filter by scope themselves. */
  subscribe(listener: (event: CloudEvent) => void): () => void;
  /**
   * Node-to-node notices (cache invalidations, fleet configuration writes): every node's
   * listeners of the topic receive each notice once, the sender's own included.
   */
  notify(topic: string, payload: unknown): void;
  listen(topic: string, listener: (payload: unknown) => void): () => void;
  /** Tables shared by every node (counters, leases); on one node they live in memory. */
  readonly shared: SharedTables;
  /** Whether the bus reaches the other nodes now (always, in-process). */
  state(): 'up' | 'down';
  /**
   * Told when the bus comes back after it was down: notices sent meanwhile may have been missed,
   * and what depends on them is brought up to date (never, in-process).
   */
  whenBack(listener: () => void): () => void;
  close(): Promise<void>;
}
