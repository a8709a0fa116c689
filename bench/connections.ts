// The connection benchmark: how many idle devices one Skyport node holds, what each costs the
// server in memory, and how fast they connect; beside Mosquitto taking the same connections in the
// same run (docs/benchmarks.md), and beside the Node.js floor: a bare Node.js server that only
// answers CONNACK (bench/node-floor.ts), the most any Node.js gateway reaches here.
//
//   npm run bench:connections                          10,000 and 50,000 devices, embedded store
//   npm run bench:connections -- --store postgres      or both
//   npm run bench:connections -- --counts 2000 --quick
//   npm run bench:connections -- --heap                also the server's JS heap after a full GC
//   npm run bench:connections -- --profile             a CPU profile of the server while devices connect
//   npm run bench:connections -- --alloc-profile       what the server allocates meanwhile (sampled, collected objects kept)
//   npm run bench:connections -- --heap-snapshot       heap snapshots of the server before and after (to bench/results/)
//   npm run bench:connections -- --no-node-floor       without the Node.js floor
//
// A count above what the open-files limit lets one process hold is measured at the most the limit
// allows, and said so: nothing is extrapolated.
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import {
  DEFAULT_ADMIN_URL, ROOT, api, commandLine, buildSkyport, cpuTimes, exitedEarly, gitCommit, serverInspector, onCleanup, openFilesLimit, option, processOpenFiles, round2, rssKb,
  runBenchmark, sleep, startSkyport, stopChild, timeout, track, userWithProduct, type Store,
} from './harness.js';
import { startMosquitto } from './mosquitto.js';
import { startCommandChild } from './command-child.js';

const USAGE = 'usage: npm run bench:connections -- [--quick] [--counts 10000,50000] [--store embedded|postgres|both] [--in-flight 250] [--keepalive 120] [--settle 3] [--mosquitto spawn|mqtt://127.0.0.1:1883] [--heap] [--profile | --alloc-profile] [--heap-snapshot] [--no-node-floor] [--from build|source] [--pg-admin-url URL]';
const { args, quick, stores } = commandLine(USAGE, 'embedded');
const counts = (option(args, 'counts') ?? (quick ? '2000' : '10000,50000')).split(',').map(Number);
/** Connects in flight per load process. */
const IN_FLIGHT = Number(option(args, 'in-flight') ?? 250);
const KEEPALIVE = Number(option(args, 'keepalive') ?? 120);
const SETTLE_S = Number(option(args, 'settle') ?? 3);
const MOSQUITTO = option(args, 'mosquitto') ?? 'spawn';
const HEAP = args.includes('--heap');
const PROFILE = args.includes('--profile');
/** A sampled profile of what the server allocates while devices connect, objects since collected included (what garbage collection pays for). */
const ALLOC_PROFILE = args.includes('--alloc-profile');
const SNAPSHOT = args.includes('--heap-snapshot');
/** Also the Node.js floor: a bare Node.js MQTT server taking the same connections (bench/node-floor.ts). */
const NODE_FLOOR = !args.includes('--no-node-floor');
const FROM = option(args, 'from') ?? 'build';
if (!['build', 'source'].includes(FROM)) throw new Error(`--from must be build or source\n${USAGE}`);
const ADMIN = option(args, 'pg-admin-url') ?? DEFAULT_ADMIN_URL;
if (counts.some((c) => !Number.isInteger(c) || c < 1)) throw new Error(`--counts: whole numbers\n${USAGE}`);
/** File descriptors a server keeps for itself (listeners, storage, logs): not for devices. */
const RESERVED_FDS = 1000;
/** The most sockets one load process opens. */
const MAX_PER_WORKER = 15_000;
const BULK = 10_000; // POST /v1/products/:p/device_identities takes at most 10,000 at once

interface Outcome {
  server: string;
  store: Store | null;
  requested: number;
  measured: number;
  cappedBy?: string;
  /** Devices connected before the first reading (see connectAll), not in the rate nor the per-device figures. */
  warm: number;
  ok: number;
  failed: number;
  codes: Record<string, number>;
  /** Connections that answered a PINGREQ after the settle time. */
  alive: number;
  seconds: number;
  rate: number;
  connectP50Ms: number;
  connectP99Ms: number;
  rssBeforeMb: number;
  rssPeakMb: number;
  rssAfterMb: number;
  kbPerDevice: number;
  heapBeforeMb?: number;
  heapAfterMb?: number;
  heapKbPerDevice?: number;
  /** RSS growth between the two readings taken right after a full GC (--heap). */
  rssAfterGcKbPerDevice?: number;
  /** process.memoryUsage() of the server after a full GC (--heap). */
  memoryUsageMb?: { before: Record<string, number>; after: Record<string, number> };
  serverCpuMsPerConnect: number | null;
  serverCpu: { userS: number; systemS: number } | null;
  workers: number;
}

interface WorkerDone { kind: 'done'; ok: number; failed: number; codes: Record<string, number>; latency: { p50: number; p99: number; max: number }; started: number; finished: number }

/** One load process (bench/connector.ts). */
function startWorker(): ChildProcess {
  const child = track(fork(join(ROOT, 'bench', 'connector.ts'), [], { cwd: ROOT, execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  onCleanup(() => stopChild(child, 2000));
  return child;
}

function ask<T>(child: ChildProcess, message: unknown, answer: string, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onMessage = (m: { kind: string }) => {
      if (m.kind !== answer) return;
      child.off('message', onMessage);
      resolve(m as T);
    };
    child.on('message', onMessage);
    child.send(message as object);
    exitedEarly(child, 'a load process', () => '').catch(reject);
    timeout(ms, `a load process's ${answer}`).catch(reject);
  });
}

/** How many ephemeral ports one source address has towards one destination (Linux's ip_local_port_range). */
function ephemeralPorts(): number {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (low !== undefined && high !== undefined && high >= low) return high - low + 1;
  } catch { /* not Linux */ }
  return 28_232;
}

const inspector = serverInspector;
type Inspector = Awaited<ReturnType<typeof serverInspector>>;

/**
 * Connects every identity from load processes of at most `perWorker` sockets each, reads the
 * server's memory before and after, and checks every connection is still held.
 */
async function connectAll(target: { host: string; port: number; pid: number; inspector?: Inspector; profile?: string; snapshot?: string }, identities: Array<{ id: string; secret: string }>, perWorker: number) {
  // A source address of its own per load process only when one address's ephemeral ports would
  // not reach the server: binding before connecting makes the kernel search for a free port among
  // every socket bound to that address, which cost the load processes 11-33 s of system CPU for
  // 10,000 connects here, against 1.3-2.0 s for a plain connect (that search grows with the
  // sockets still in TIME_WAIT from earlier runs, so it favoured whichever side ran first).
  const ownAddresses = identities.length > ephemeralPorts() - 1000;
  const job = (ids: Array<{ id: string; secret: string }>, k: number) => ({
    kind: 'job', host: target.host, port: target.port, identities: ids, inFlight: IN_FLIGHT, keepalive: KEEPALIVE,
    ...(ownAddresses ? { localAddress: `127.0.0.${10 + k}` } : {}),
  });
  // Warm-up: a few devices connect before the first reading, so that one-time costs (compiled
  // code, mqtt-packet's table of 65,536 two-byte buffers, about 6 MB, made at the first packet
  // it writes) do not count as the cost of each device. They stay connected.
  const warm = identities.slice(0, Math.max(1, Math.min(100, Math.floor(identities.length / 100))));
  const rest = identities.slice(warm.length);
  const warmWorker = startWorker();
  const warmed = await ask<WorkerDone>(warmWorker, job(warm, 0), 'done', 60_000);
  if (warmed.ok !== warm.length) throw new Error(`warm-up: ${warmed.ok} of ${warm.length} devices connected (${JSON.stringify(warmed.codes)})`);
  await sleep(2000);

  if (target.snapshot) await target.inspector?.snapshot(`${target.snapshot}-before.heapsnapshot`);
  const memBefore = HEAP ? await target.inspector?.memory() : undefined;
  if (target.profile) {
    if (ALLOC_PROFILE) {
      await target.inspector?.send('HeapProfiler.enable');
      await target.inspector?.send('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    } else {
      await target.inspector?.send('Profiler.enable');
      await target.inspector?.send('Profiler.start');
    }
  }
  const before = rssKb(target.pid);
  let peak = before;
  const sampler = setInterval(() => { peak = Math.max(peak, rssKb(target.pid)); }, 250);
  const cpu0 = cpuTimes(target.pid);
  const n = Math.max(2, Math.ceil(rest.length / perWorker));
  const size = Math.ceil(rest.length / n);
  const workers = Array.from({ length: n }, () => startWorker());
  const done = await Promise.all(workers.map((w, k) => ask<WorkerDone>(w, job(rest.slice(k * size, (k + 1) * size), k + 1), 'done', 10 * 60_000)));
  const cpu1 = cpuTimes(target.pid);
  if (target.profile && target.inspector) {
    const { profile } = await target.inspector.send<{ profile: unknown }>(ALLOC_PROFILE ? 'HeapProfiler.stopSampling' : 'Profiler.stop');
    writeFileSync(target.profile, JSON.stringify(profile));
    console.log(`  ${ALLOC_PROFILE ? 'Allocation' : 'CPU'} profile of the server while devices connected: ${target.profile}`);
  }
  const seconds = (Math.max(...done.map((d) => d.finished)) - Math.min(...done.map((d) => d.started))) / 1000;
  await sleep(SETTLE_S * 1000); // presence writes and garbage collection settle before the reading
  clearInterval(sampler);
  const after = rssKb(target.pid);
  peak = Math.max(peak, after);
  const memAfter = HEAP ? await target.inspector?.memory() : undefined;
  if (target.snapshot) {
    await target.inspector?.snapshot(`${target.snapshot}-after.heapsnapshot`);
    console.log(`  heap snapshots of the server: ${target.snapshot}-{before,after}.heapsnapshot`);
  }
  const all = [warmWorker, ...workers];
  const checked = await Promise.all(all.map((w) => ask<{ open: number; alive: number; lost: number }>(w, { kind: 'check' }, 'checked', 30_000)));
  const ok = done.reduce((a, d) => a + d.ok, 0);
  const codes: Record<string, number> = {};
  for (const d of done) for (const [k, v] of Object.entries(d.codes)) codes[k] = (codes[k] ?? 0) + v;
  const cpu = cpu0 && cpu1 ? { user: cpu1.user - cpu0.user, system: cpu1.system - cpu0.system } : null;
  const outcome = {
    warm: warm.length, ok: ok + warmed.ok, failed: done.reduce((a, d) => a + d.failed, 0), codes, alive: checked.reduce((a, c) => a + c.alive, 0),
    seconds: round2(seconds), rate: Math.round(ok / seconds),
    // The load processes' own percentiles: the worst of them, to stay on the safe side.
    connectP50Ms: round2(Math.max(...done.map((d) => d.latency.p50))), connectP99Ms: round2(Math.max(...done.map((d) => d.latency.p99))),
    rssBeforeMb: Math.round(before / 1024), rssPeakMb: Math.round(peak / 1024), rssAfterMb: Math.round(after / 1024),
    kbPerDevice: round2((after - before) / Math.max(1, ok)),
    ...(memBefore && memAfter ? {
      heapBeforeMb: memBefore.heapUsed, heapAfterMb: memAfter.heapUsed, heapKbPerDevice: round2(((memAfter.heapUsed - memBefore.heapUsed) * 1024) / Math.max(1, ok)),
      rssAfterGcKbPerDevice: round2(((memAfter.rss - memBefore.rss) * 1024) / Math.max(1, ok)),
      memoryUsageMb: { before: memBefore, after: memAfter },
    } : {}),
    serverCpuMsPerConnect: cpu ? round2(((cpu.user + cpu.system) * 1000) / Math.max(1, ok)) : null,
    serverCpu: cpu && { userS: round2(cpu.user), systemS: round2(cpu.system) },
    workers: n,
  };
  return { outcome, stop: () => Promise.all(all.map((w) => stopChild(w, 5000))) };
}

/** The measured count: what the limit lets one process hold, when less than asked. */
function capped(requested: number, limit: number): { measured: number; cappedBy?: string } {
  const most = limit - RESERVED_FDS;
  return requested <= most ? { measured: requested } : { measured: most, cappedBy: `open-files limit ${limit} (hard)` };
}

/** Made-up client ids for a server that does not authenticate; the password is sent as to Skyport, and ignored. */
function madeUpIdentities(count: number): Array<{ id: string; secret: string }> {
  const tag = Math.random().toString(16).slice(2, 8);
  return Array.from({ length: count }, (_, i) => ({ id: `bench-${tag}-${i}`, secret: 'x'.repeat(32) }));
}

async function mosquittoRun(requested: number, perWorker: number): Promise<Outcome> {
  const spawned = MOSQUITTO === 'spawn' ? await startMosquitto() : undefined;
  const url = spawned ? undefined : new URL(MOSQUITTO);
  const pid = spawned?.pid ?? Number(execFileSync('pgrep', ['-o', '-x', 'mosquitto'], { encoding: 'utf8' }).trim());
  const { measured, cappedBy } = capped(requested, processOpenFiles(pid));
  await sleep(1000);
  const { outcome, stop } = await connectAll({ host: spawned?.host ?? url?.hostname ?? '127.0.0.1', port: spawned?.port ?? Number(url?.port || 1883), pid }, madeUpIdentities(measured), perWorker);
  await stop();
  await spawned?.stop();
  return { server: spawned ? 'Mosquitto (fresh broker, baseline)' : 'Mosquitto (running broker, baseline)', store: null, requested, measured, ...(cappedBy ? { cappedBy } : {}), ...outcome };
}

/**
 * The Node.js floor (bench/node-floor.ts): a Node.js process that only accepts, parses and
 * answers CONNACK 0. What it reaches against Mosquitto is the most any Node.js gateway can reach
 * here, before authentication, presence or anything else a cloud does for a connect.
 */
async function nodeFloorRun(requested: number, perWorker: number): Promise<Outcome> {
  const floor = await startCommandChild('node-floor.ts', 'the Node.js floor', (err) => console.error(err.message));
  const port = await floor.call<number>({ cmd: 'start' });
  const pid = floor.child.pid as number;
  const { measured, cappedBy } = capped(requested, processOpenFiles(pid));
  const { outcome, stop } = await connectAll({ host: '127.0.0.1', port, pid }, madeUpIdentities(measured), perWorker);
  await stop();
  await floor.stop();
  return { server: 'bare Node.js MQTT server (floor)', store: null, requested, measured, ...(cappedBy ? { cappedBy } : {}), ...outcome };
}

async function skyportRun(store: Store, requested: number, perWorker: number, openFiles: number, build: string | undefined): Promise<Outcome> {
  const { measured, cappedBy } = capped(requested, openFiles);
  // Provisioning runs on a server of its own; the devices then connect to a fresh server on the
  // same data, as after a restart, so that its memory holds nothing of the provisioning.
  const setup = await startSkyport(store, { adminUrl: ADMIN, ...(build ? { build } : {}) });
  const { token, productId } = await userWithProduct(setup.url, 'connections');
  const identities: Array<{ id: string; secret: string }> = [];
  while (identities.length < measured) {
    const { devices } = await api<{ ok: boolean; devices: Array<{ id: string; device_secret: string }> }>(`${setup.url}/v1/products/${productId}/device_identities`, { token, json: { quantity: Math.min(BULK, measured - identities.length) } });
    identities.push(...devices.map((d) => ({ id: d.id, secret: d.device_secret })));
  }
  await stopChild(setup.child, 30_000);
  const sky = await startSkyport(store, { reuse: setup, openFiles, ...(build ? { build } : {}), ...(HEAP || PROFILE || ALLOC_PROFILE || SNAPSHOT ? { nodeArgs: ['--inspect=127.0.0.1:0'] } : {}) });
  const ins = sky.inspectorUrl ? await inspector(sky.inspectorUrl) : undefined;
  const limit = processOpenFiles(sky.pid);
  if (limit < measured + RESERVED_FDS) throw new Error(`the server runs with an open-files limit of ${limit}, too few for ${measured} devices`);
  const profile = PROFILE || ALLOC_PROFILE ? join(ROOT, 'bench', 'results', `connections-${store}-${measured}-${Date.now()}.${ALLOC_PROFILE ? 'heapprofile' : 'cpuprofile'}`) : undefined;
  const snapshot = SNAPSHOT ? join(ROOT, 'bench', 'results', `connections-${store}-${measured}-${Date.now()}`) : undefined;
  const { outcome, stop } = await connectAll({ host: sky.mqttHost, port: sky.mqttPort, pid: sky.pid, ...(ins ? { inspector: ins } : {}), ...(profile ? { profile } : {}), ...(snapshot ? { snapshot } : {}) }, identities, perWorker);
  ins?.close();
  // Every device still listed in the product: what was connected was the provisioned fleet.
  const fleet = await api<{ meta: { total: number } }>(`${sky.url}/v1/products/${productId}/devices?per_page=1`, { token });
  if (fleet.meta.total !== measured) throw new Error(`the product lists ${fleet.meta.total} devices, expected ${measured}`);
  await stopChild(sky.child, 30_000);
  await stop();
  return { server: 'Skyport gateway', store, requested, measured, ...(cappedBy ? { cappedBy } : {}), ...outcome };
}

async function main(): Promise<void> {
  const date = new Date().toISOString();
  const load0 = loadavg();
  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
  const fds = openFilesLimit(Math.max(...counts) + RESERVED_FDS);
  const own = processOpenFiles(process.pid);
  const perWorker = Math.min(MAX_PER_WORKER, own - 500);
  console.log(`Connection benchmark: counts ${counts.join(', ')}; stores ${stores.join(', ')}; ${cpus().length} cores, load average ${load0.map((l) => l.toFixed(2)).join(' ')}`);
  console.log(`open files: hard limit ${fds.hard}; a server can be given ${fds.limit}${fds.raised ? ' (raised)' : fds.limit < Math.max(...counts) + RESERVED_FDS ? ' (raising it is not permitted here)' : ''}; load processes of at most ${perWorker} sockets, ${IN_FLIGHT} connects in flight each`);

  // The server runs compiled, as `npm start` runs it: through tsx, a second V8 isolate (its
  // loader thread) and the transformed sources add about 70 MB that moves on its own.
  const build = FROM === 'build' ? buildSkyport() : undefined;
  const rows: Outcome[] = [];
  const print = (o: Outcome) => console.log(`  ${o.server}${o.store ? ` (${o.store})` : ''}, ${o.measured} devices${o.cappedBy ? ` (asked ${o.requested}; capped by the ${o.cappedBy})` : ''}: ${o.ok} CONNACK 0, ${o.failed} failed, ${o.alive} alive; ${o.rate}/s; RSS ${o.rssBeforeMb} → ${o.rssAfterMb} MB (${o.kbPerDevice} KB/device)${o.heapKbPerDevice !== undefined ? `; heap ${o.heapBeforeMb} → ${o.heapAfterMb} MB (${o.heapKbPerDevice} KB/device)` : ''}`);
  for (const count of counts) {
    const m = await mosquittoRun(count, perWorker);
    print(m);
    rows.push(m);
    if (NODE_FLOOR) {
      const f = await nodeFloorRun(count, perWorker);
      print(f);
      rows.push(f);
    }
    for (const store of stores) {
      const s = await skyportRun(store, count, perWorker, fds.limit, build);
      print(s);
      rows.push(s);
    }
  }

  const load1 = loadavg();
  const commit = gitCommit();
  const lines = [
    `| server | store | devices | CONNACK 0 | still connected | connect s | connects/s | connect p50/p99 ms | server CPU ms per connect | RSS before → after MB (peak) | RSS KB per device |${HEAP ? ' heap KB per device (after GC) | RSS KB per device (after GC) |' : ''}`,
    `|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|${HEAP ? '---:|---:|' : ''}`,
    ...rows.map((r) => `| ${r.server} | ${r.store ?? '-'} | ${r.measured}${r.cappedBy ? ` (asked ${r.requested})` : ''} | ${r.ok} | ${r.alive} | ${r.seconds} | ${r.rate} | ${r.connectP50Ms} / ${r.connectP99Ms} | ${r.serverCpuMsPerConnect ?? '-'} | ${r.rssBeforeMb} → ${r.rssAfterMb} (${r.rssPeakMb}) | ${r.kbPerDevice} |${HEAP ? ` ${r.heapKbPerDevice ?? '-'} | ${r.rssAfterGcKbPerDevice ?? '-'} |` : ''}`),
  ];
  console.log(`\n${date.slice(0, 10)}, ${cpus().length} cores, Node ${process.version}, commit ${commit ?? 'unknown'}, load average ${load0[0]?.toFixed(2)} before, ${load1[0]?.toFixed(2)} after\n\n${lines.join('\n')}\n`);
  for (const r of rows) if (r.cappedBy) console.log(`${r.server}${r.store ? ` (${r.store})` : ''}: ${r.requested} devices could not be tried: the ${r.cappedBy} lets one process hold about ${r.measured}`);

  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `connections-${date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify({
    date, command: ['npm run bench:connections', ...(args.length ? ['--', ...args] : [])].join(' '), commit,
    machine: { cores: cpus().length, cpu: cpus()[0]?.model, node: process.version, loadAverageBefore: load0, loadAverageAfter: load1, openFiles: fds },
    options: { counts, stores, from: FROM, nodeFloor: NODE_FLOOR, inFlight: IN_FLIGHT, keepalive: KEEPALIVE, settleSeconds: SETTLE_S, mosquitto: MOSQUITTO, heap: HEAP, profile: PROFILE, allocProfile: ALLOC_PROFILE, snapshot: SNAPSHOT, perWorker },
    rows,
  }, null, 2)}\n`);
  console.log(`\nresults: ${file}`);

  const bad = rows.filter((r) => r.failed > 0 || r.ok !== r.measured || r.alive !== r.ok);
  if (bad.length > 0) throw new Error(`not every device connected and stayed connected:\n${bad.map((r) => `${r.server} ${r.store ?? ''} ${r.measured}: ${r.ok} CONNACK 0, ${r.failed} failed ${JSON.stringify(r.codes)}, ${r.alive} alive`).join('\n')}`);
}

runBenchmark('bench:connections', 15 * 60, main);
