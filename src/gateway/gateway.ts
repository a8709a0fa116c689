import type { Duplex } from 'node:stream';
import type { Log } from '../platform/log.js';
import { deviceOffline, type Bus, type CloudEvent, type DeviceAnswer, type DeviceCommand } from '../bus/bus.js';
import { DomainError } from '../domain/errors.js';
import type { FailureLimiter } from '../domain/failure-limiter.js';
import type { DeviceOwner, DeviceRecord } from '../repositories/devices.repository.js';
import type { PresenceService } from '../services/presence.service.js';
import type { Clock } from '../platform/clock.js';
import type { Secrets } from '../platform/secrets.js';
import { Session } from './session.js';
import { serve } from './commands.js';
import { deliver } from './outgoing.js';
import type { GatewayContext, SessionDevice } from './context.js';
import type { Hello } from '../domain/device-protocol.js';
import type { OtaMessage } from '../domain/ota-protocol.js';
import { isoTime } from '../platform/iso-time.js';
import { SessionOtaLink } from './ota.js';

export interface GatewayDeps {
  bus: Bus;
  presence: Pick<PresenceService, 'connected' | 'disconnected' | 'heard' | 'describe' | 'settle'>;
  limiter: FailureLimiter;
  /** Time for keep-alive, the hello grace and timestamps; tests pass a manual clock. */
  clock: Clock;
  /** Correlation ids of requests to devices. */
  secrets: Pick<Secrets, 'token'>;
  log: () => Log;
  authenticate(id: string, secret: string): Promise<DeviceRecord | null>;
  claim(deviceId: string, code: string): Promise<{ owner: DeviceOwner; productId: number | null }>;
  /** A device reported the hashes of the configuration it holds (delivery answers with what differs). */
  configHello(deviceId: string, hashes: Record<string, string>): void;
  /** A device said `hello` (`first`: the first of its connection); firmware updates look at it. */
  firmwareHello?(deviceId: string, hello: Hello, first: boolean): void;
  /** A device said something about a firmware transfer (docs/device-protocol.md, "Firmware updates"). */
  ota?(deviceId: string, message: OtaMessage): { error: string; message: string } | null;
  /** Brings a device held here up to date with its committed configuration (the bus's `sync`). */
  configSync?(deviceId: string, productId: number, modules: string[]): Promise<DeviceAnswer>;
  /** Stores the webhook deliveries an event makes; null when no webhook takes it (docs/webhooks.md). */
  enqueue?: (event: CloudEvent) => Promise<void> | null;
  /** Told of each CONNECT's outcome (`accepted`, or why it was refused): the node's metrics. */
  connectOutcome?: (outcome: string) => void;
}

const ownerKey = (o: DeviceOwner) => `${o.kind}:${o.id}`;
const CONNECT_TIMEOUT_MS = 10_000;
const MAX_PACKET_BYTES = 16 * 1024;

/**
 * The device gateway: MQTT connections of devices (docs/device-protocol.md), whatever transport
 * carried them (listeners.ts). It keeps the table of connected devices, serves the bus's
 * commands for them, routes events to the devices that subscribed, and reports presence.
 *
 * Devices talk only to the cloud, never to each other directly, so this is not a general broker:
 * every topic is a device's own, and routing is a lookup by device, owner or product.
 */
export function createGateway(deps: GatewayDeps) {
  const connections = new Set<Session>();
  const byDevice = new Map<string, Session>();
  const byOwner = new Map<string, Set<Session>>();
  const byProduct = new Map<number, Set<Session>>();
  const releases = new Map<Session, () => void>();
  let closing = false;
  /** Commands being served, which a draining node lets finish before it disconnects its devices. */
  const inFlight = new Set<Promise<unknown>>();
  const track = <T>(p: Promise<T>): Promise<T> => {
    const settled = p.then(() => undefined, () => undefined);
    inFlight.add(settled);
    void settled.then(() => inFlight.delete(settled));
    return p;
  };

  const index = <K>(map: Map<K, Set<Session>>, key: K, conn: Session, add: boolean) => {
    const set = map.get(key);
    if (add) {
      if (set) set.add(conn);
      else map.set(key, new Set([conn]));
    } else if (set) {
      set.delete(conn);
      if (set.size === 0) map.delete(key);
    }
  };
  const indexScope = (conn: Session, add: boolean) => {
    const d = conn.device;
    if (!d) return;
    if (d.owner) index(byOwner, ownerKey(d.owner), conn, add);
    if (d.productId !== null) index(byProduct, d.productId, conn, add);
  };

  function statusEvent(d: SessionDevice, status: 'online' | 'offline'): CloudEvent {
    return { name: 'spark/status', data: status, ttl: 60, published_at: deps.clock.now().toISOString(), coreid: d.id, private: true, owner: d.owner, productId: d.productId };
  }

  const ctx: GatewayContext = {
    get log() { return deps.log(); },
    limiter: deps.limiter,
    clock: deps.clock,
    secrets: deps.secrets,
    maxPacketBytes: MAX_PACKET_BYTES,
    closing: () => closing,
    async authenticate(id, secret) {
      const d = await deps.authenticate(id, secret);
      return d && {
        id: d.id, platformId: d.platformId, productId: d.productId, owner: d.owner,
        functions: d.functions, variables: d.variables, systemFirmwareVersion: d.systemFirmwareVersion,
      };
    },
    describe: (id, hello) => deps.presence.describe(id, hello),
    claim: (id, code) => deps.claim(id, code),
    heard: (id) => deps.presence.heard(id),
    configHello: (id, hashes) => deps.configHello(id, hashes),
    firmwareHello: (id, hello, first) => deps.firmwareHello?.(id, hello, first),
    ota: (id, message) => (deps.ota ? deps.ota(id, message) : { error: 'unknown_transfer', message: 'This cloud runs no firmware transfers' }),
    connectOutcome: (outcome) => deps.connectOutcome?.(outcome),
    publishEvent(from, e) {
      const d = from.device as SessionDevice;
      // Every field named, in CloudEvent's order: a spread of `e` made V8 miss its store caches
      // on each event: 4-5 % of the server's CPU under a flood of events (`perf`, docs/benchmarks.md).
      const event: CloudEvent = {
        name: e.name, data: e.data, ttl: e.ttl, published_at: isoTime(deps.clock.nowMs()), coreid: d.id, private: e.private, owner: d.owner, productId: d.productId,
      };
      deps.bus.publish(event);
      return deps.enqueue?.(event) ?? null;
    },
    attached(conn) {
      const d = conn.device as SessionDevice;
      const older = byDevice.get(d.id);
      if (older && older !== conn) older.replace();
      byDevice.set(d.id, conn);
      indexScope(conn, true);
      const served = (command: DeviceCommand, timeoutMs: number): Promise<DeviceAnswer> => {
        if (command.kind !== 'sync') return track(serve(conn, command, timeoutMs));
        if (!deps.configSync) return Promise.reject(deviceOffline());
        return track(deps.configSync(d.id, command.productId, command.modules));
      };
      // Taken over by a connection of the device on another node: this one closes, the device stays online.
      releases.set(conn, deps.bus.hold(d.id, served, () => conn.replace()));
      deps.presence.connected(d.id, conn.ip);
      deps.bus.publish(statusEvent(d, 'online'));
    },
    detached(conn, reason) {
      connections.delete(conn);
      const d = conn.device;
      if (!d) return;
      indexScope(conn, false);
      releases.get(conn)?.();
      releases.delete(conn);
      // A replaced connection hands over to the newer one, here or on another node: the device stays online.
      if (byDevice.get(d.id) !== conn) return;
      byDevice.delete(d.id);
      if (conn.replaced) return;
      deps.log().debug({ device: d.id, reason }, 'device disconnected');
      deps.presence.disconnected(d.id);
      deps.bus.publish(statusEvent(d, 'offline'));
    },
    moved(conn, to) {
      indexScope(conn, false);
      const d = conn.device as SessionDevice;
      d.owner = to.owner;
      d.productId = to.productId;
      indexScope(conn, true);
    },
  };

  // Events reach the devices in their scope that subscribed (docs/device-protocol.md, "Events").
  // The cloud's own presence events (spark/status) go to streams only: sent to devices, a fleet
  // reconnecting at once would cost a delivery per pair of devices.
  const unsubscribe = deps.bus.subscribe((event) => {
    if (event.name.startsWith('spark/')) return;
    const seen = new Set<Session>();
    const reach = (set: Set<Session> | undefined) => {
      if (!set) return;
      for (const c of set) {
        // Most devices hear no events: skipped before a topic is made for them.
        if (!c.hearsEvents || seen.has(c)) continue;
        seen.add(c);
        deliver(c, event);
      }
    };
    if (event.owner) reach(byOwner.get(ownerKey(event.owner)));
    if (event.productId !== null) reach(byProduct.get(event.productId));
  });

  // One sweep for every connection instead of a timer each: the CONNECT deadline and keep-alive
  // ([MQTT-3.1.2-24]: 1.5 times the keep-alive without a packet means the client is gone).
  function sweep(): void {
    const now = deps.clock.nowMs();
    for (const c of connections) {
      if (c.state === 'connecting' && now - c.openedAt > CONNECT_TIMEOUT_MS) c.expire();
      else if (c.state === 'connected' && c.keepaliveSeconds > 0 && now - c.lastSeen > c.keepaliveSeconds * 1500) c.expire();
    }
  }
  const sweeping = setInterval(sweep, 1000);
  sweeping.unref();

  return {
    /** Takes a new transport connection (TCP, TLS or WebSocket stream). */
    accept(stream: Duplex, ip: string): void {
      if (closing) {
        stream.destroy();
        return;
      }
      connections.add(new Session(ctx, stream, ip));
    },
    /**
     * A device's owner or product changed through the API (claim, release, import, removal):
     * its connection takes the new scope, so that events follow it at once.
     */
    rescope(deviceId: string, to: { owner: DeviceOwner | null; productId: number | null }): void {
      const conn = byDevice.get(deviceId);
      if (conn?.device) ctx.moved(conn, to);
    },
    /** An owner lost all its devices (account or customer deleted): their connections lose it. */
    releaseOwner(owner: DeviceOwner): void {
      for (const conn of [...(byOwner.get(ownerKey(owner)) ?? [])]) ctx.moved(conn, { owner: null, productId: conn.device?.productId ?? null });
    },
    /**
     * Closes the connections whose CONNECT deadline or keep-alive has passed, by the clock. It runs
     * every second; tests that move a manual clock run it at once.
     */
    sweep,
    /** Whether this gateway holds the device's connection. */
    holds: (deviceId: string): boolean => byDevice.has(deviceId),
    /** The devices whose connections this gateway holds now (a cluster node says them again after its lease lapsed). */
    held: (): string[] => [...byDevice.keys()],
    /** The products of the devices connected here. */
    heldProducts: (): number[] => [...byProduct.keys()],
    /** The devices of a product connected here. */
    heldIn: (productId: number): string[] => [...(byProduct.get(productId) ?? [])].flatMap((c) => (c.device ? [c.device.id] : [])),
    /**
     * The device's connection here as a firmware transfer writes to it (ota.ts), or null: a
     * transfer runs on the node holding the device, and ends with the connection.
     */
    otaLink(deviceId: string): SessionOtaLink | null {
      const conn = byDevice.get(deviceId);
      return conn && conn.state === 'connected' ? new SessionOtaLink(conn, deviceId) : null;
    },
    /**
     * Serves a command to a device connected here, without the bus: configuration delivery runs on
     * the node that holds the device and reaches no other (docs/architecture.md, "Configuration
     * delivery in a cluster"); `device_offline` when it is not connected here.
     */
    command(deviceId: string, command: Exclude<DeviceCommand, { kind: 'sync' }>, timeoutMs: number): Promise<DeviceAnswer> {
      const conn = byDevice.get(deviceId);
      if (!conn) return Promise.reject(new DomainError('device_offline', 'The device is not connected to this node'));
      return serve(conn, command, timeoutMs);
    },
    /** Devices connected now. */
    get size(): number {
      return byDevice.size;
    },
    /**
     * Closes every connection and waits for their presence to be stored; with `drainMs`, first
     * lets the commands under way finish, for that long at most (docs/operations.md, "Draining").
     */
    async close(drainMs = 0): Promise<void> {
      closing = true;
      if (drainMs > 0 && inFlight.size > 0) {
        // Draining: no new command reaches this node's devices (they read offline until they
        // reconnect elsewhere), and those under way get up to `drainMs` to finish.
        for (const release of releases.values()) release();
        releases.clear();
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([Promise.all([...inFlight]), new Promise((r) => { timer = setTimeout(r, drainMs); })]);
        clearTimeout(timer);
      }
      clearInterval(sweeping);
      unsubscribe();
      for (const c of [...connections]) c.shutdown();
      await deps.presence.settle();
    },
  };
}

export type Gateway = ReturnType<typeof createGateway>;
