// A worker process of bench/config-fanout.ts and bench/cluster.ts: thousands of simulated devices on raw sockets
// (bench/raw-mqtt.ts), each doing the device's side of docs/device-protocol.md "Configuration":
// subscribe to <base>/cloud/config/set, report the held hashes on <base>/config/hello after every
// connect, and answer each {id, module, value, hash} with {id, status: 0} on <base>/config/ack,
// keeping module → hash. <base> is devices/<id> against Skyport; against Mosquitto (the baseline)
// it is <prefix>/<id>, with the same payloads.
//
// The timing is taken here, at the devices: each remembers when it sent the acknowledgement that
// completed what the current round expects of it. Messages from the parent (IPC), each answered:
//   {kind:'setup', ...Setup}                   → {kind:'ready'}
//   {kind:'expect', modules, check?}           → {kind:'expecting'}: starts a round
//   {kind:'connect', hello}                    → {kind:'connected', ok, failed, codes, lastConnackAt, lastReadyAt}
//   {kind:'disconnect'}                        → {kind:'disconnected'}
//   {kind:'forgetful', on}                     → {kind:'forgetting'}: while on, a config/set is
//                                                counted (`missed`) and acknowledged but not kept:
//                                                the device goes on reporting the hash it held
//   {kind:'forget-lost'}                       → {kind:'forgot', lost}: the count so far, then 0
//                                                (after a server was stopped on purpose)
//   {kind:'report'}                            → {kind:'report', ...Report}
//   {kind:'stop'}                              exits
// and unasked {kind:'round-done'} once every device of this worker has done the round.
import { openRaw, type RawConnection } from './raw-mqtt.js';

/**
 * A device's `port` (a cluster's gateways) overrides the setup's; `held` is what every device holds
 * before its first connect (module → hash: a fleet already in sync), nothing by default.
 */
export interface Setup { host: string; port: number; mode: 'skyport' | 'mosquitto'; prefix: string; devices: Array<{ id: string; secret: string; port?: number }>; inFlight: number; held?: Record<string, string> }
/** What each device must acknowledge in a round; `check` is a value the module must carry. */
export interface Expect { modules: string[]; check?: { module: string; key: string; value: unknown } }
export interface Connected { ok: number; failed: number; codes: Record<string, number>; lastConnackAt: number; lastReadyAt: number }
export interface Report {
  devices: number;
  done: number;
  /** config/set messages received this round, all devices. */
  sets: number;
  /** Devices that got more than the round expects, or a module it does not expect. */
  extra: number;
  /** Modules that carried another value than `check` says. */
  wrong: number;
  /** config/set messages outside a round. */
  stray: number;
  /** Connections closed by the other side. */
  lost: number;
  /** config/set messages acknowledged and not kept while forgetful (since it was last turned on). */
  missed: number;
  firstSetAt: number;
  lastAckAt: number;
  /** When each device that is done sent its last acknowledgement of the round (ms since the epoch). */
  ackTimes: number[];
  notDone: string[];
}

interface Device {
  id: string;
  secret: string;
  port: number;
  topics: { set: string; hello: string; ack: string };
  conn: RawConnection | null;
  held: Map<string, string>;
  sets: number;
  acked: Set<string>;
  extra: boolean;
  done: boolean;
  ackAt: number;
}

let setup: Setup;
let devices: Device[] = [];
let round: (Expect & { pending: number; firstSetAt: number; lastAckAt: number; sets: number; wrong: number }) | null = null;
let stray = 0;
let lost = 0;
let forgetful = false;
let missed = 0;
const send = (m: object) => process.send?.(m);

function onSet(d: Device, payload: Buffer): void {
  const now = Date.now();
  const m = JSON.parse(payload.toString('utf8')) as { id: string; module: string; value: Record<string, unknown>; hash: string };
  d.conn?.publish(d.topics.ack, JSON.stringify({ id: m.id, status: 0 }));
  if (forgetful) {
    missed++;
    return;
  }
  d.held.set(m.module, m.hash);
  if (!round) {
    stray++;
    return;
  }
  round.sets++;
  round.firstSetAt ||= now;
  d.sets++;
  if (!round.modules.includes(m.module) || d.acked.has(m.module)) d.extra = true;
  if (round.check?.module === m.module && m.value[round.check.key] !== round.check.value) {
    round.wrong++;
    return;
  }
  d.acked.add(m.module);
  if (d.done || !round.modules.every((mod) => d.acked.has(mod))) return;
  d.done = true;
  d.ackAt = now;
  round.lastAckAt = now;
  if (--round.pending === 0) send({ kind: 'round-done' });
}

async function open(d: Device, hello: boolean): Promise<number> {
  const { code, connection } = await openRaw({
    host: setup.host, port: d.port,
    ...(setup.mode === 'skyport' ? { clientId: d.id, username: d.id, password: d.secret } : { clientId: `${setup.prefix}-${d.id}` }),
    onPublish: (topic, payload) => { if (topic === d.topics.set) onSet(d, payload); },
    onLost: () => {
      lost++;
      d.conn = null;
    },
  });
  if (!connection) return code;
  d.conn = connection;
  // As a device does: subscribe, and only then say what it holds (the answer may follow at once).
  await connection.subscribe([d.topics.set]);
  if (hello) connection.publish(d.topics.hello, JSON.stringify({ modules: Object.fromEntries(d.held) }));
  return 0;
}

/** Connects every device that is not connected, `inFlight` at a time (connect, SUBACK, hello). */
async function connectAll(hello: boolean): Promise<Connected> {
  const todo = devices.filter((d) => !d.conn);
  const out: Connected = { ok: 0, failed: 0, codes: {}, lastConnackAt: 0, lastReadyAt: 0 };
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(setup.inFlight, todo.length) }, async () => {
    while (next < todo.length) {
      const code = await open(todo[next++] as Device, hello);
      if (code === 0) {
        out.ok++;
        out.lastReadyAt = Date.now();
      } else {
        out.failed++;
        out.codes[String(code)] = (out.codes[String(code)] ?? 0) + 1;
      }
    }
  }));
  return out;
}

function report(): Report {
  const done = devices.filter((d) => d.done);
  return {
    devices: devices.length, done: done.length, sets: round?.sets ?? 0, extra: devices.filter((d) => d.extra).length, wrong: round?.wrong ?? 0,
    stray, lost, missed, firstSetAt: round?.firstSetAt ?? 0, lastAckAt: round?.lastAckAt ?? 0,
    ackTimes: done.map((d) => d.ackAt), notDone: devices.filter((d) => !d.done).slice(0, 5).map((d) => d.id),
  };
}

process.on('message', (m: { kind: string } & Partial<Setup & Expect & { hello: boolean }>) => {
  const fail = (err: unknown) => {
    console.error(err);
    process.exit(1);
  };
  switch (m.kind) {
    case 'setup': {
      setup = m as unknown as Setup;
      devices = setup.devices.map(({ id, secret, port }) => {
        const base = setup.mode === 'skyport' ? `devices/${id}` : `${setup.prefix}/${id}`;
        return {
          id, secret, port: port ?? setup.port, topics: { set: `${base}/cloud/config/set`, hello: `${base}/config/hello`, ack: `${base}/config/ack` },
          conn: null, held: new Map(Object.entries(setup.held ?? {})), sets: 0, acked: new Set(), extra: false, done: false, ackAt: 0,
        };
      });
      return send({ kind: 'ready' });
    }
    case 'expect': {
      const e = m as unknown as Expect;
      round = { modules: e.modules, ...(e.check ? { check: e.check } : {}), pending: devices.length, firstSetAt: 0, lastAckAt: 0, sets: 0, wrong: 0 };
      for (const d of devices) {
        d.sets = 0;
        d.acked = new Set();
        d.extra = false;
        d.done = false;
        d.ackAt = 0;
      }
      return send({ kind: 'expecting' });
    }
    case 'connect': return void connectAll(m.hello === true).then((c) => send({ kind: 'connected', ...c }), fail);
    case 'disconnect': {
      const open = devices.filter((d) => d.conn);
      return void Promise.all(open.map(async (d) => {
        await d.conn?.end();
        d.conn = null;
      })).then(() => send({ kind: 'disconnected' }), fail);
    }
    case 'forgetful': {
      forgetful = (m as { on?: boolean }).on === true;
      if (forgetful) missed = 0;
      return send({ kind: 'forgetting' });
    }
    case 'forget-lost': {
      const was = lost;
      lost = 0;
      return send({ kind: 'forgot', lost: was });
    }
    case 'report': return send({ kind: 'report', ...report() });
    case 'stop': {
      for (const d of devices) d.conn?.socket.destroy();
      return process.exit(0);
    }
  }
});
process.on('disconnect', () => process.exit(0));
