// `npm run bench`: token issuance and authenticated reads of Skyport, each measured beside a bare
// node:http server in the same run so that the result is a ratio (docs/benchmarks.md).
//
//   npm run bench                          10 s per scenario, embedded store and PostgreSQL
//   npm run bench -- --quick               3 s per scenario (smoke run)
//   npm run bench -- --duration 20 --store embedded
//   npm run bench -- --no-flood            without the flood scenario and the limiter's cost
//   npm run bench -- --flood-only          only those (with the baseline)
//
// Every server under test runs in its own child process on 127.0.0.1 (a free port), so that the
// load generator (autocannon, in this process) does not share its CPU. Each measurement is
// preceded by a short warm-up. Any non-2xx answer or socket error fails the run. Then, on the first
// store: a flood (one address far over its limit, another's read latency beside it) and the
// limiter's cost on the read path (limits on, never reached, against off).
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { Pool } from 'undici';
import {
  DEFAULT_ADMIN_URL, LIMITS_OFF, ROOT, admin, captureOutput, cpuSeconds, exitedEarly, gitCommit,
  onCleanup, percentile, round2, runCleanups, sleep, startSkyport as startBuiltSkyport, stopChild, timeout, track, type Store,
} from './harness.js';

const CONNECTIONS = 32;
const GOAL_TOKENS_PER_SECOND = 5000;
const GOAL_TOKEN_RATIO = 0.25;
const GOAL_READ_RATIO = 0.5;
/** The flood: the flooded address's p99 at most this many times its p99 alone. */
const GOAL_FLOOD_P99_RATIO = 2;
/** The flooding address (A) and the one that keeps reading (B): loopback addresses, no set-up on Linux. */
const FLOODER = '127.0.0.2';
const READER = '127.0.0.3';
const FLOOD_CONNECTIONS = 32;
/** Particle's limit, Skyport's default: B's reads of one run must stay under it. */
const DEFAULT_REQUEST_LIMIT = 10_000;


interface Options {
  duration: number;
  warmup: number;
  quick: boolean;
  stores: Store[];
  oidc: boolean;
  adminUrl: string;
  flood: boolean;
  floodOnly: boolean;
  /** The reading address's steady rate in the flood scenario, requests per second. */
  floodRate: number;
}

const USAGE = `usage: npm run bench -- [--quick] [--duration SECONDS] [--warmup SECONDS] [--store embedded|postgres|both] [--no-oidc] [--no-flood | --flood-only] [--flood-rate PER_SECOND] [--pg-admin-url URL]`;

function parseOptions(argv: readonly string[]): Options {
  const o: Options = { duration: 10, warmup: 2, quick: false, stores: ['embedded', 'postgres'], oidc: true, adminUrl: DEFAULT_ADMIN_URL, flood: true, floodOnly: false, floodRate: 100 };
  let duration: number | undefined;
  let warmup: number | undefined;
  for (let i = 0; i < argv.length; i++) {
    const [name, inline] = (argv[i] as string).split('=', 2) as [string, string | undefined];
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new Error(`${name} needs a value\n${USAGE}`);
      return v;
    };
    const seconds = (): number => {
      const n = Number(value());
      if (!Number.isFinite(n) || n <= 0 || n > 300) throw new Error(`${name} must be a number of seconds between 0 and 300`);
      return n;
    };
    switch (name) {
      case '--quick': o.quick = true; break;
      case '--duration': duration = seconds(); break;
      case '--warmup': warmup = seconds(); break;
      case '--no-oidc': o.oidc = false; break;
      case '--no-flood': o.flood = false; break;
      case '--flood-only': o.floodOnly = true; o.oidc = false; break;
      case '--flood-rate': {
        const n = Number(value());
        if (!Number.isInteger(n) || n < 1 || n > 1000) throw new Error('--flood-rate must be a whole number of requests per second between 1 and 1000');
        o.floodRate = n;
        break;
      }
      case '--pg-admin-url': o.adminUrl = value(); break;
      case '--store': {
        const v = value();
        if (v === 'both') o.stores = ['embedded', 'postgres'];
        else if (v === 'embedded' || v === 'postgres') o.stores = [v];
        else throw new Error(`--store must be embedded, postgres or both\n${USAGE}`);
        break;
      }
      case '--help': console.log(USAGE); process.exit(0); break;
      default: throw new Error(`unknown option ${name}\n${USAGE}`);
    }
  }
  o.duration = duration ?? (o.quick ? 3 : 10);
  o.warmup = warmup ?? (o.quick ? 1 : 2);
  if (o.floodOnly && !o.flood) throw new Error(`--flood-only and --no-flood exclude each other\n${USAGE}`);
  if (o.flood && o.floodRate * (o.warmup + 2 * o.duration) > 0.9 * DEFAULT_REQUEST_LIMIT) {
    throw new Error(`--flood-rate ${o.floodRate} × (warm-up + 2 × duration) would take the reading address near its own limit (${DEFAULT_REQUEST_LIMIT} per 5 minutes): lower the rate or the duration`);
  }
  return o;
}

interface Running { name: string; url: string; child: ChildProcess; output: () => string; databaseUrl?: string }

/** Forks one of the .mjs servers of bench/; it reports its port over IPC. */
async function forkServer(name: string, script: string, env: Record<string, string> = {}): Promise<Running> {
  const child = track(fork(join(ROOT, 'bench', script), [], { execArgv: [], cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] }));
  const output = captureOutput(child);
  const ready = new Promise<number>((resolve) => child.once('message', (m) => resolve((m as { port: number }).port)));
  const port = await Promise.race([ready, exitedEarly(child, name, output), timeout(30_000, `${name} start`)]);
  return { name, url: `http://127.0.0.1:${port}`, child, output };
}

/**
 * The built server as `npm start` runs it (bin/skyport.js's compiled code, dist/ of the work
 * tree: `npm run bench` builds first), with the real (production) password hashing, sign-up
 * open for the benchmark's user, and the per-address limits off unless `limits` says otherwise
 * (`{}`: the defaults).
 * BENCH_SERVER_NODE_ARGS adds Node flags to the server (e.g. --cpu-prof).
 */
function startSkyport(store: Store, adminUrl: string, limits: Record<string, string> = LIMITS_OFF): Promise<Running> {
  return startBuiltSkyport(store, { adminUrl, limits: 'default', env: { SIGNUP: 'on', ...limits }, build: ROOT });
}

/** PostgreSQL server processes serving the benchmark database (same machine only). */
async function backendPids(adminUrl: string, databaseUrl: string | undefined): Promise<number[]> {
  if (!databaseUrl) return [];
  const db = new URL(databaseUrl).pathname.slice(1);
  const rows = await admin(adminUrl, (c) => c.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [db]));
  return rows.rows.map((r) => Number(r.pid));
}

// ---------------------------------------------------------------------------------------------
// Measurement.

interface Scenario {
  name: string;
  store: Store | null;
  request: { url: string; method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string };
  /** Checks one answer before the load, so that a wrong setup cannot pass as fast. */
  check(status: number, body: string): void;
}

interface Row {
  scenario: string;
  store: Store | null;
  requestsPerSecond: number;
  requestsTotal: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  warmupFailures: number;
  ratioToBare?: number;
  serverCpu: number | null;
  /** Server CPU time per answered request: less sensitive than req/s to other load on the machine. */
  serverCpuUsPerRequest: number | null;
  postgresCpu: number | null;
  loadGeneratorCpu: number;
}

async function measure(s: Scenario, o: Options, server: Running, pgPids: () => Promise<number[]>): Promise<Row> {
  const { url, method = 'GET', headers = {}, body } = s.request;
  if (new URL(url).hostname !== '127.0.0.1') throw new Error(`refusing to load ${url}: only 127.0.0.1`);
  const first = await fetch(url, { method, headers, ...(body === undefined ? {} : { body }) });
  s.check(first.status, await first.text());

  const base: autocannon.Options = { url, method, headers, connections: CONNECTIONS, pipelining: 1, timeout: 10, ...(body === undefined ? {} : { body }) };
  process.stdout.write(`  ${s.name}${s.store ? ` [${s.store}]` : ''}: warm-up ${o.warmup} s, `);
  const warm = await autocannon({ ...base, duration: o.warmup });
  const pidsBefore = await pgPids();
  const pgBefore = new Map(pidsBefore.map((p) => [p, cpuSeconds(p)]));
  const serverBefore = cpuSeconds(server.child.pid);
  const selfBefore = process.cpuUsage();
  process.stdout.write(`measuring ${o.duration} s... `);
  const r = await autocannon({ ...base, duration: o.duration });
  const self = process.cpuUsage(selfBefore);
  const serverAfter = cpuSeconds(server.child.pid);
  // Backends that started during the run count whole; ones that ended during it (the pool closes
  // idle connections after 10 s) are missed. None open at the end: nothing was asked of them.
  const pidsAfter = await pgPids();
  let pgCpu: number | null = pidsAfter.length === 0 ? 0 : null;
  for (const p of pidsAfter) {
    const after = cpuSeconds(p);
    if (after !== null) pgCpu = (pgCpu ?? 0) + after - (pgBefore.get(p) ?? 0);
  }
  const row: Row = {
    scenario: s.name,
    store: s.store,
    requestsPerSecond: Math.round(r.requests.average),
    requestsTotal: r.requests.total,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    warmupFailures: warm.non2xx + warm.errors,
    serverCpu: serverBefore === null || serverAfter === null ? null : round2((serverAfter - serverBefore) / r.duration),
    serverCpuUsPerRequest: serverBefore === null || serverAfter === null || r.requests.total === 0 ? null : Math.round(((serverAfter - serverBefore) * 1e6) / r.requests.total),
    postgresCpu: pgCpu === null || s.store !== 'postgres' ? null : round2(pgCpu / r.duration),
    loadGeneratorCpu: round2((self.user + self.system) / 1e6 / r.duration),
  };
  console.log(`${row.requestsPerSecond} req/s, p99 ${row.p99Ms} ms${row.non2xx + row.errors > 0 ? `, ${row.non2xx} non-2xx, ${row.errors} errors` : ''}`);
  if (row.non2xx + row.errors + row.warmupFailures > 0) {
    failures.push(`${s.name}${s.store ? ` [${s.store}]` : ''}: ${row.non2xx} non-2xx, ${row.errors} errors (${row.timeouts} timeouts), ${row.warmupFailures} failures in warm-up\n${server.output()}`);
  }
  return row;
}

const failures: string[] = [];

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const form = (o: Record<string, string>) => new URLSearchParams(o).toString();

function expectToken(status: number, body: string): void {
  const parsed = status === 200 ? (JSON.parse(body) as { access_token?: unknown }) : {};
  if (typeof parsed.access_token !== 'string') throw new Error(`expected 200 with an access_token, got ${status}: ${body.slice(0, 300)}`);
}

async function call(url: string, init: RequestInit, expect: number): Promise<Record<string, unknown>> {
  const res = await fetch(url, init);
  const text = await res.text();
  if (res.status !== expect) throw new Error(`${init.method ?? 'GET'} ${url}: expected ${expect}, got ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/** A user, its access token (password grant) and an OAuth client of its own. */
async function setUp(url: string) {
  const username = `bench-${randomBytes(4).toString('hex')}@example.com`;
  const password = `bench ${randomBytes(8).toString('hex')}`;
  await call(`${url}/v1/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username, password }) }, 201);
  const passwordForm = form({ grant_type: 'password', username, password, client_id: 'particle-api', client_secret: 'particle-api' });
  const login = await call(`${url}/oauth/token`, { method: 'POST', headers: FORM, body: passwordForm }, 200);
  const token = String(login.access_token);
  const created = await call(`${url}/v1/clients`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify({ name: 'bench' }) }, 201);
  const client = created.client as { id: string; secret: string };
  return { username, token, client, passwordForm };
}

function skyportScenarios(url: string, store: Store, u: Awaited<ReturnType<typeof setUp>>): Scenario[] {
  return [
    {
      name: 'client_credentials token', store,
      request: { url: `${url}/oauth/token`, method: 'POST', headers: FORM, body: form({ grant_type: 'client_credentials', client_id: u.client.id, client_secret: u.client.secret }) },
      check: expectToken,
    },
    {
      name: 'GET /v1/user (Bearer)', store,
      request: { url: `${url}/v1/user`, headers: { authorization: `Bearer ${u.token}` } },
      check(status, body) {
        if (status !== 200 || (JSON.parse(body) as { username?: string }).username !== u.username) throw new Error(`GET /v1/user: ${status} ${body.slice(0, 300)}`);
      },
    },
    {
      name: 'password grant (argon2id)', store,
      request: { url: `${url}/oauth/token`, method: 'POST', headers: FORM, body: u.passwordForm },
      check: expectToken,
    },
  ];
}

// ---------------------------------------------------------------------------------------------
// The flood: one address far over its limit, another reading beside it.

interface Latencies { requests: number; p50Ms: number; p99Ms: number; maxMs: number }

interface FloodResult {
  store: Store;
  readerRate: number;
  alone: Latencies;
  flooded: Latencies;
  /** p99 while flooded ÷ p99 alone. */
  p99Ratio: number;
  flooder: { requestsPerSecond: number; ok: number; limited: number; other: number; errors: number };
  /** The server's CPU while flooded, in cores. */
  serverCpu: number | null;
}

/**
 * Reads at a steady `rate` from `localAddress` for `seconds` (open loop: each request leaves on
 * its schedule, whether or not the one before was answered), and answers their latencies. Any
 * answer but 200 is a failure of the run.
 */
async function steadyReads(url: string, headers: Record<string, string>, localAddress: string, rate: number, seconds: number, label: string): Promise<Latencies> {
  const origin = new URL(url).origin;
  const pool = new Pool(origin, { connections: 8, pipelining: 1, localAddress });
  const latencies: number[] = [];
  const refused: string[] = [];
  const sent: Array<Promise<void>> = [];
  const period = 1000 / rate;
  const start = performance.now();
  for (let i = 0; i < rate * seconds; i++) {
    const wait = start + i * period - performance.now();
    if (wait > 0) await sleep(wait);
    const t0 = performance.now();
    sent.push(pool.request({ path: new URL(url).pathname, method: 'GET', headers }).then(async (r) => {
      const body = await r.body.text();
      latencies.push(performance.now() - t0);
      if (r.statusCode !== 200) refused.push(`${r.statusCode} ${body.slice(0, 200)}`);
    }, (err: unknown) => { refused.push(String(err)); }));
  }
  await Promise.all(sent);
  await pool.close();
  if (refused.length > 0) failures.push(`flood, ${label}: ${refused.length} of the reading address's requests failed, such as ${refused[0]}`);
  latencies.sort((x, y) => x - y);
  const ms = (n: number) => Math.round(n * 100) / 100;
  return { requests: latencies.length, p50Ms: ms(percentile(latencies, 0.5)), p99Ms: ms(percentile(latencies, 0.99)), maxMs: ms(latencies.at(-1) ?? NaN) };
}

/**
 * The flooding address, in a process of its own (bench/flood.ts), at the lowest CPU priority
 * (`nice -n 19`): a real flood comes from other machines, and on two shared cores a flooder at
 * full priority would measure the reader's wait for a CPU rather than the server's answers.
 */
async function startFlooder(url: string, headers: Record<string, string>) {
  const child = track(spawn('nice', ['-n', '19', process.execPath, '--import', 'tsx', join(ROOT, 'bench', 'flood.ts')], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  onCleanup(() => stopChild(child, 2000));
  const next = () => new Promise<Record<string, number>>((resolve) => child.once('message', (m) => resolve(m as Record<string, number>)));
  const started = next();
  child.send({ url, path: new URL(url).pathname, headers, connections: FLOOD_CONNECTIONS, localAddress: FLOODER });
  await started;
  return {
    async stop() {
      const done = next();
      child.send({ stop: true });
      const counts = await done;
      child.disconnect();
      return counts;
    },
  };
}

/**
 * Skyport with its default limits: B reads at a steady rate, alone and then while A floods the
 * same read at full speed (A's 429s are expected once it is past its 10,000 requests); the figure
 * is B's p99 flooded ÷ B's p99 alone.
 */
async function floodScenario(store: Store, o: Options): Promise<FloodResult> {
  console.log(`flood on the ${store} store, default limits: ${READER} reads ${o.floodRate}/s, alone and while ${FLOODER} floods (${FLOOD_CONNECTIONS} connections):`);
  const sky = await startSkyport(store, o.adminUrl, {});
  const user = await setUp(sky.url);
  const url = `${sky.url}/v1/user`;
  const headers = { authorization: `Bearer ${user.token}` };
  process.stdout.write(`  alone: warm-up ${o.warmup} s, measuring ${o.duration} s... `);
  await steadyReads(url, headers, READER, o.floodRate, o.warmup, 'warm-up');
  const alone = await steadyReads(url, headers, READER, o.floodRate, o.duration, 'alone');
  console.log(`p50 ${alone.p50Ms} ms, p99 ${alone.p99Ms} ms`);
  process.stdout.write(`  flooded: the flood for ${o.warmup} s first (past its limit), then measuring ${o.duration} s... `);
  const flooder = await startFlooder(url, headers);
  await sleep(o.warmup * 1000);
  const cpuBefore = cpuSeconds(sky.child.pid);
  const t0 = performance.now();
  const flooded = await steadyReads(url, headers, READER, o.floodRate, o.duration, 'flooded');
  const cpuAfter = cpuSeconds(sky.child.pid);
  const elapsed = (performance.now() - t0) / 1000;
  const counts = await flooder.stop();
  await stopChild(sky.child, 5000);
  const result: FloodResult = {
    store, readerRate: o.floodRate, alone, flooded,
    p99Ratio: round2(flooded.p99Ms / alone.p99Ms),
    flooder: {
      requestsPerSecond: Math.round(((counts.ok ?? 0) + (counts.limited ?? 0) + (counts.other ?? 0)) / (counts.seconds ?? 1)),
      ok: counts.ok ?? 0, limited: counts.limited ?? 0, other: counts.other ?? 0, errors: counts.errors ?? 0,
    },
    serverCpu: cpuBefore === null || cpuAfter === null ? null : round2((cpuAfter - cpuBefore) / elapsed),
  };
  console.log(`p50 ${flooded.p50Ms} ms, p99 ${flooded.p99Ms} ms; the flood: ${result.flooder.requestsPerSecond} req/s, ${result.flooder.ok} answered 200 and ${result.flooder.limited} 429`);
  if (result.flooder.limited === 0) failures.push(`flood: the flooding address was never refused (${JSON.stringify(counts)})`);
  if (result.flooder.other > 0) failures.push(`flood: the flooding address got ${result.flooder.other} answers that were neither 200 nor 429`);
  return result;
}

interface LimiterCost {
  store: Store;
  rounds: Array<{ off: { requestsPerSecond: number; serverCpuUsPerRequest: number | null }; on: { requestsPerSecond: number; serverCpuUsPerRequest: number | null } }>;
  /** Medians over the rounds: on ÷ off of req/s, and on − off of the server's µs of CPU per request. */
  rateRatio: number;
  cpuUsPerRequest: number | null;
}

/**
 * The read path with the limits on (a limit too high to reach) and off: two servers side by
 * side, measured in turns (six rounds, the order swapped each round), and the medians of the
 * rounds' differences. The cost is a few µs in some 35, well under what a shared machine's load
 * moves from one run to the next: runs one after the other could not tell it.
 */
async function limiterCost(store: Store, o: Options): Promise<LimiterCost> {
  const roundSeconds = Math.max(1, Math.round(o.duration / 2));
  console.log(`the limiter's cost on the ${store} store: GET /v1/user, limits off and on (never reached), ${CONNECTIONS} connections, six rounds of ${roundSeconds} s each in turns:`);
  const servers: Array<{ label: string; sky: Running; request: { url: string; headers: Record<string, string> } }> = [];
  for (const [label, limits] of [['off', LIMITS_OFF], ['on', { RATE_LIMIT_REQUESTS: '1000000000' }]] as const) {
    const sky = await startSkyport(store, o.adminUrl, limits);
    const u = await setUp(sky.url);
    const request = { url: `${sky.url}/v1/user`, headers: { authorization: `Bearer ${u.token}` } };
    await autocannon({ ...request, connections: CONNECTIONS, duration: o.warmup });
    servers.push({ label, sky, request });
  }
  const round = async (server: (typeof servers)[number]) => {
    const before = cpuSeconds(server.sky.child.pid);
    const r = await autocannon({ ...server.request, connections: CONNECTIONS, pipelining: 1, timeout: 10, duration: roundSeconds });
    const after = cpuSeconds(server.sky.child.pid);
    if (r.non2xx + r.errors > 0) failures.push(`limiter's cost, limits ${server.label}: ${r.non2xx} non-2xx, ${r.errors} errors\n${server.sky.output()}`);
    return {
      requestsPerSecond: Math.round(r.requests.average),
      serverCpuUsPerRequest: before === null || after === null || r.requests.total === 0 ? null : round2(((after - before) * 1e6) / r.requests.total),
    };
  };
  const [off, on] = servers as [(typeof servers)[number], (typeof servers)[number]];
  const rounds: LimiterCost['rounds'] = [];
  for (let i = 0; i < 6; i++) {
    const first = i % 2 === 0 ? off : on;
    const a = await round(first);
    const b = await round(first === off ? on : off);
    rounds.push(first === off ? { off: a, on: b } : { off: b, on: a });
    process.stdout.write(`  round ${i + 1}: off ${rounds[i]?.off.requestsPerSecond} req/s, ${rounds[i]?.off.serverCpuUsPerRequest} µs/req; on ${rounds[i]?.on.requestsPerSecond} req/s, ${rounds[i]?.on.serverCpuUsPerRequest} µs/req\n`);
  }
  for (const s of servers) await stopChild(s.sky.child, 5000);
  const median = (values: number[]) => {
    const sorted = [...values].sort((x, y) => x - y);
    const mid = Math.floor(sorted.length / 2);
    return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
  };
  const cpuDiffs = rounds.flatMap((r) => (r.on.serverCpuUsPerRequest === null || r.off.serverCpuUsPerRequest === null ? [] : [r.on.serverCpuUsPerRequest - r.off.serverCpuUsPerRequest]));
  return {
    store, rounds,
    rateRatio: round2(median(rounds.map((r) => r.on.requestsPerSecond / r.off.requestsPerSecond))),
    cpuUsPerRequest: cpuDiffs.length === 0 ? null : round2(median(cpuDiffs)),
  };
}

function floodMarkdown(f: FloodResult, cost: LimiterCost): string {
  const mean = (key: 'off' | 'on', field: 'requestsPerSecond' | 'serverCpuUsPerRequest') => cost.rounds.reduce((sum, r) => sum + (r[key][field] ?? NaN), 0) / cost.rounds.length;
  return [
    `| flood (${f.store}) | requests | p50 ms | p99 ms | max ms |`,
    '|---|---:|---:|---:|---:|',
    `| ${READER} reading ${f.readerRate}/s, alone | ${f.alone.requests} | ${f.alone.p50Ms} | ${f.alone.p99Ms} | ${f.alone.maxMs} |`,
    `| ${READER} reading ${f.readerRate}/s, while ${FLOODER} floods | ${f.flooded.requests} | ${f.flooded.p50Ms} | ${f.flooded.p99Ms} | ${f.flooded.maxMs} |`,
    '',
    `p99 flooded ÷ p99 alone: ${f.p99Ratio.toFixed(2)} (goal ≤ ${GOAL_FLOOD_P99_RATIO}); the flood: ${f.flooder.requestsPerSecond} req/s over ${FLOOD_CONNECTIONS} connections, ${f.flooder.ok} answered 200, ${f.flooder.limited} 429, ${f.flooder.errors} socket errors; server CPU while flooded ${f.serverCpu ?? 'n/a'} cores`,
    `limiter's cost (${cost.store}, GET /v1/user, six rounds in turns): limits on ${Math.round(mean('on', 'requestsPerSecond'))} req/s and ${mean('on', 'serverCpuUsPerRequest').toFixed(1)} µs CPU/request on average, off ${Math.round(mean('off', 'requestsPerSecond'))} req/s and ${mean('off', 'serverCpuUsPerRequest').toFixed(1)} µs; medians of the rounds: rate on ÷ off ${cost.rateRatio.toFixed(2)}, CPU on − off ${cost.cpuUsPerRequest ?? 'n/a'} µs per request`,
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------

function markdown(rows: Row[], o: Options, date: string, commit: string | undefined): string {
  const fmt = (n: number | null) => (n === null ? 'n/a' : n.toFixed(2));
  const lines = [
    `${date}, ${cpus().length} cores, Node ${process.version}, commit ${commit ?? 'unknown'}, ${CONNECTIONS} connections, ${o.warmup} s warm-up + ${o.duration} s per scenario`,
    '',
    '| scenario | store | req/s | p50 ms | p99 ms | non-2xx | ratio to bare | server CPU | server µs CPU/req | PostgreSQL CPU | autocannon CPU |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map((r) => `| ${r.scenario} | ${r.store ?? '-'} | ${r.requestsPerSecond} | ${r.p50Ms} | ${r.p99Ms} | ${r.non2xx + r.errors} | ${r.ratioToBare?.toFixed(2) ?? ''} | ${fmt(r.serverCpu)} | ${r.serverCpuUsPerRequest ?? 'n/a'} | ${r.store === 'postgres' ? fmt(r.postgresCpu) : '-'} | ${fmt(r.loadGeneratorCpu)} |`),
  ];
  return lines.join('\n');
}

function goals(rows: Row[]): Array<{ goal: string; store: Store; value: string; met: boolean }> {
  const out: Array<{ goal: string; store: Store; value: string; met: boolean }> = [];
  for (const store of ['embedded', 'postgres'] as const) {
    const cc = rows.find((r) => r.store === store && r.scenario === 'client_credentials token');
    const read = rows.find((r) => r.store === store && r.scenario === 'GET /v1/user (Bearer)');
    if (cc) {
      out.push({ goal: `client_credentials >= ${GOAL_TOKENS_PER_SECOND} tokens/s`, store, value: `${cc.requestsPerSecond}/s`, met: cc.requestsPerSecond >= GOAL_TOKENS_PER_SECOND });
      out.push({ goal: `client_credentials >= ${GOAL_TOKEN_RATIO} x bare`, store, value: `${cc.ratioToBare?.toFixed(2)}`, met: (cc.ratioToBare ?? 0) >= GOAL_TOKEN_RATIO });
    }
    if (read) out.push({ goal: `GET /v1/user >= ${GOAL_READ_RATIO} x bare`, store, value: `${read.ratioToBare?.toFixed(2)}`, met: (read.ratioToBare ?? 0) >= GOAL_READ_RATIO });
  }
  return out;
}

async function main(): Promise<void> {
  const o = parseOptions(process.argv.slice(2));
  // The baseline runs before the first group of scenarios and again after each group; a
  // scenario's ratio is to the mean of the baseline runs just before and just after its group,
  // so that a shared machine's changing load shifts both sides alike.
  const storeGroups = o.floodOnly ? 0 : o.stores.length;
  const groups = (o.oidc ? 1 : 0) + storeGroups;
  // The flood's phases count as three runs, the limiter's cost (twelve half runs) as six more.
  const scenarioCount = 1 + groups + (o.oidc ? 1 : 0) + 3 * storeGroups + (o.flood ? 9 : 0);
  const budgetMs = (scenarioCount * (o.warmup + o.duration) * 2 + 180) * 1000;
  const watchdog = setTimeout(() => {
    console.error(`\nthe benchmark took longer than ${budgetMs / 1000} s; stopping`);
    void runCleanups().finally(() => process.exit(1));
  }, budgetMs);
  watchdog.unref();

  const date = new Date().toISOString();
  const load0 = loadavg();
  console.log(`Skyport benchmark: ${scenarioCount} runs, ${o.warmup} s warm-up + ${o.duration} s each, ${CONNECTIONS} connections, ${cpus().length} cores, load average ${load0.map((l) => l.toFixed(2)).join(' ')}`);
  const noPg = async () => [];
  const rows: Row[] = [];

  const bare = await forkServer('bare node:http', 'bare-server.mjs');
  onCleanup(() => stopChild(bare.child, 5000));
  const bareScenario: Scenario = { name: 'bare node:http (baseline)', store: null, request: { url: `${bare.url}/`, method: 'POST', headers: FORM, body: 'grant_type=client_credentials' }, check: expectToken };
  let before = await measure(bareScenario, o, bare, noPg);
  rows.push(before);
  /** Runs a group of scenarios, then the baseline again, and sets the group's ratios. */
  async function group(run: () => Promise<Row[]>): Promise<void> {
    const measured = await run();
    const after = await measure(bareScenario, o, bare, noPg);
    const baseline = (before.requestsPerSecond + after.requestsPerSecond) / 2;
    for (const r of measured) r.ratioToBare = round2(r.requestsPerSecond / baseline);
    rows.push(...measured, after);
    before = after;
  }

  if (o.oidc) {
    await group(async () => {
      const clientId = 'bench';
      const clientSecret = randomBytes(20).toString('hex');
      const oidc = await forkServer('oidc-provider', 'oidc-server.mjs', { CLIENT_ID: clientId, CLIENT_SECRET: clientSecret, NODE_ENV: 'production' });
      onCleanup(() => stopChild(oidc.child, 5000));
      const row = await measure({
        name: 'oidc-provider client_credentials', store: null,
        request: { url: `${oidc.url}/token`, method: 'POST', headers: FORM, body: form({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }) },
        check: expectToken,
      }, o, oidc, noPg);
      await stopChild(oidc.child, 5000);
      return [row];
    });
  }

  for (const store of o.floodOnly ? [] : o.stores) {
    await group(async () => {
      console.log(`skyport on the ${store} store:`);
      const sky = await startSkyport(store, o.adminUrl);
      const user = await setUp(sky.url);
      const measured: Row[] = [];
      for (const s of skyportScenarios(sky.url, store, user)) measured.push(await measure(s, o, sky, () => backendPids(o.adminUrl, sky.databaseUrl)));
      await stopChild(sky.child, 5000);
      return measured;
    });
  }

  let flood: FloodResult | undefined;
  let cost: LimiterCost | undefined;
  if (o.flood) {
    const store = o.stores[0] as Store;
    flood = await floodScenario(store, o);
    cost = await limiterCost(store, o);
  }

  const bareRows = rows.filter((r) => r.store === null && r.scenario === bareScenario.name);
  const bareRate = bareRows.reduce((sum, r) => sum + r.requestsPerSecond, 0) / bareRows.length;
  for (const r of bareRows) r.ratioToBare = round2(r.requestsPerSecond / bareRate);

  const commit = gitCommit();
  const table = markdown(rows, o, date.slice(0, 10), commit);
  const checked = goals(rows);
  console.log(`\n${table}\n\nratio to bare = req/s / mean of the bare runs just before and after (all bare runs: mean ${Math.round(bareRate)} req/s, range ${Math.min(...bareRows.map((r) => r.requestsPerSecond))}-${Math.max(...bareRows.map((r) => r.requestsPerSecond))}); CPU in cores (1.00 = one core busy)\n`);
  if (flood && cost) {
    console.log(`${floodMarkdown(flood, cost)}\n`);
    checked.push({ goal: `flooded p99 <= ${GOAL_FLOOD_P99_RATIO} x alone`, store: flood.store, value: flood.p99Ratio.toFixed(2), met: flood.p99Ratio <= GOAL_FLOOD_P99_RATIO });
  }
  for (const g of checked) console.log(`${g.met ? 'met    ' : 'NOT MET'}  ${g.goal} [${g.store}]: ${g.value}`);

  const resultsDir = join(ROOT, 'bench', 'results');
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `bench-${date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(file, `${JSON.stringify({
    date,
    command: ['npm run bench', ...(process.argv.length > 2 ? ['--', ...process.argv.slice(2)] : [])].join(' '),
    commit,
    machine: { cores: cpus().length, cpu: cpus()[0]?.model, node: process.version, loadAverageBefore: load0, loadAverageAfter: loadavg() },
    options: { ...o, connections: CONNECTIONS, adminUrl: undefined },
    versions: { skyport: packageVersion('.'), autocannon: packageVersion('node_modules/autocannon'), oidcProvider: packageVersion('node_modules/oidc-provider') },
    bareRequestsPerSecond: Math.round(bareRate),
    rows,
    ...(flood ? { flood, limiterCost: cost } : {}),
    goals: checked,
    failures,
  }, null, 2)}\n`);
  console.log(`\nresults: ${file}`);

  if (failures.length > 0) throw new Error(`${failures.length} scenario(s) had failed requests:\n${failures.join('\n\n')}`);
}

function packageVersion(dir: string): string | undefined {
  const file = join(ROOT, dir, 'package.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { version?: string }).version : undefined;
}

main().then(
  () => runCleanups(),
  async (err: unknown) => {
    console.error(`\nbenchmark FAILED: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
    await runCleanups();
  },
);
