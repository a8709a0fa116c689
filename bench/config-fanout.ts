// The configuration fan-out benchmark (docs/benchmarks.md): how long until every device of a
// 10,000-device fleet has taken and acknowledged a configuration change, (1) pushed to connected
// devices by a fleet write and (2) picked up in a reconnect storm, beside the same messages fanned
// out over the local Mosquitto by a bare publisher, in the same run, and by the Node.js floor:
// broker and bare publisher in one Node.js process (bench/node-floor.ts), the most a Node.js
// cloud reaches on the machine.
//
//   npm run bench:config                              10,000 devices, embedded store
//   npm run bench:config -- --store postgres          or both
//   npm run bench:config -- --quick                   1,000 devices, one round of each
//   npm run bench:config -- --devices 5000 --rounds 5 --storm-rounds 2
//   npm run bench:config -- --probe                   also a CPU profile and the storage statements of every Skyport phase
//   npm run bench:config -- --no-node-floor           without the Node.js floor
//   npm run bench:config -- --restart-rounds 0        without the restart storms
//
// Processes: Skyport (its own process, compiled, as an operator starts it), the devices (worker
// processes, bench/config-devices.ts, raw sockets), and this one (the API calls, the baseline's
// publisher). Skyport and the baseline never run loaded at once: the devices connect to one, then
// leave it for the other.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startBaselineCloud, type BaselineCloud } from './config-baseline.js';
import { startCommandChild } from './command-child.js';
import type { Expect, Report } from './config-devices.js';
import { problemsOf, roundDone, startFleet } from './config-fleet.js';
import {
  DEFAULT_ADMIN_URL, ROOT, accepting, api, commandLine, buildSkyport, cpuSeconds, gitCommit, onCleanup, option, percentile, round2, runBenchmark, sleep, startSkyport, stopChild,
  threadCpuSeconds, threadSplit,
  userWithProduct, type Skyport, type Store,
} from './harness.js';
import { attachProbe, type PhaseProbe } from './probe.js';

const USAGE = 'usage: npm run bench:config -- [--quick] [--devices 10000] [--store embedded|postgres|both] [--rounds 3] [--storm-rounds 2] [--restart-rounds 2] [--per-worker 5000] [--in-flight 100] [--timeout 300] [--probe] [--no-node-floor] [--from build|source] [--mosquitto mqtt://127.0.0.1:1883] [--pg-admin-url URL]';
const { args, quick, stores } = commandLine(USAGE, 'embedded');
const DEVICES = Number(option(args, 'devices') ?? (quick ? 1000 : 10_000));
const ROUNDS = Number(option(args, 'rounds') ?? (quick ? 1 : 3));
const STORM_ROUNDS = Number(option(args, 'storm-rounds') ?? (quick ? 1 : 2));
/** Restarts of Skyport under its connected fleet: the odd ones by SIGTERM (a deploy), the even ones by SIGKILL (a crash). */
const RESTART_ROUNDS = Number(option(args, 'restart-rounds') ?? 2);
/** Sockets per device worker: a worker is one process, and its fds count against its own limit. */
const PER_WORKER = Number(option(args, 'per-worker') ?? 5000);
/**
 * Connects in flight in all, split over the workers (each: connect, SUBACK, hello). Mosquitto
 * listens with a backlog of 100: a burst above it loses SYNs, retried after the kernel's 1 s
 * timeout, which would measure that timer rather than the broker.
 */
const IN_FLIGHT = Number(option(args, 'in-flight') ?? 100);
const TIMEOUT_MS = Number(option(args, 'timeout') ?? 300) * 1000;
const PROBE = args.includes('--probe');
/** Also the Node.js floor (bench/node-floor.ts), once, after the first baseline. */
const NODE_FLOOR = !args.includes('--no-node-floor');
const FROM = option(args, 'from') ?? 'build';
if (!['build', 'source'].includes(FROM)) throw new Error(`--from must be build or source\n${USAGE}`);
const MOSQUITTO = new URL(option(args, 'mosquitto') ?? 'mqtt://127.0.0.1:1883');
const ADMIN = option(args, 'pg-admin-url') ?? DEFAULT_ADMIN_URL;
for (const [n, v] of Object.entries({ devices: DEVICES, rounds: ROUNDS, 'per-worker': PER_WORKER, 'in-flight': IN_FLIGHT, timeout: TIMEOUT_MS })) {
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${n} must be a whole number above 0\n${USAGE}`);
}
for (const [n, v] of Object.entries({ 'storm-rounds': STORM_ROUNDS, 'restart-rounds': RESTART_ROUNDS })) {
  if (!Number.isInteger(v) || v < 0) throw new Error(`--${n} must be a whole number\n${USAGE}`);
}

/** The goal: a fleet change acknowledged by all 10,000 devices within 5 s. */
const GOAL_MS = 5000;
/** Devices whose configuration is also read back through the API after each round. */
const SAMPLE = 20;
const BULK = 10_000; // POST /v1/products/:p/device_identities takes at most 10,000 at once
/** The changed module: `rgb` has one key with three values, so each round can change it. */
const MODULE = 'rgb';
const VALUES = ['off', 'tracker'];

type Scenario = 'initial sync' | 'fleet change' | 'reconnect storm' | 'restart storm';
interface Row {
  scenario: Scenario;
  side: 'skyport' | 'baseline' | 'floor';
  store: Store | null;
  round: number;
  devices: number;
  /** config/set messages per device the round expects. */
  modules: number;
  /** From the trigger (PUT sent, first publish, reconnects started) to the last device's acknowledgement. */
  ms: number;
  p50Ms: number;
  p99Ms: number;
  firstSetMs: number;
  /** Reconnect storm: until every device was connected, subscribed and had sent its hello. */
  connectedMs?: number;
  /** Restart storm: how the server was stopped. */
  signal?: 'SIGTERM' | 'SIGKILL';
  /** Restart storm: from the signal until the restarted server accepted HTTP and MQTT connections. */
  restartMs?: number;
  /** Restart storm: of that, from the restarted server's spawn. */
  startMs?: number;
  /** Skyport fleet change: until the PUT answered. */
  putMs?: number;
  /** Skyport: until the API showed no pending module for every sampled device. */
  apiInSyncMs?: number;
  /** Skyport storms: a page of the product's device list (read from the store), asked again and again during the round. */
  apiDuring?: ApiDuring;
  /** Baseline: until the publisher had every acknowledgement. */
  acksReceivedMs?: number;
  /** CPU seconds over the round (server: Skyport or Mosquitto). */
  serverCpuS: number | null;
  /** Skyport: the same by thread: main, the busiest other (the embedded store's), the rest (V8's compiler and GC helpers, libuv's pool). */
  serverThreadsCpuS?: { main: number; busiest: number; rest: number };
  postgresCpuS?: number;
  devicesCpuS: number;
  sets: number;
  problems: string[];
  probe?: PhaseProbe;
}

const rows: Row[] = [];
const inFlightPerWorker = () => Math.max(1, Math.floor(IN_FLIGHT / Math.ceil(DEVICES / PER_WORKER)));
let valueIndex = 0;
const nextValue = () => VALUES[valueIndex++ % VALUES.length] as string;
const check = (value: string): Expect['check'] => ({ module: MODULE, key: 'type', value });

function rowOf(base: Pick<Row, 'scenario' | 'side' | 'store' | 'round' | 'modules'>, t0: number, r: Report, cpu: { server: number | null; threads?: Row['serverThreadsCpuS']; devices: number; postgres?: number }): Row {
  const latencies = r.ackTimes.map((t) => t - t0).sort((a, b) => a - b);
  const problems = problemsOf(r);
  return {
    ...base, devices: r.devices, ms: r.lastAckAt - t0, p50Ms: percentile(latencies, 0.5), p99Ms: percentile(latencies, 0.99), firstSetMs: r.firstSetAt - t0,
    serverCpuS: cpu.server === null ? null : round2(cpu.server), ...(cpu.threads ? { serverThreadsCpuS: cpu.threads } : {}), ...(cpu.postgres !== undefined ? { postgresCpuS: round2(cpu.postgres) } : {}),
    devicesCpuS: round2(cpu.devices), sets: r.sets, problems,
  };
}

function print(row: Row): void {
  const extra = [
    row.restartMs !== undefined ? `stopped by ${row.signal} and serving again after ${row.restartMs} ms (${row.startMs} ms from its spawn)` : '',
    row.putMs !== undefined ? `PUT answered ${row.putMs} ms` : '', row.connectedMs !== undefined ? `all connected ${row.connectedMs} ms` : '',
    row.apiInSyncMs !== undefined ? `API in sync ${row.apiInSyncMs} ms` : '',
    row.apiDuring ? `device list during it: ${row.apiDuring.requests} requests, p50 ${row.apiDuring.p50Ms} ms, max ${row.apiDuring.maxMs} ms, ${row.apiDuring.failed} failed` : '', row.acksReceivedMs !== undefined ? `acks at publisher ${row.acksReceivedMs} ms` : '',
    `server CPU ${row.serverCpuS ?? '-'} s${row.serverThreadsCpuS ? ` (main ${row.serverThreadsCpuS.main}, busiest other ${row.serverThreadsCpuS.busiest}, rest ${row.serverThreadsCpuS.rest})` : ''}`, row.postgresCpuS !== undefined ? `PostgreSQL CPU ${row.postgresCpuS} s` : '',
  ].filter(Boolean).join(', ');
  console.log(`  ${row.scenario} #${row.round}: ${row.devices} devices × ${row.modules} module(s) in ${row.ms} ms (p50 ${row.p50Ms}, p99 ${row.p99Ms}, first set ${row.firstSetMs} ms; ${extra})${row.problems.length ? `  PROBLEMS: ${row.problems.join('; ')}` : ''}`);
  rows.push(row);
}

function mosquittoPid(): number | null {
  if (!['127.0.0.1', 'localhost'].includes(MOSQUITTO.hostname)) return null;
  try {
    return Number(execFileSync('pgrep', ['-o', '-x', 'mosquitto'], { encoding: 'utf8' }).trim()) || null;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------------------------
// The baseline: the same payloads over Mosquitto, with a bare publisher as the cloud.

/**
 * The Node.js floor (bench/node-floor.ts): broker and cloud in one Node.js process with no
 * storage, taking the same devices; its cloud is driven over IPC.
 */
async function startFloor(prefix: string): Promise<{ host: string; port: number; pid: number; cloud: BaselineCloud }> {
  const floor = await startCommandChild('node-floor.ts', 'the Node.js floor', (err) => console.error(err.message));
  const port = await floor.call<number>({ cmd: 'start', prefix });
  return {
    host: '127.0.0.1', port, pid: floor.child.pid as number,
    cloud: {
      setFleet: (module, value) => floor.call<void>({ cmd: 'setFleet', module, value }),
      push: (ids, module) => floor.call<void>({ cmd: 'push', ids, module }),
      acks: async (n, timeoutMs) => ({ lastAt: await floor.call<number>({ cmd: 'acks', n, timeoutMs }, timeoutMs + 5000) }),
      close: () => floor.stop(),
    },
  };
}

/** Mosquitto, with the bare publisher connected to it as the cloud. */
async function startMosquittoSide(prefix: string): Promise<{ host: string; port: number; pid: number | null; cloud: BaselineCloud }> {
  const host = MOSQUITTO.hostname;
  const port = Number(MOSQUITTO.port || 1883);
  return { host, port, pid: mosquittoPid(), cloud: await startBaselineCloud(host, port, prefix) };
}

/** The baseline over Mosquitto with its bare publisher, or (`floor`) the Node.js floor. */
async function baselineRun(side: 'baseline' | 'floor' = 'baseline'): Promise<void> {
  const prefix = `bench-config-${randomBytes(4).toString('hex')}`;
  const { host, port, pid, cloud } = side === 'floor' ? await startFloor(prefix) : await startMosquittoSide(prefix);
  const name = side === 'floor' ? 'Node.js floor' : 'baseline';
  onCleanup(() => cloud.close().catch(() => undefined));
  const ids = Array.from({ length: DEVICES }, (_, i) => `d${i}`);
  const fleet = await startFleet({ host, port, mode: 'mosquitto', prefix, inFlight: inFlightPerWorker() }, ids.map((id) => ({ id, secret: '' })), PER_WORKER);
  console.log(side === 'floor' ? `Node.js floor: broker and cloud in one process, ${DEVICES} devices` : `baseline: Mosquitto at ${host}:${port}, ${DEVICES} devices`);
  const c = await fleet.connect(false);
  if (c.ok !== DEVICES) throw new Error(`${name}: ${c.ok} of ${DEVICES} devices connected (${JSON.stringify(c.codes)})`);
  const cpu0 = () => ({ server: cpuSeconds(pid ?? undefined), devices: fleet.cpu() });
  const cpuSince = (a: ReturnType<typeof cpu0>) => ({ server: a.server === null ? null : (cpuSeconds(pid ?? undefined) ?? 0) - a.server, devices: fleet.cpu() - a.devices });

  for (let round = 1; round <= ROUNDS; round++) {
    const value = nextValue();
    await cloud.setFleet(MODULE, { type: value });
    const { done } = await fleet.expect({ modules: [MODULE], check: check(value) });
    const cpu = cpu0();
    const t0 = Date.now();
    await cloud.push(ids, MODULE);
    const acks = cloud.acks(DEVICES, TIMEOUT_MS);
    const r = await roundDone(fleet, done, `${name} fleet change`, t0, TIMEOUT_MS);
    const { lastAt } = await acks;
    print({ ...rowOf({ scenario: 'fleet change', side, store: null, round, modules: 1 }, t0, r, cpuSince(cpu)), acksReceivedMs: lastAt - t0 });
  }
  for (let round = 1; round <= STORM_ROUNDS; round++) {
    await fleet.disconnect();
    const value = nextValue();
    await cloud.setFleet(MODULE, { type: value });
    const { done } = await fleet.expect({ modules: [MODULE], check: check(value) });
    const cpu = cpu0();
    const t0 = Date.now();
    const acks = cloud.acks(DEVICES, TIMEOUT_MS);
    const connected = await fleet.connect(true);
    if (connected.ok !== DEVICES) throw new Error(`${name}: ${connected.ok} of ${DEVICES} devices reconnected (${JSON.stringify(connected.codes)})`);
    const r = await roundDone(fleet, done, `${name} reconnect storm`, t0, TIMEOUT_MS);
    const { lastAt } = await acks;
    print({ ...rowOf({ scenario: 'reconnect storm', side, store: null, round, modules: 1 }, t0, r, cpuSince(cpu)), connectedMs: connected.lastReadyAt - t0, acksReceivedMs: lastAt - t0 });
  }
  await fleet.stop();
  await cloud.close();
}

// ---------------------------------------------------------------------------------------------
// Skyport.

/**
 * CPU of the PostgreSQL backends serving the benchmark's database: a reading to take at the start
 * of a phase, which gives the seconds used since. A backend that exits during the phase (the
 * pool closes clients idle for 10 s) takes its share with it; one that starts counts from zero.
 */
async function postgresCpu(databaseUrl: string | undefined): Promise<(() => Promise<() => Promise<number>>) | undefined> {
  if (!databaseUrl) return undefined;
  const name = new URL(databaseUrl).pathname.slice(1);
  const reading = async () => {
    const c = new pg.Client({ connectionString: ADMIN });
    await c.connect();
    try {
      const pids = (await c.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [name])).rows.map((r) => r.pid);
      return new Map(pids.map((p) => [p, cpuSeconds(p) ?? 0]));
    } finally {
      await c.end();
    }
  };
  return async () => {
    const start = await reading();
    return async () => [...(await reading())].reduce((a, [p, s]) => a + s - (start.get(p) ?? 0), 0);
  };
}

/** Pages through the product's devices until `online` of them are online. */
async function waitOnline(url: string, productId: number, token: string, online: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  let count = -1;
  while (Date.now() < deadline) {
    count = 0;
    for (let page = 1; ; page++) {
      const r = await api<{ devices: Array<{ online: boolean }>; meta: { total_pages: number } }>(`${url}/v1/products/${productId}/devices?per_page=1000&page=${page}`, { token });
      count += r.devices.filter((d) => d.online).length;
      if (page >= r.meta.total_pages) break;
    }
    if (count === online) return;
    await sleep(500);
  }
  throw new Error(`the API shows ${count} devices online, expected ${online}`);
}

type DeviceConfig = { configuration: { current: Record<string, Record<string, unknown>>; pending: Record<string, unknown> } };

interface ApiDuring { requests: number; p50Ms: number; p99Ms: number; maxMs: number; failed: number }

/**
 * What an API client meets during a storm: GET /v1/products/:p/devices (a page of 25, read from
 * the store, never from memory), one request at a time, 50 ms apart, until `stop`. A storm must
 * leave the API its share of the store.
 */
function apiDuring(url: string, productId: number, token: string): { stop(): Promise<ApiDuring> } {
  const times: number[] = [];
  let failed = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const t = performance.now();
      const res = await fetch(`${url}/v1/products/${productId}/devices?per_page=25`, { headers: { authorization: `Bearer ${token}` } }).catch(() => null);
      await res?.arrayBuffer();
      times.push(performance.now() - t);
      if (!res?.ok) failed++;
      await sleep(50);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      const sorted = times.map(Math.round).sort((a, b) => a - b);
      return { requests: sorted.length, p50Ms: percentile(sorted, 0.5), p99Ms: percentile(sorted, 0.99), maxMs: sorted.at(-1) ?? 0, failed };
    },
  };
}

/** Time from t0 until GET /v1/products/:p/config/:id shows nothing pending for every sampled device. */
async function apiInSync(url: string, productId: number, token: string, sample: string[], value: string, t0: number): Promise<number> {
  const deadline = Date.now() + 30_000;
  for (const id of sample) {
    for (;;) {
      const r = await api<DeviceConfig>(`${url}/v1/products/${productId}/config/${id}`, { token });
      if (Object.keys(r.configuration.pending).length === 0 && r.configuration.current[MODULE]?.type === value) break;
      if (Date.now() > deadline) throw new Error(`the API still shows device ${id} with pending ${JSON.stringify(Object.keys(r.configuration.pending))}, ${MODULE} = ${JSON.stringify(r.configuration.current[MODULE])}`);
      await sleep(100);
    }
  }
  return Date.now() - t0;
}

/** Until `ready` says yes, at most `ms`, or fails naming `what`. */
async function until(what: string, ms: number, ready: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms / 1000} s`);
    await sleep(50);
  }
}

async function skyportRun(store: Store, build: string | undefined): Promise<void> {
  const startOpts = {
    adminUrl: ADMIN, ...(build ? { build } : {}),
    ...(PROBE ? { nodeArgs: ['--inspect=127.0.0.1:0', '--import', join(ROOT, 'bench', 'count-queries.mjs')] } : {}),
  };
  let sky: Skyport = await startSkyport(store, startOpts);
  const attach = async () => {
    const p = PROBE && sky.inspectorUrl ? await attachProbe(sky.inspectorUrl) : undefined;
    if (PROBE && !p) throw new Error('--probe: the server printed no inspector address');
    if (p) onCleanup(() => p.close());
    return p;
  };
  let probe = await attach();
  const { token, productId } = await userWithProduct(sky.url, 'configuration fan-out');
  const identities: Array<{ id: string; secret: string }> = [];
  while (identities.length < DEVICES) {
    const { devices } = await api<{ devices: Array<{ id: string; device_secret: string }> }>(`${sky.url}/v1/products/${productId}/device_identities`, { token, json: { quantity: Math.min(BULK, DEVICES - identities.length) } });
    identities.push(...devices.map((d) => ({ id: d.id, secret: d.device_secret })));
  }
  const sample = Array.from({ length: Math.min(SAMPLE, DEVICES) }, (_, i) => (identities[Math.floor((i * DEVICES) / Math.min(SAMPLE, DEVICES))] as { id: string }).id);
  // Every module a new device is sent: what the API says is pending for it before it connects.
  const first = await api<DeviceConfig>(`${sky.url}/v1/products/${productId}/config/${identities[0]?.id}`, { token });
  const modules = Object.keys(first.configuration.pending);
  if (!modules.includes(MODULE)) throw new Error(`the default configuration has no ${MODULE} module (${modules.join(', ')})`);
  console.log(`skyport (${store}): ${DEVICES} devices provisioned; a new device takes ${modules.length} modules (${modules.join(', ')})`);

  const fleet = await startFleet({ host: sky.mqttHost, port: sky.mqttPort, mode: 'skyport', prefix: '', inFlight: inFlightPerWorker() }, identities, PER_WORKER);
  const pgCpu = await postgresCpu(sky.databaseUrl);
  const measure = async () => {
    const server = cpuSeconds(sky.pid);
    const threads = threadCpuSeconds(sky.pid);
    const devices = fleet.cpu();
    const pgSince = pgCpu ? await pgCpu() : undefined;
    await probe?.start();
    return async (phase: string) => ({
      server: server === null ? null : (cpuSeconds(sky.pid) ?? 0) - server, threads: threadSplit(sky.pid, threads), devices: fleet.cpu() - devices,
      ...(pgSince ? { postgres: await pgSince() } : {}),
      probe: probe ? await probe.stop(join(ROOT, 'bench', 'results', `config-fanout-${store}-${DEVICES}-${phase}-${Date.now()}.cpuprofile`)) : undefined,
    });
  };
  const withProbe = (row: Row, p: PhaseProbe | undefined): Row => (p ? { ...row, probe: p } : row);
  /**
   * A storm: every device reconnects at once, until each has acknowledged the one module changed
   * to `value`, timed from the reconnects' start, with the API read meanwhile (`apiDuring`).
   */
  const storm = async (scenario: 'reconnect storm' | 'restart storm', round: number, phase: string, value: string, extra: Partial<Row> = {}) => {
    const { done } = await fleet.expect({ modules: [MODULE], check: check(value) });
    const stop = await measure();
    const during = apiDuring(sky.url, productId, token);
    const t0 = Date.now();
    const connected = await fleet.connect(true);
    if (connected.ok !== DEVICES) throw new Error(`${scenario}: ${connected.ok} of ${DEVICES} devices reconnected to Skyport (${JSON.stringify(connected.codes)})`);
    const r = await roundDone(fleet, done, `${scenario}${extra.signal ? ` (${extra.signal})` : ''}`, t0, TIMEOUT_MS);
    const apiSeen = await during.stop();
    const cpu = await stop(phase);
    const row = withProbe({ ...rowOf({ scenario, side: 'skyport', store, round, modules: 1 }, t0, r, cpu), connectedMs: connected.lastReadyAt - t0, ...extra, apiDuring: apiSeen }, cpu.probe);
    print({ ...row, apiInSyncMs: await apiInSync(sky.url, productId, token, sample, value, t0) });
  };

  // Initial sync: every device connects holding nothing and takes every module, one at a time.
  {
    const { done } = await fleet.expect({ modules });
    const stop = await measure();
    const t0 = Date.now();
    const connected = await fleet.connect(true);
    if (connected.ok !== DEVICES) throw new Error(`${connected.ok} of ${DEVICES} devices connected to Skyport (${JSON.stringify(connected.codes)})`);
    const r = await roundDone(fleet, done, 'initial sync', t0, Math.max(TIMEOUT_MS, 600_000));
    const cpu = await stop('initial');
    print(withProbe({ ...rowOf({ scenario: 'initial sync', side: 'skyport', store, round: 1, modules: modules.length }, t0, r, cpu), connectedMs: connected.lastReadyAt - t0 }, cpu.probe));
  }
  await waitOnline(sky.url, productId, token, DEVICES);

  for (let round = 1; round <= ROUNDS; round++) {
    const value = nextValue();
    const { done } = await fleet.expect({ modules: [MODULE], check: check(value) });
    const stop = await measure();
    const t0 = Date.now();
    await api(`${sky.url}/v1/products/${productId}/config`, { method: 'PUT', token, json: { [MODULE]: { type: value } } });
    const putMs = Date.now() - t0;
    const r = await roundDone(fleet, done, 'fleet change', t0, TIMEOUT_MS);
    const cpu = await stop(`fleet-${round}`);
    const row = withProbe({ ...rowOf({ scenario: 'fleet change', side: 'skyport', store, round, modules: 1 }, t0, r, cpu), putMs }, cpu.probe);
    print({ ...row, apiInSyncMs: await apiInSync(sky.url, productId, token, sample, value, t0) });
  }

  for (let round = 1; round <= STORM_ROUNDS; round++) {
    await fleet.disconnect();
    await waitOnline(sky.url, productId, token, 0);
    // The change is made while every device is offline: the write's fan-out finds nobody.
    const value = nextValue();
    await api(`${sky.url}/v1/products/${productId}/config`, { method: 'PUT', token, json: { [MODULE]: { type: value } } });
    await sleep(1000);
    await storm('reconnect storm', round, `storm-${round}`, value);
  }

  // Restart storms: the fleet is connected and in sync when the server stops, by SIGTERM as a
  // deploy stops it or by SIGKILL as a crash does. A fleet change is made just before, which every
  // device acknowledges without keeping it (`forgetful`): each reconnects reporting the old hash,
  // so the restarted server, its caches empty and its code not yet optimised, has one module to
  // send to all, as after a change made while they were away.
  for (let round = 1; round <= RESTART_ROUNDS; round++) {
    const signal = round % 2 === 1 ? 'SIGTERM' : 'SIGKILL';
    const value = nextValue();
    await fleet.forgetful(true);
    await api(`${sky.url}/v1/products/${productId}/config`, { method: 'PUT', token, json: { [MODULE]: { type: value } } });
    await until('every device acknowledging the change it forgets', 60_000, async () => (await fleet.report()).missed >= DEVICES);
    probe?.close();
    const exited = new Promise<void>((resolve) => sky.child.once('exit', () => resolve()));
    const tStop = Date.now();
    sky.child.kill(signal);
    await exited;
    await until('every device seeing its connection closed', 60_000, async () => (await fleet.report()).lost >= DEVICES);
    const lost = await fleet.forgetLost();
    if (lost !== DEVICES) throw new Error(`${lost} connections were lost when Skyport stopped, expected ${DEVICES}`);
    const tStart = Date.now();
    sky = await startSkyport(store, { ...startOpts, reuse: sky, samePorts: true });
    await accepting(sky.mqttPort);
    const restartMs = Date.now() - tStop;
    const startMs = Date.now() - tStart;
    probe = await attach();
    await fleet.forgetful(false);
    await storm('restart storm', round, `restart-${round}`, value, { signal, restartMs, startMs });
  }

  await fleet.stop();
  probe?.close();
  await stopChild(sky.child, 30_000);
}

// ---------------------------------------------------------------------------------------------
// Summary.

const median = (values: number[]) => percentile([...values].sort((a, b) => a - b), 0.5);

/** One line per scenario and store: Skyport's median beside the baseline runs just before and after. */
function summary(): { lines: string[]; goals: Array<{ goal: string; store: Store; met: boolean; value: string }> } {
  const lines = [
    '| scenario | store | devices | Skyport ms (median; rounds) | p99 of devices ms | Mosquitto baseline ms (median; rounds) | ratio Skyport/Mosquitto | Node.js floor ms (median; rounds) | ratio Skyport/floor | Skyport server CPU s |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const goals: Array<{ goal: string; store: Store; met: boolean; value: string }> = [];
  stores.forEach((store, i) => {
    for (const scenario of ['fleet change', 'reconnect storm'] as const) {
      const sky = rows.filter((r) => r.side === 'skyport' && r.store === store && r.scenario === scenario);
      if (sky.length === 0) continue;
      // The baseline runs before the first store and after each: its neighbours are runs i and i+1.
      const baselineRuns = rows.filter((r) => r.side === 'baseline' && r.scenario === scenario);
      const perRun = baselineRuns.length / (stores.length + 1);
      const near = [...baselineRuns.slice(i * perRun, (i + 1) * perRun), ...baselineRuns.slice((i + 1) * perRun, (i + 2) * perRun)];
      const s = median(sky.map((r) => r.ms));
      const b = median(near.map((r) => r.ms));
      const floor = rows.filter((r) => r.side === 'floor' && r.scenario === scenario);
      const f = floor.length > 0 ? median(floor.map((r) => r.ms)) : undefined;
      const against = (label: string, of: Row[], ms: number) => `| ${label} | ${store} | ${DEVICES} | ${ms} (${of.map((r) => r.ms).join(', ')}) | ${median(of.map((r) => r.p99Ms))} | ${b} (${near.map((r) => r.ms).join(', ')}) | ${round2(ms / b)} | ${f === undefined ? '-' : `${f} (${floor.map((r) => r.ms).join(', ')})`} | ${f === undefined ? '-' : round2(ms / f)} | ${median(of.map((r) => r.serverCpuS ?? NaN))} |`;
      lines.push(against(scenario, sky, s));
      if (scenario === 'fleet change') goals.push({ goal: `fleet change acknowledged by all ${DEVICES} devices within ${GOAL_MS / 1000} s`, store, met: sky.every((r) => r.ms <= GOAL_MS), value: `${sky.map((r) => r.ms).join(', ')} ms` });
      // A restart storm is the same work for the devices as a reconnect storm: the same baselines.
      if (scenario === 'reconnect storm') {
        for (const r of rows.filter((x) => x.side === 'skyport' && x.store === store && x.scenario === 'restart storm')) {
          lines.push(against(`restart storm, ${r.signal} (serving again ${r.restartMs} ms after it)`, [r], r.ms));
        }
      }
    }
    const init = rows.find((r) => r.side === 'skyport' && r.store === store && r.scenario === 'initial sync');
    if (init) lines.push(`| initial sync (${init.modules} modules each) | ${store} | ${DEVICES} | ${init.ms} | ${init.p99Ms} | - | - | - | - | ${init.serverCpuS ?? '-'} |`);
  });
  return { lines, goals };
}

async function main(): Promise<void> {
  const date = new Date().toISOString();
  const load0 = loadavg();
  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
  console.log(`Configuration fan-out benchmark: ${DEVICES} devices; stores ${stores.join(', ')}; ${ROUNDS} fleet change(s) and ${STORM_ROUNDS} reconnect storm(s) per side, ${RESTART_ROUNDS} restart storm(s) per store; ${Math.ceil(DEVICES / PER_WORKER)} device worker(s), ${IN_FLIGHT} connects in flight in all; ${cpus().length} cores, load average ${load0.map((l) => l.toFixed(2)).join(' ')}`);
  const build = FROM === 'build' ? buildSkyport() : undefined;

  await baselineRun();
  if (NODE_FLOOR) await baselineRun('floor');
  for (const store of stores) {
    await skyportRun(store, build);
    await baselineRun();
  }

  const load1 = loadavg();
  const commit = gitCommit();
  const { lines, goals } = summary();
  console.log(`\n${date.slice(0, 10)}, ${cpus().length} cores, Node ${process.version}, commit ${commit ?? 'unknown'}, load average ${load0[0]?.toFixed(2)} before, ${load1[0]?.toFixed(2)} after\n\n${lines.join('\n')}\n`);
  for (const g of goals) console.log(`${g.met ? 'met    ' : 'NOT MET'}  ${g.goal} [${g.store}]: ${g.value}`);
  for (const r of rows.filter((x) => x.probe)) {
    const p = r.probe as PhaseProbe;
    console.log(`\nprobe: ${r.scenario} #${r.round} (${r.store}), ${p.seconds} s profiled, ${p.profile}`);
    console.log(`  by area: ${p.byArea.slice(0, 10).map((a) => `${a.area} ${a.pct}%`).join('; ')}`);
    console.log(`  by self time: ${p.bySelf.slice(0, 10).map((a) => `${a.fn} ${a.pct}%`).join('; ')}`);
    console.log(`  statements: ${p.queries.slice(0, 12).map((q) => `${q.calls}× (${q.rows} rows${q.ms === undefined ? '' : `, ${Math.round(q.ms)} ms`}) ${q.sql.slice(0, 90)}`).join('\n              ')}`);
  }

  const file = join(ROOT, 'bench', 'results', `config-fanout-${date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify({
    date, command: ['npm run bench:config', ...(args.length ? ['--', ...args] : [])].join(' '), commit,
    machine: { cores: cpus().length, cpu: cpus()[0]?.model, node: process.version, loadAverageBefore: load0, loadAverageAfter: load1 },
    options: { devices: DEVICES, stores, nodeFloor: NODE_FLOOR, rounds: ROUNDS, stormRounds: STORM_ROUNDS, restartRounds: RESTART_ROUNDS, perWorker: PER_WORKER, inFlight: IN_FLIGHT, timeoutMs: TIMEOUT_MS, probe: PROBE, from: FROM, mosquitto: MOSQUITTO.toString(), module: MODULE },
    summary: lines, goals, rows,
  }, null, 2)}\n`);
  console.log(`\nresults: ${file}`);

  const bad = rows.filter((r) => r.problems.length > 0);
  if (bad.length > 0) throw new Error(`some rounds were not clean:\n${bad.map((r) => `${r.side} ${r.store ?? ''} ${r.scenario} #${r.round}: ${r.problems.join('; ')}`).join('\n')}`);
}

runBenchmark('bench:config', 60 * 60, main);
