// `npm run bench`: token issuance and authenticated reads of Skyport, each measured beside a bare
// node:http server in the same run so that the result is a ratio (docs/benchmarks.md).
//
//   npm run bench                          10 s per scenario, embedded store and PostgreSQL
//   npm run bench -- --quick               3 s per scenario (smoke run)
//   npm run bench -- --duration 20 --store embedded
//
// Every server under test runs in its own child process on 127.0.0.1 (a free port), so that the
// load generator (autocannon, in this process) does not share its CPU. Each measurement is
// preceded by a short warm-up. Any non-2xx answer or socket error fails the run.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import {
  DEFAULT_ADMIN_URL, ROOT, admin, captureOutput, cleanEnv, cpuSeconds, createDatabase, exitedEarly, freePort, gitCommit,
  onCleanup, round2, runCleanups, stopChild, timeout, track, type Store,
} from './harness.js';

const CONNECTIONS = 32;
const GOAL_TOKENS_PER_SECOND = 5000;
const GOAL_TOKEN_RATIO = 0.25;
const GOAL_READ_RATIO = 0.5;


interface Options {
  duration: number;
  warmup: number;
  quick: boolean;
  stores: Store[];
  oidc: boolean;
  adminUrl: string;
}

const USAGE = `usage: npm run bench -- [--quick] [--duration SECONDS] [--warmup SECONDS] [--store embedded|postgres|both] [--no-oidc] [--pg-admin-url URL]`;

function parseOptions(argv: readonly string[]): Options {
  const o: Options = { duration: 10, warmup: 2, quick: false, stores: ['embedded', 'postgres'], oidc: true, adminUrl: DEFAULT_ADMIN_URL };
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

/** `node --import tsx src/cli/run.ts server start`, with the real (production) password hashing. */
async function startSkyport(store: Store, adminUrl: string): Promise<Running> {
  const env: Record<string, string> = { ...cleanEnv(), LOG_LEVEL: 'warn', SIGNUP: 'on' };
  const dataDir = mkdtempSync(join(tmpdir(), 'skyport-bench-'));
  onCleanup(() => rmSync(dataDir, { recursive: true, force: true }));
  env.DATA_DIR = dataDir;
  if (store === 'postgres') env.DATABASE_URL = await createDatabase(adminUrl, 'skyport_bench');

  const port = await freePort();
  // The gateway gets a free port too: 1883 is usually taken on a machine that runs a broker.
  const mqttPort = await freePort();
  const name = `skyport (${store})`;
  const child = track(spawn(process.execPath, ['--import', 'tsx', 'src/cli/run.ts', 'server', 'start', '--port', String(port), '--mqtt-port', String(mqttPort), '--host', '127.0.0.1'], {
    cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'],
  }));
  onCleanup(() => stopChild(child, 5000));
  const output = captureOutput(child);
  const url = `http://127.0.0.1:${port}`;
  const healthy = (async () => {
    for (;;) {
      try {
        if ((await fetch(`${url}/healthz`)).ok) return;
      } catch { /* not listening yet */ }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  await Promise.race([healthy, exitedEarly(child, name, output), timeout(60_000, `${name} start`)]);
  return { name, url, child, output, ...(env.DATABASE_URL ? { databaseUrl: env.DATABASE_URL } : {}) };
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
  const groups = (o.oidc ? 1 : 0) + o.stores.length;
  const scenarioCount = 1 + groups + (o.oidc ? 1 : 0) + 3 * o.stores.length;
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

  for (const store of o.stores) {
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

  const bareRows = rows.filter((r) => r.store === null && r.scenario === bareScenario.name);
  const bareRate = bareRows.reduce((sum, r) => sum + r.requestsPerSecond, 0) / bareRows.length;
  for (const r of bareRows) r.ratioToBare = round2(r.requestsPerSecond / bareRate);

  const commit = gitCommit();
  const table = markdown(rows, o, date.slice(0, 10), commit);
  const checked = goals(rows);
  console.log(`\n${table}\n\nratio to bare = req/s / mean of the bare runs just before and after (all bare runs: mean ${Math.round(bareRate)} req/s, range ${Math.min(...bareRows.map((r) => r.requestsPerSecond))}-${Math.max(...bareRows.map((r) => r.requestsPerSecond))}); CPU in cores (1.00 = one core busy)\n`);
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
