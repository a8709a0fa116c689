// The cluster benchmark (docs/benchmarks.md, "Cluster"): Skyport nodes on one PostgreSQL database
// and a nats-server of the benchmark's own, each figure beside a baseline in the same run.
//
//   npm run bench:cluster                              100,000 devices (several minutes)
//   npm run bench:cluster -- --devices 5000            a small run
//   npm run bench:cluster -- --parts calls,tokens      only some parts
//
// 1. devices: every device connects to one of as many gateway nodes as the open-files limit
//    needs (light devices: raw sockets, bench/config-devices.ts), beside a fresh Mosquitto holding
//    as many as its own limit lets it: memory per device, connect rate, every CONNACK 0. Then a
//    fleet configuration change written on the API node, and a reconnect storm with one changed
//    module, both timed until every device has acknowledged; the baseline: the same messages over
//    Mosquitto from a bare publisher (bench/config-baseline.ts).
// 2. calls: function calls at 64 callers through the API node to devices on two gateway nodes,
//    beside a single node (role all, no NATS) in the same run.
// 3. tokens: client_credentials tokens issued by two API nodes at once, beside one.
//
// Nodes run the work tree's build (dist/, what bin/skyport.js runs: `npm run build` first, which
// the npm script does).
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, freemem, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import type { Row as CallRow } from './call-drive.js';
import { callsPart, tokensPart, type TokenRow } from './cluster-calls.js';
import { connectFleet, timedRound, type ConnectRow, type Identity, type Proc, type RoundRow } from './cluster-devices.js';
import { connectedOn, copyConfigState, startNatsServer, startNode, stopNode, waitOnline, type Node } from './cluster-nodes.js';
import { startBaselineCloud } from './config-baseline.js';
import { roundDone, startFleet, type Fleet } from './config-fleet.js';
import {
  DEFAULT_ADMIN_URL, ROOT, admin, api, createDatabase, gitCommit, onCleanup, openFilesLimit, option, processOpenFiles, runBenchmark, serverInspector, sleep, userWithProduct,
} from './harness.js';
import { startMosquitto, type Mosquitto } from './mosquitto.js';

const USAGE = 'usage: npm run bench:cluster -- [--devices 100000] [--parts devices,calls,tokens] [--per-gateway N] [--per-worker N] [--in-flight 100] [--rounds 1] [--storm-rounds 1] [--settle 5] [--timeout 300] [--callers 64] [--connections 32] [--duration 8] [--warmup 2] [--heap] [--pg-admin-url URL]';
const args = process.argv.slice(2);
if (args.includes('--help')) {
  console.log(USAGE);
  process.exit(0);
}
const whole = (name: string, dflt: number, min = 1): number => {
  const v = Number(option(args, name) ?? dflt);
  if (!Number.isInteger(v) || v < min) throw new Error(`--${name} must be a whole number of at least ${min}\n${USAGE}`);
  return v;
};
/** File descriptors a node keeps for itself (listeners, PostgreSQL, NATS, logs): not for devices. */
const RESERVED_FDS = 1000;
const fds = openFilesLimit(0).limit;
const DEVICES = whole('devices', 100_000, 4);
const PARTS = new Set((option(args, 'parts') ?? 'devices,calls,tokens').split(','));
for (const p of PARTS) if (!['devices', 'calls', 'tokens'].includes(p)) throw new Error(`--parts: devices, calls, tokens\n${USAGE}`);
const PER_GATEWAY = whole('per-gateway', fds - RESERVED_FDS);
/** Sockets per device worker (a process, with the same open-files limit). */
const PER_WORKER = whole('per-worker', processOpenFiles(process.pid) - RESERVED_FDS);
/**
 * Connects in flight per server (each: connect, SUBACK, hello), split over its workers. Mosquitto
 * listens with a backlog of 100: a burst above it loses SYNs, retried after the kernel's 1 s.
 */
const IN_FLIGHT = whole('in-flight', 100);
const ROUNDS = whole('rounds', 1, 0);
const STORM_ROUNDS = whole('storm-rounds', 1, 0);
const SETTLE_S = whole('settle', 5, 0);
const TIMEOUT_MS = whole('timeout', 300) * 1000;
const CALLERS = whole('callers', 64);
const CONNECTIONS = whole('connections', 32, 2);
const DURATION = whole('duration', 8);
const WARMUP = whole('warmup', 2);
const ADMIN = option(args, 'pg-admin-url') ?? DEFAULT_ADMIN_URL;
/**
 * Also the gateways' JS heap after a full garbage collection, before and after the devices
 * connect (through their inspector: nodes run with --inspect on a port of their own): what a
 * device keeps, without the garbage that resident memory still holds after a connect storm.
 */
const HEAP = args.includes('--heap');

/** Reads a node's heap in use after a full garbage collection, in MB. */
async function heapReader(inspectorUrl: string): Promise<() => Promise<number>> {
  const session = await serverInspector(inspectorUrl);
  onCleanup(() => session.close());
  return async () => (await session.memory()).heapUsed;
}
/** Devices that answer calls: one takes at most 32 calls at once (src/gateway), half on each gateway. */
const CALL_DEVICES = Math.max(4, 2 * Math.ceil(CALLERS / 64));
const GATEWAYS = Math.max(2, Math.ceil(DEVICES / PER_GATEWAY));
const WARM = 50;

/** The module each round changes: `rgb` has a key with several values (as bench:config). */
const MODULE = 'rgb';
const VALUES = ['off', 'tracker'];
let valueIndex = 0;
const nextValue = () => VALUES[valueIndex++ % VALUES.length] as string;
const expectValue = (value: string) => ({ modules: [MODULE], check: { module: MODULE, key: 'type', value } });

/** Goals of issue 17 (docs/benchmarks.md, "Cluster"). */
const GOAL_KB = 10;
const GOAL_FLEET_MS = 30_000;
const GOAL_CALL_RATIO = 0.5;

interface Results { connect: ConnectRow[]; rounds: RoundRow[]; calls: CallRow[]; tokens: TokenRow[]; nodes: Record<string, number>; notes: string[] }
const results: Results = { connect: [], rounds: [], calls: [], tokens: [], nodes: {}, notes: [] };

/** Mosquitto: as many devices as it can hold, connected, then the same rounds from a bare publisher. */
async function mosquittoSide(): Promise<void> {
  const mq = await startMosquitto();
  const most = processOpenFiles(mq.pid) - 100;
  const count = Math.min(DEVICES, most);
  if (count < DEVICES) results.notes.push(`Mosquitto held ${count} devices, the most its open-files limit (${most + 100}) lets one process hold; Skyport's ${DEVICES} are spread over ${GATEWAYS} gateway processes.`);
  const prefix = `bench-cluster-${randomBytes(4).toString('hex')}`;
  const ids = Array.from({ length: count }, (_, i) => `d${i}`);
  const workers = Math.ceil(count / PER_WORKER);
  const setup = { host: mq.host, port: mq.port, mode: 'mosquitto' as const, prefix, inFlight: Math.max(1, Math.floor(IN_FLIGHT / workers)) };
  console.log(`Mosquitto (fresh, port ${mq.port}): ${count} devices`);
  const { fleet, row } = await connectFleet({ server: 'Mosquitto (baseline)', setup, devices: ids.map((id) => ({ id, secret: '' })), perWorker: PER_WORKER, warm: WARM, settleS: SETTLE_S, holders: [{ name: 'mosquitto', pid: mq.pid }], others: [] });
  printConnect(row);
  try {
    await mosquittoRounds(mq, prefix, fleet, ids);
  } finally {
    await fleet.stop();
    await mq.stop();
  }
}

async function mosquittoRounds(mq: Mosquitto, prefix: string, fleet: Fleet, ids: string[]): Promise<void> {
  const cloud = await startBaselineCloud(mq.host, mq.port, prefix);
  onCleanup(() => cloud.close().catch(() => undefined));
  const servers = [{ name: 'mosquitto', pid: mq.pid }];
  for (let round = 1; round <= ROUNDS; round++) {
    const value = nextValue();
    cloud.setFleet(MODULE, { type: value });
    results.rounds.push(await timedRound({ side: 'Mosquitto', scenario: 'fleet change', round, fleet, expect: expectValue(value), servers, timeoutMs: TIMEOUT_MS, trigger: async () => { cloud.push(ids, MODULE); return {}; } }));
  }
  for (let round = 1; round <= STORM_ROUNDS; round++) {
    await fleet.disconnect();
    const value = nextValue();
    cloud.setFleet(MODULE, { type: value });
    results.rounds.push(await timedRound({ side: 'Mosquitto', scenario: 'reconnect storm', round, fleet, expect: expectValue(value), servers, timeoutMs: TIMEOUT_MS, trigger: (t0) => reconnect(fleet, ids.length, t0) }));
  }
  await cloud.close();
}

async function reconnect(fleet: Fleet, count: number, t0: number): Promise<{ connectedMs: number }> {
  const c = await fleet.connect(true);
  if (c.ok !== count) throw new Error(`${c.ok} of ${count} devices reconnected (${JSON.stringify(c.codes)})`);
  return { connectedMs: c.lastReadyAt - t0 };
}

interface ClusterState { apiNode: Node; gateways: Node[]; nats: Awaited<ReturnType<typeof startNatsServer>>; databaseUrl: string; token: string; productId: number; identities: Identity[] }

/** The cluster: a nats-server, an API node and the gateway nodes, a product with every device provisioned. */
async function startClusterNodes(): Promise<ClusterState> {
  const nats = await startNatsServer();
  const databaseUrl = await createDatabase(ADMIN, 'skyport_cluster');
  // The first node migrates the database; the others start once it has.
  const apiNode = await startNode('api', 'api-1', { nats, databaseUrl, adminUrl: ADMIN });
  const gateways = await Promise.all(Array.from({ length: GATEWAYS }, (_, k) => startNode('gateway', `gateway-${k + 1}`, { nats, databaseUrl, adminUrl: ADMIN, inspect: HEAP })));
  const { token, productId } = await userWithProduct(apiNode.url, 'cluster');
  const t0 = Date.now();
  const identities: Identity[] = [];
  while (identities.length < DEVICES) {
    const { devices } = await api<{ devices: Array<{ id: string; device_secret: string }> }>(`${apiNode.url}/v1/products/${productId}/device_identities`, { token, json: { quantity: Math.min(10_000, DEVICES - identities.length) } });
    identities.push(...devices.map((d) => ({ id: d.id, secret: d.device_secret })));
  }
  // Devices in blocks, one block per gateway (as a load balancer spreading them evenly would).
  const per = Math.ceil(DEVICES / GATEWAYS);
  identities.forEach((d, i) => { d.port = (gateways[Math.floor(i / per)] as Node).mqttPort; });
  console.log(`cluster: nats-server, 1 API node, ${GATEWAYS} gateway nodes; ${DEVICES} devices provisioned in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  return { apiNode, gateways, nats, databaseUrl, token, productId, identities };
}

/**
 * One device takes the product's whole configuration (9 modules) through a gateway; what it
 * then holds is recorded for every other device in storage, and every device says it holds it.
 */
async function fleetInSync(c: ClusterState): Promise<Record<string, string>> {
  const model = c.identities[0] as Identity;
  const cfg = await api<{ configuration: { pending: Record<string, unknown> } }>(`${c.apiNode.url}/v1/products/${c.productId}/config/${model.id}`, { token: c.token });
  const modules = Object.keys(cfg.configuration.pending);
  if (!modules.includes(MODULE)) throw new Error(`the default configuration has no ${MODULE} module (${modules.join(', ')})`);
  const one = await startFleet({ host: '127.0.0.1', port: model.port as number, mode: 'skyport', prefix: '', inFlight: 1 }, [model], 1);
  const { done } = await one.expect({ modules });
  const t0 = Date.now();
  await one.connect(true);
  await roundDone(one, done, 'the first device\'s configuration', t0, 60_000);
  await one.disconnect();
  await one.stop();
  // Acknowledgements are stored in batches.
  for (let i = 0; ; i++) {
    const n = await admin(c.databaseUrl, (db) => db.query<{ n: string }>("SELECT count(*) AS n FROM device_config_state WHERE device_id = $1 AND status = 'in_sync'", [model.id]));
    if (Number(n.rows[0]?.n) === modules.length) break;
    if (i > 100) throw new Error(`the first device's ${modules.length} modules were not recorded in sync`);
    await sleep(100);
  }
  const t1 = Date.now();
  const held = await copyConfigState(c.databaseUrl, c.productId, model.id);
  console.log(`  every device recorded as holding the ${modules.length} modules (${((Date.now() - t1) / 1000).toFixed(1)} s)`);
  return held;
}

async function skyportSide(c: ClusterState, held: Record<string, string>): Promise<void> {
  const workersPerGateway = Math.ceil(Math.ceil(DEVICES / GATEWAYS) / PER_WORKER);
  const setup = { host: '127.0.0.1', port: 0, mode: 'skyport' as const, prefix: '', inFlight: Math.max(1, Math.floor(IN_FLIGHT / workersPerGateway)), held };
  const holders: Proc[] = await Promise.all(c.gateways.map(async (g) => ({
    name: g.nodeId, pid: g.pid, devices: c.identities.filter((d) => d.port === g.mqttPort).length,
    ...(HEAP && g.inspectorUrl ? { heapMb: await heapReader(g.inspectorUrl) } : {}),
  })));
  const others = [{ name: 'nats-server', pid: c.nats.pid }, { name: c.apiNode.nodeId, pid: c.apiNode.pid }];
  const { fleet, row } = await connectFleet({ server: `Skyport, ${GATEWAYS} gateway nodes`, setup, devices: c.identities, perWorker: PER_WORKER, warm: WARM * GATEWAYS, settleS: SETTLE_S, holders, others });
  printConnect(row);
  try {
    await skyportRounds(c, fleet, [...holders, ...others]);
  } finally {
    await fleet.stop();
  }
}

async function skyportRounds(c: ClusterState, fleet: Fleet, servers: Proc[]): Promise<void> {
  // What each gateway says it holds, and what storage shows online (the fan-out reads it).
  const reported = await Promise.all(c.gateways.map(connectedOn));
  for (const [k, g] of c.gateways.entries()) results.nodes[g.nodeId] = reported[k] as number;
  if (reported.reduce((a, n) => a + n, 0) !== DEVICES) throw new Error(`the gateways report ${reported.join(' + ')} devices connected, expected ${DEVICES}`);
  const onlineMs = await waitOnline(c.databaseUrl, c.productId, DEVICES);
  console.log(`  gateways report ${reported.join(' + ')} connected; storage showed all online ${onlineMs} ms after the settle`);
  for (let round = 1; round <= ROUNDS; round++) {
    const value = nextValue();
    results.rounds.push(await timedRound({
      side: 'Skyport', scenario: 'fleet change', round, fleet, expect: expectValue(value), servers, timeoutMs: TIMEOUT_MS,
      trigger: async (t0) => {
        await api(`${c.apiNode.url}/v1/products/${c.productId}/config`, { method: 'PUT', token: c.token, json: { [MODULE]: { type: value } } });
        return { putMs: Date.now() - t0 };
      },
    }));
  }
  for (let round = 1; round <= STORM_ROUNDS; round++) {
    await fleet.disconnect();
    await waitOnline(c.databaseUrl, c.productId, 0);
    // Written while every device is offline: the write's fan-out finds nobody; each device takes it at its hello.
    const value = nextValue();
    await api(`${c.apiNode.url}/v1/products/${c.productId}/config`, { method: 'PUT', token: c.token, json: { [MODULE]: { type: value } } });
    await sleep(1000);
    results.rounds.push(await timedRound({ side: 'Skyport', scenario: 'reconnect storm', round, fleet, expect: expectValue(value), servers, timeoutMs: TIMEOUT_MS, trigger: (t0) => reconnect(fleet, DEVICES, t0) }));
  }
}

/** The most connections the nodes held to their database at once, sampled every second (PostgreSQL's max_connections is shared). */
function sampleConnections(databaseUrl: string): { stop(): number } {
  const name = new URL(databaseUrl).pathname.slice(1);
  let peak = 0;
  const timer = setInterval(() => {
    void admin(ADMIN, (db) => db.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1', [name]))
      .then((r) => { peak = Math.max(peak, Number(r.rows[0]?.n ?? 0)); }, () => undefined);
  }, 1000);
  return { stop: () => { clearInterval(timer); return peak; } };
}

function printConnect(r: ConnectRow): void {
  results.connect.push(r);
  console.log(`  ${r.server}: ${r.ok} of ${r.devices} CONNACK 0 (${r.failed} failed${r.failed ? ` ${JSON.stringify(r.codes)}` : ''}) in ${r.seconds} s, ${r.rate}/s; ${r.kbPerDevice} KB per device${r.heapKbPerDevice === undefined ? '' : ` (JS heap after a full GC: ${r.heapKbPerDevice} KB)`}; ${r.memory.map((m) => `${m.name} ${m.beforeMb} → ${m.afterMb} MB`).join(', ')}`);
}

// ---------------------------------------------------------------------------------------------

const fmt = (n: number) => n.toLocaleString('en');

function report(): { lines: string[]; goals: Array<{ goal: string; met: boolean; value: string }> } {
  const lines: string[] = [];
  const goals: Array<{ goal: string; met: boolean; value: string }> = [];
  if (results.connect.length) {
    lines.push('| server | devices | CONNACK 0 | connect + subscribe + hello s | devices/s | KB per device (connection holders) | KB per device (all processes read) | memory before → after MB |', '|---|---:|---:|---:|---:|---:|---:|---|');
    for (const r of results.connect) lines.push(`| ${r.server} | ${fmt(r.devices)} | ${fmt(r.ok)} | ${r.seconds} | ${fmt(r.rate)} | ${r.kbPerDevice} | ${r.allKbPerDevice} | ${r.memory.map((m) => `${m.name} ${m.beforeMb} → ${m.afterMb}${m.kbPerDevice ? ` (${m.kbPerDevice} KB/device)` : ''}`).join('; ')} |`);
    const sky = results.connect.find((r) => r.server.startsWith('Skyport'));
    if (sky) {
      goals.push({ goal: `${fmt(DEVICES)} devices connected, every CONNACK 0`, met: sky.ok === DEVICES && sky.failed === 0 && sky.lost === 0, value: `${fmt(sky.ok)} CONNACK 0, ${sky.failed} failed, ${sky.lost} lost` });
      goals.push({ goal: `memory per device ≤ ${GOAL_KB} KB`, met: sky.kbPerDevice <= GOAL_KB, value: `${sky.kbPerDevice} KB (gateways)` });
    }
    lines.push('');
  }
  if (results.rounds.length) {
    lines.push('| scenario | side | round | devices | ms until every device acknowledged | devices/s | p50 / p99 ms | first set ms | server CPU s |', '|---|---|---:|---:|---:|---:|---:|---:|---:|');
    for (const r of results.rounds) lines.push(`| ${r.scenario} | ${r.side} | ${r.round} | ${fmt(r.devices)} | ${fmt(r.ms)}${r.connectedMs !== undefined ? ` (all connected at ${fmt(r.connectedMs)})` : ''} | ${fmt(r.rate)} | ${r.p50Ms} / ${r.p99Ms} | ${r.firstSetMs} | ${r.serverCpuS ?? '-'} |`);
    for (const scenario of ['fleet change', 'reconnect storm'] as const) {
      const s = results.rounds.filter((r) => r.side === 'Skyport' && r.scenario === scenario);
      const m = results.rounds.filter((r) => r.side === 'Mosquitto' && r.scenario === scenario);
      if (s.length && m.length) lines.push(`| ${scenario}: Skyport's devices/s ÷ Mosquitto's | | | | | ${(Math.min(...s.map((r) => r.rate)) / Math.max(...m.map((r) => r.rate))).toFixed(2)} (worst ÷ best) | | | |`);
    }
    const fleet = results.rounds.filter((r) => r.side === 'Skyport' && r.scenario === 'fleet change');
    if (fleet.length) goals.push({ goal: `fleet change acknowledged by all ${fmt(DEVICES)} devices ≤ ${GOAL_FLEET_MS / 1000} s`, met: fleet.every((r) => r.ms <= GOAL_FLEET_MS && r.problems.length === 0), value: fleet.map((r) => `${fmt(r.ms)} ms`).join(', ') });
    lines.push('');
  }
  if (results.calls.length) {
    lines.push('| calls | callers | calls/s | p50 / p99 ms | rate ÷ single node | server CPU µs per call (all nodes and nats-server) |', '|---|---:|---:|---:|---:|---:|');
    for (const r of results.calls) lines.push(`| ${r.scenario} | ${r.concurrency} | ${fmt(r.rate)} | ${r.p50} / ${r.p99} | ${r.rateRatio?.toFixed(2)} | ${r.serverUsPerCall ?? '-'} |`);
    const cl = results.calls.find((r) => r.side === 'cluster');
    if (cl) goals.push({ goal: `calls at ${CALLERS} callers through the cluster ≥ ${GOAL_CALL_RATIO} of a single node`, met: (cl.rateRatio ?? 0) >= GOAL_CALL_RATIO, value: `${cl.rateRatio}` });
    lines.push('');
  }
  if (results.tokens.length) {
    lines.push('| client_credentials tokens | connections | tokens/s | p50 / p99 ms (worst node) | ratio to one node | API nodes\' CPU µs per token |', '|---|---:|---:|---:|---:|---:|');
    for (const r of results.tokens) lines.push(`| ${r.nodes} API node${r.nodes > 1 ? 's' : ''} | ${CONNECTIONS} | ${fmt(r.rate)} | ${r.p50Ms} / ${r.p99Ms} | ${r.ratio?.toFixed(2)} | ${r.apiCpuUsPerToken ?? '-'} |`);
  }
  return { lines, goals };
}

async function main(): Promise<void> {
  const date = new Date().toISOString();
  const load0 = loadavg();
  console.log(`Cluster benchmark: ${fmt(DEVICES)} devices over ${GATEWAYS} gateway nodes (open-files limit ${fds}, at most ${PER_GATEWAY} per node); parts ${[...PARTS].join(', ')}; ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB (${Math.round(freemem() / 2 ** 30)} free), load average ${load0.map((l) => l.toFixed(2)).join(' ')}`);
  // A part that fails is recorded and the next one runs: what was measured is still reported.
  const failures: string[] = [];
  const part = async (name: string, work: () => Promise<void>) => {
    try {
      await work();
    } catch (err) {
      console.error(`\n${name} FAILED: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
      failures.push(`${name}: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
  if (PARTS.has('devices')) await part('Mosquitto baseline', mosquittoSide);
  const c = await startClusterNodes();
  const sampler = sampleConnections(c.databaseUrl);
  if (PARTS.has('devices')) await part('Skyport devices', async () => skyportSide(c, await fleetInSync(c)));
  // The calls and tokens need two gateways and the API node: the others are stopped.
  await Promise.all(c.gateways.slice(2).map(stopNode));
  if (PARTS.has('calls')) {
    await part('function calls', async () => {
      results.calls = await callsPart({
        apiNode: c.apiNode, gateways: [c.gateways[0] as Node, c.gateways[1] as Node], nats: c.nats, token: c.token, devices: c.identities.slice(0, CALL_DEVICES).map(({ id, secret }) => ({ id, secret })),
        adminUrl: ADMIN, callers: CALLERS, warmup: WARMUP, duration: DURATION, rounds: 2,
      });
    });
  }
  if (PARTS.has('tokens')) {
    await part('tokens', async () => {
      const api2 = await startNode('api', 'api-2', { nats: c.nats, databaseUrl: c.databaseUrl, adminUrl: ADMIN });
      results.tokens = await tokensPart({ apiNodes: [c.apiNode, api2], token: c.token, connections: CONNECTIONS, warmup: WARMUP, duration: DURATION, rounds: 2 });
    });
  }
  const peakConnections = sampler.stop();
  results.notes.push(`PostgreSQL connections of the cluster's database: at most ${peakConnections} at once (sampled every second).`);

  const load1 = loadavg();
  const commit = gitCommit();
  const { lines, goals } = report();
  console.log(`\n${date.slice(0, 10)}, ${cpus().length} cores, Node ${process.version}, commit ${commit ?? 'unknown'}, load average ${load0[0]?.toFixed(2)} before, ${load1[0]?.toFixed(2)} after\n\n${lines.join('\n')}\n`);
  for (const n of results.notes) console.log(n);
  for (const g of goals) console.log(`${g.met ? 'met    ' : 'NOT MET'}  ${g.goal}: ${g.value}`);

  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `cluster-${date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify({
    date, command: ['npm run bench:cluster', ...(args.length ? ['--', ...args] : [])].join(' '), commit,
    machine: { cores: cpus().length, cpu: cpus()[0]?.model, memoryGiB: Math.round(totalmem() / 2 ** 30), node: process.version, openFiles: fds, loadAverageBefore: load0, loadAverageAfter: load1 },
    options: { devices: DEVICES, gateways: GATEWAYS, parts: [...PARTS], perGateway: PER_GATEWAY, perWorker: PER_WORKER, inFlight: IN_FLIGHT, rounds: ROUNDS, stormRounds: STORM_ROUNDS, settleSeconds: SETTLE_S, callers: CALLERS, callDevices: CALL_DEVICES, connections: CONNECTIONS, duration: DURATION, warmup: WARMUP, module: MODULE },
    summary: lines, goals, ...results,
  }, null, 2)}\n`);
  console.log(`\nresults: ${file}`);
  if (failures.length) throw new Error(`${failures.length} part(s) failed:\n${failures.join('\n')}`);
  const bad = results.rounds.filter((r) => r.problems.length > 0);
  if (bad.length) throw new Error(`some rounds were not clean:\n${bad.map((r) => `${r.side} ${r.scenario} #${r.round}: ${r.problems.join('; ')}`).join('\n')}`);
  const failedConnects = results.connect.filter((r) => r.ok !== r.devices || r.lost > 0);
  if (failedConnects.length) throw new Error(`not every device connected and stayed connected: ${failedConnects.map((r) => `${r.server}: ${r.ok} of ${r.devices}, ${r.lost} lost`).join('; ')}`);
  const failedTokens = results.tokens.filter((r) => r.failed > 0);
  if (failedTokens.length) throw new Error(`token requests failed: ${failedTokens.map((r) => `${r.nodes} node(s): ${r.failed}`).join('; ')}`);
}

runBenchmark('bench:cluster', 90 * 60, main);
