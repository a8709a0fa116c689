import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { connect, nanos, NoRespondersError, RequestError, TimeoutError, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { Kvm, type KV } from '@nats-io/kv';
import { jetstreamManager } from '@nats-io/jetstream';
import { DomainError, isDomainError, type ErrorCode } from '../domain/errors.js';
import type { Log } from '../platform/log.js';
import { deviceOffline, type Bus, type CloudEvent, type DeviceAnswer, type DeviceCommand, type DeviceHandler } from './bus.js';
import { fanOutTo } from './in-process.js';
import type { SharedTable, SharedTables } from './shared.js';

/**
 * The bus of a cluster, on NATS (docs/architecture.md, "Cluster mode"). Subjects, under a
 * prefix (`skyport` unless set):
 * - `<p>.device.<id>`: request/reply to the node that holds the device's connection. Its gateway
 *   subscribes while it holds the device; a request nobody holds is answered at once by NATS's
 *   "no responders" status, which is `device_offline`.
 * - `<p>.takeover.<id>`: a node that took a device's connection tells the others, and the node
 *   that held it before closes its connection (the session was taken over).
 * - `<p>.events`: every event, to every node; each node hands it to its own streams and devices.
 * - `<p>.notice.<topic>`: node-to-node notices (cache invalidations, fleet configuration writes).
 * Shared tables are JetStream key-value buckets `<p>_<name>` whose entries expire.
 */
export interface NatsBusOptions {
  /** One or several servers, separated by commas (nats://host:4222). */
  servers: string;
  /** Keeps several clusters apart on one NATS (tests); `skyport` by default. */
  prefix?: string;
  nodeId?: string;
  log: () => Log;
  /** Told of each request to a device's node: the command's kind, `ok` or the error code, and the seconds it took (the node's metrics). */
  observe?: (kind: DeviceCommand['kind'], outcome: string, seconds: number) => void;
}

interface WireCommand { command: DeviceCommand; timeoutMs: number }
/** A device held here: the subscription serving it, when it was taken, and what to do when another node takes it over. */
interface Hold {
  sub: Subscription;
  since: number;
  evicted: (() => void) | undefined;
  /** Let go by this node's gateway (the subscription drains). */
  released: boolean;
  /** Another node's gateway took the device's connection over. */
  takenOver: boolean;
}
type WireAnswer = DeviceAnswer | { fail: ErrorCode; message: string };

/** How much longer than the device's own timeout a request may take on the way (two hops over NATS). */
const TRANSIT_MS = 2_000;
const encode = (value: unknown) => JSON.stringify(value);
const decode = (data: Uint8Array): unknown => JSON.parse(Buffer.from(data).toString('utf8'));

/**
 * A promise settled at the next `setImmediate`, shared by everyone who asks in the same turn of
 * the event loop. The NATS client writes what was queued since its last write at the end of the
 * current microtask checkpoint: requests and replies made as each HTTP request or device packet
 * of one poll is handled would each cost a system call. Waiting for this turn first sends them
 * all in one write (as the gateway corks its sockets until `setImmediate`: docs/architecture.md,
 * "Devices: the gateway and the bus").
 */
function writesOfOneTurn(): () => Promise<void> {
  let turn: Promise<void> | undefined;
  return () => (turn ??= new Promise<void>((resolve) => setImmediate(() => {
    turn = undefined;
    resolve();
  })));
}

export const newNodeId = () => `${hostname().replace(/[^A-Za-z0-9-]/g, '').slice(0, 20) || 'node'}-${randomBytes(3).toString('hex')}`;

export async function createNatsBus(options: NatsBusOptions): Promise<Bus> {
  const prefix = options.prefix ?? 'skyport';
  const nodeId = options.nodeId ?? newNodeId();
  const nc: NatsConnection = await connect({
    servers: options.servers.split(',').map((s) => s.trim()).filter(Boolean),
    name: `skyport ${nodeId}`,
    // Reconnect for ever: a node keeps serving what it can while NATS is away (GET /healthz says so).
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    waitOnFirstConnect: false,
    // Without it, every request captures a stack trace up front in case it fails: a tenth of an
    // API node's CPU per device call, for a trace that always names the same line of this file.
    noAsyncTraces: true,
  });
  const nextTurn = writesOfOneTurn();
  let up = true;
  /** Counts the connection's losses: a request that saw one on its way failed because of the bus. */
  let outages = 0;
  const backListeners = new Set<() => void>();
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') {
        up = false;
        outages += 1;
        options.log().warn({ server: status.server }, 'NATS connection lost; reconnecting');
      } else if (status.type === 'reconnect') {
        up = true;
        options.log().info({ server: status.server }, 'NATS connection back');
        fanOutTo(backListeners, undefined);
      }
    }
  })();
  const unavailable = () => new DomainError('service_unavailable', 'The cluster bus (NATS) is unreachable; retry shortly');

  const listeners = new Set<(event: CloudEvent) => void>();
  const topics = new Map<string, Set<(payload: unknown) => void>>();
  const subscriptions: Subscription[] = [];
  const received = (what: string, work: () => void) => {
    try {
      work();
    } catch (err) {
      options.log().warn({ err }, `bus: bad ${what} ignored`);
    }
  };
  subscriptions.push(nc.subscribe(`${prefix}.events`, { callback: (err, msg) => { if (!err) received('event', () => fanOutTo(listeners, decode(msg.data) as CloudEvent)); } }));
  subscriptions.push(nc.subscribe(`${prefix}.notice.>`, {
    callback: (err, msg) => {
      if (err) return;
      const topic = msg.subject.slice(prefix.length + '.notice.'.length);
      received('notice', () => fanOutTo(topics.get(topic) ?? [], decode(msg.data)));
    },
  }));

  const held = new Map<string, Hold>();
  /** What a device command's failure tells the node that sent it. */
  const failed = (err: unknown): WireAnswer => (isDomainError(err) ? { fail: err.code, message: err.message } : { fail: 'server_error', message: 'The device command failed' });
  const answer = (msg: Msg, reply: WireAnswer) => void nextTurn().then(() => msg.respond(encode(reply)))
    .catch((err: unknown) => options.log().warn({ err }, 'bus: a device answer could not be sent back'));
  subscriptions.push(nc.subscribe(`${prefix}.takeover.*`, {
    callback: (err, msg) => {
      if (err) return;
      received('take-over', () => {
        const { node, at } = decode(msg.data) as { node: string; at: number };
        const deviceId = msg.subject.slice(prefix.length + '.takeover.'.length);
        const mine = held.get(deviceId);
        // Only a hold taken before the other node's: a device that came back here since stays.
        if (node !== nodeId && mine && mine.since <= at) {
          mine.takenOver = true;
          mine.evicted?.();
        }
      });
    },
  }));

  const tables = new Map<string, Promise<SharedTable>>();
  const kvm = new Kvm(nc);

  /** A request to the node holding the device, timed by its outcome. */
  async function send(deviceId: string, command: DeviceCommand, timeoutMs: number): Promise<DeviceAnswer> {
    const started = process.hrtime.bigint();
    let outcome = 'ok';
    try {
      return await request(deviceId, command, timeoutMs);
    } catch (err) {
      outcome = isDomainError(err) ? err.code : 'server_error';
      throw err;
    } finally {
      options.observe?.(command.kind, outcome, Number(process.hrtime.bigint() - started) / 1e9);
    }
  }

  async function request(deviceId: string, command: DeviceCommand, timeoutMs: number): Promise<DeviceAnswer> {
      if (!up) throw unavailable();
      let reply;
      const outagesBefore = outages;
      try {
        await nextTurn();
        reply = await nc.request(`${prefix}.device.${deviceId}`, encode({ command, timeoutMs } satisfies WireCommand), { timeout: timeoutMs + TRANSIT_MS });
      } catch (err) {
        if (err instanceof NoRespondersError || (err instanceof RequestError && err.isNoResponders())) throw deviceOffline();
        // NATS went away while the request was out: the bus, not the device, failed it.
        if (!up || nc.isClosed() || outages !== outagesBefore) throw unavailable();
        // The holding node died or NATS dropped the request on the way: the device did not answer in time.
        if (err instanceof TimeoutError || (err instanceof RequestError && err.cause instanceof TimeoutError)) throw new DomainError('device_timeout', 'The device did not answer in time');
        throw unavailable();
      }
      const answer = decode(reply.data) as WireAnswer;
      if ('fail' in answer) throw new DomainError(answer.fail, answer.message);
      return answer;
  }

  return {
    nodeId,
    state: () => (up && !nc.isClosed() ? 'up' : 'down'),
    whenBack(listener) {
      backListeners.add(listener);
      return () => backListeners.delete(listener);
    },
    send,

    hold(deviceId, handler: DeviceHandler, evicted) {
      const entry: Hold = {
        since: Date.now(), evicted, released: false, takenOver: false,
        sub: nc.subscribe(`${prefix}.device.${deviceId}`, {
          callback: (err, msg) => {
            if (err) return;
            if (entry.released) {
              // Sent before NATS heard that this node let the device go. When a holder took the
              // device over (here or on another node), it answers if NATS routed the request to
              // it as well; if not, the caller waits for its time-out, since serving it here
              // could call the device twice. When none did, the device is gone, and saying so
              // now spares the caller the wait.
              if (!entry.takenOver && !held.has(deviceId)) answer(msg, failed(deviceOffline()));
              return;
            }
            let wire: WireCommand;
            try {
              wire = decode(msg.data) as WireCommand;
            } catch {
              return;
            }
            void handler(wire.command, wire.timeoutMs).then((value) => answer(msg, value), (err2: unknown) => answer(msg, failed(err2)));
          },
        }),
      };
      held.set(deviceId, entry);
      nc.publish(`${prefix}.takeover.${deviceId}`, encode({ node: nodeId, at: entry.since }));
      return () => {
        if (entry.released) return;
        entry.released = true;
        if (held.get(deviceId) === entry) held.delete(deviceId);
        // Draining, not unsubscribing: requests NATS routed here before it took the UNSUB still
        // reach the callback above (until a round trip to the server), instead of being dropped.
        // While NATS is away there is nothing in flight, and the client would subscribe a
        // draining subscription again when it reconnects.
        if (up) entry.sub.drain().catch(() => entry.sub.unsubscribe());
        else entry.sub.unsubscribe();
      };
    },

    async isConnected(deviceId) {
      if (held.has(deviceId)) return true;
      try {
        await send(deviceId, { kind: 'ping' }, 2_000);
        return true;
      } catch (err) {
        if (isDomainError(err) && err.code === 'device_offline') return false;
        throw err;
      }
    },

    publish(event) {
      nc.publish(`${prefix}.events`, encode(event));
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    notify(topic, payload) {
      nc.publish(`${prefix}.notice.${topic}`, encode(payload));
    },
    listen(topic, listener) {
      const set = topics.get(topic) ?? new Set();
      topics.set(topic, set.add(listener));
      return () => set.delete(listener);
    },

    shared: {
      table(name, ttlMs) {
        let table = tables.get(name);
        if (!table) {
          table = openTable(nc, kvm, `${prefix}_${name}`, ttlMs);
          // A failed open is tried again next time (NATS may be back).
          table.catch(() => tables.delete(name));
          tables.set(name, table);
        }
        return table;
      },
    } satisfies SharedTables,

    async close() {
      for (const { sub } of held.values()) sub.unsubscribe();
      held.clear();
      listeners.clear();
      topics.clear();
      try {
        await nc.drain();
      } catch {
        await nc.close();
      }
    },
  };
}

/** Keys of a bucket are limited to letters, digits and `-_=./`: others are stored base64url-encoded. */
const SAFE_KEY = /^[A-Za-z0-9_-]+$/;
const toKey = (key: string) => (SAFE_KEY.test(key) ? `k.${key}` : `b.${Buffer.from(key).toString('base64url')}`);
const fromKey = (stored: string) => (stored.startsWith('b.') ? Buffer.from(stored.slice(2), 'base64url').toString() : stored.slice(2));

/** A wrong revision on update, or an existing key on create: JetStream's "wrong last sequence". */
const WRONG_LAST_SEQUENCE = 10071;

async function openTable(nc: NatsConnection, kvm: Kvm, bucket: string, ttlMs: number): Promise<SharedTable> {
  let kv: KV;
  try {
    kv = await kvm.create(bucket, { ttl: ttlMs, history: 1 });
  } catch {
    kv = await kvm.open(bucket);
  }
  // Made before with another lifetime (NODE_LEASE_SECONDS or the lock-out settings changed; the
  // create above keeps the bucket as it was): it takes this one, since entries renewed at the new
  // pace must outlive it and no longer.
  const jsm = await jetstreamManager(nc);
  const stream = `KV_${bucket}`;
  const { config } = await jsm.streams.info(stream);
  if (config.max_age !== nanos(ttlMs)) {
    // JetStream keeps the duplicates window within the lifetime (and sets it so at creation).
    await jsm.streams.update(stream, { ...config, max_age: nanos(ttlMs), duplicate_window: Math.min(config.duplicate_window, nanos(ttlMs)) });
  }
  const lost = (err: unknown) => (err as { code?: number }).code === WRONG_LAST_SEQUENCE || /wrong last sequence|key exists/i.test(String((err as Error).message));
  return {
    async get(key) {
      const e = await kv.get(toKey(key));
      if (!e || e.operation !== 'PUT') return null;
      return { value: e.string(), revision: e.revision };
    },
    async swap(key, value, revision) {
      try {
        if (revision === null) await kv.create(toKey(key), value);
        else await kv.update(toKey(key), value, revision);
        return true;
      } catch (err) {
        if (lost(err)) return false;
        throw err;
      }
    },
    async put(key, value) {
      await kv.put(toKey(key), value);
    },
    async delete(key) {
      await kv.delete(toKey(key));
    },
    async keys() {
      const out: string[] = [];
      for await (const k of await kv.keys()) out.push(fromKey(k));
      return out;
    },
  };
}
