// The shared harness of bench/device-calls.ts and bench/connections.ts: child processes that are
// always cleaned up (at the end, on error, on Ctrl-C, when the watchdog fires), Skyport started as
// an operator starts it, a PostgreSQL database of its own, and readings from /proc.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, createWriteStream, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import WebSocket from 'ws';
import { SETTINGS } from '../src/config/settings.js';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const DEFAULT_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/test';
export type Store = 'embedded' | 'postgres';

// ---------------------------------------------------------------------------------------------
// Child processes and clean-up.

const children = new Set<ChildProcess>();
const cleanups: Array<() => Promise<void> | void> = [];

export function track<T extends ChildProcess>(child: T): T {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** Runs at the end, on error, on a signal and when the watchdog fires; last registered first. */
export function onCleanup(step: () => Promise<void> | void): void {
  cleanups.push(step);
}

function killAll(): void {
  for (const c of children) {
    try {
      c.kill('SIGKILL');
    } catch { /* already gone */ }
  }
}

/** Every clean-up step, last registered first, then every child killed (runBenchmark calls it). */
export async function runCleanups(): Promise<void> {
  while (cleanups.length > 0) {
    const step = cleanups.pop() as () => Promise<void> | void;
    try {
      await step();
    } catch (err) {
      console.error(`clean-up step failed: ${(err as Error).message}`);
    }
  }
  killAll();
}

process.on('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping`);
    void runCleanups().finally(() => process.exit(130));
  });
}

/**
 * Runs the benchmark with a watchdog; cleans up whatever happens, and exits 1 on any failure.
 */
export function runBenchmark(name: string, budgetSeconds: number, main: () => Promise<void>): void {
  const watchdog = setTimeout(() => {
    console.error(`\n${name}: watchdog: the run took longer than ${budgetSeconds} s; stopping`);
    void runCleanups().finally(() => process.exit(1));
  }, budgetSeconds * 1000);
  watchdog.unref();
  main().then(
    async () => {
      await runCleanups();
      process.exit(0);
    },
    async (err: unknown) => {
      console.error(`\n${name} FAILED: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
      await runCleanups();
      process.exit(1);
    },
  );
}

/** Sends SIGTERM, then SIGKILL when the child has not exited within `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** The last few kilobytes a child wrote, for error messages. */
export function captureOutput(child: ChildProcess): () => string {
  let tail = '';
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return () => tail.trim();
}

/** The last few KB of a log file (what a server said before it failed). */
function tailOf(file: string): string {
  try {
    return readFileSync(file, 'utf8').slice(-4000);
  } catch {
    return '';
  }
}

export function exitedEarly(child: ChildProcess, name: string, output: () => string): Promise<never> {
  return new Promise((_, reject) => {
    child.once('exit', (code, signal) => reject(new Error(`${name} exited (${signal ?? code}) before it was ready:\n${output()}`)));
  });
}

export function timeout(ms: number, what: string): Promise<never> {
  return new Promise((_, reject) => setTimeout(() => reject(new Error(`${what} did not happen within ${ms / 1000} s`)), ms).unref());
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts TCP connections on 127.0.0.1:`port` (a broker that started). */
export async function accepting(port: number): Promise<void> {
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect({ host: '127.0.0.1', port }, () => { s.destroy(); resolve(true); });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    await sleep(100);
  }
}

// ---------------------------------------------------------------------------------------------
// Skyport, as an operator starts it.

/**
 * The per-address limits off (docs/security.md, "Limits on request volume"): a benchmark's load
 * comes from one address and would be refused after 100 tokens or 10,000 requests. Every server a
 * benchmark starts runs with them off, unless it measures them (`npm run bench`'s flood).
 */
export const LIMITS_OFF: Readonly<Record<string, string>> = {
  RATE_LIMIT_REQUESTS: '0', RATE_LIMIT_EVENT_STREAMS: '0', RATE_LIMIT_OPEN_STREAMS: '0', RATE_LIMIT_TOKENS: '0',
};

/** The settings of this process's environment are not passed on: the servers run on defaults. */
export function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  const ours = new Set(SETTINGS.map((s) => s.env));
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !ours.has(k)) env[k] = v;
  return env;
}

/** One short-lived connection to the PostgreSQL server of `adminUrl`. */
export async function admin<T>(adminUrl: string, work: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5000 });
  await c.connect();
  try {
    return await work(c);
  } finally {
    await c.end();
  }
}

/** A fresh database next to the admin URL's, dropped at clean-up. */
export async function createDatabase(adminUrl: string, prefix: string): Promise<string> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  await admin(adminUrl, (c) => c.query(`CREATE DATABASE ${name}`));
  onCleanup(() => admin(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * The open-files limit a child can be given: `wanted` if this machine permits raising to it,
 * otherwise the hard limit (raising the hard limit needs CAP_SYS_RESOURCE).
 */
export function openFilesLimit(wanted: number): { limit: number; raised: boolean; hard: number } {
  const hard = Number(execFileSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).trim());
  if (wanted <= hard) return { limit: hard, raised: false, hard };
  try {
    const got = Number(execFileSync('sh', ['-c', `ulimit -n ${wanted} 2>/dev/null && ulimit -n`], { encoding: 'utf8' }).trim());
    if (got >= wanted) return { limit: got, raised: got > hard, hard };
  } catch { /* not permitted */ }
  return { limit: hard, raised: false, hard };
}

/** A running process's open-files limit (soft), from /proc. */
export function processOpenFiles(pid: number): number {
  const line = readFileSync(`/proc/${pid}/limits`, 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
  return Number(line?.split(/\s{2,}/)[1] ?? NaN);
}

/**
 * Skyport compiled to JavaScript (tsc, emit only) in a temporary folder of its own, laid out as
 * the package is (dist/, migrations/, package.json, node_modules/), so that it runs as
 * `npm start` runs it, without the TypeScript loader; dist/ of the work tree is left alone.
 */
export function buildSkyport(): string {
  const dir = mkdtempSync(join(tmpdir(), 'skyport-bench-build-'));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', join(dir, 'dist'), '--noCheck', '--declaration', 'false', '--composite', 'false', '--incremental', 'false', '--sourceMap', 'false'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
  for (const f of ['migrations', 'node_modules', 'package.json']) symlinkSync(join(ROOT, f), join(dir, f));
  return dir;
}

export interface Skyport { name: string; url: string; mqttHost: string; mqttPort: number; child: ChildProcess; pid: number; output: () => string; dataDir: string; databaseUrl?: string; inspectorUrl?: string }

/**
 * `node --import tsx src/cli/run.ts server start --port P --mqtt-port M --host 127.0.0.1` with
 * its log at the shipped level written to a file in its DATA_DIR (a temporary one), the per-address
 * limits off (LIMITS_OFF; `limits: 'default'` keeps them), and every other setting at its default.
 * `openFiles` starts it through `sh -c 'ulimit -n N; exec node …'`; `nodeArgs` adds Node flags
 * (also BENCH_SERVER_NODE_ARGS, e.g. --cpu-prof). `reuse` starts it again on the data of an earlier one.
 * `build` (from buildSkyport, or ROOT for the work tree's own dist/) runs the compiled server
 * instead of the sources through tsx. `databaseUrl` puts it on an existing database (the nodes of
 * a cluster share one); `name` names it in messages.
 */
export async function startSkyport(store: Store, opts: { adminUrl?: string; openFiles?: number; nodeArgs?: string[]; env?: Record<string, string>; limits?: 'off' | 'default'; reuse?: Skyport; build?: string; databaseUrl?: string; name?: string; samePorts?: boolean } = {}): Promise<Skyport> {
  // LOG_LEVEL as shipped (info: a line per request), written to a file as an operator keeps it.
  const env: Record<string, string> = { ...cleanEnv(), ...(opts.limits === 'default' ? {} : LIMITS_OFF), ...opts.env };
  let dataDir = opts.reuse?.dataDir;
  if (!dataDir) {
    const dir = mkdtempSync(join(tmpdir(), 'skyport-bench-'));
    onCleanup(() => rmSync(dir, { recursive: true, force: true }));
    dataDir = dir;
  }
  env.DATA_DIR = dataDir;
  if (store === 'postgres') env.DATABASE_URL = opts.databaseUrl ?? opts.reuse?.databaseUrl ?? await createDatabase(opts.adminUrl ?? DEFAULT_ADMIN_URL, 'skyport_bench');
  // The gateway gets a free port too: 1883 is taken on a machine that runs a broker. A restarted
  // server (`samePorts`) listens where the one it replaces did, as after an operator's restart.
  const port = opts.samePorts && opts.reuse ? Number(new URL(opts.reuse.url).port) : await freePort();
  const mqttPort = opts.samePorts && opts.reuse ? opts.reuse.mqttPort : await freePort();
  const nodeArgs = [...(opts.nodeArgs ?? []), ...(process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean)];
  const entry = opts.build ? [join(opts.build, 'dist', 'cli', 'run.js')] : ['--import', 'tsx', 'src/cli/run.ts'];
  const argv = [...nodeArgs, ...entry, 'server', 'start', '--port', String(port), '--mqtt-port', String(mqttPort), '--host', '127.0.0.1'];
  const logFile = join(dataDir, `skyport-${port}.log`);
  const log = openSync(logFile, 'a');
  onCleanup(() => closeSync(log));
  // exec keeps the pid: the child's pid is the server's.
  const child = track(opts.openFiles
    ? spawn('sh', ['-c', `ulimit -n ${opts.openFiles} && exec "$0" "$@"`, process.execPath, ...argv], { cwd: ROOT, env, stdio: ['ignore', log, 'pipe'] })
    : spawn(process.execPath, argv, { cwd: ROOT, env, stdio: ['ignore', log, 'pipe'] }));
  onCleanup(() => stopChild(child));
  const errors = captureOutput(child);
  const output = () => `${tailOf(logFile)}\n${errors()}`.trim();
  let inspectorUrl: string | undefined;
  child.stderr?.on('data', (chunk: Buffer) => {
    const m = /Debugger listening on (ws:\/\/\S+)/.exec(chunk.toString('utf8'));
    if (m) inspectorUrl = m[1];
  });
  const url = `http://127.0.0.1:${port}`;
  const name = opts.name ?? `skyport (${store})`;
  const healthy = (async () => {
    for (;;) {
      try {
        if ((await fetch(`${url}/healthz`)).ok) return;
      } catch { /* not listening yet */ }
      await sleep(100);
    }
  })();
  await Promise.race([healthy, exitedEarly(child, name, output), timeout(90_000, `${name} start`)]);
  return { name, url, mqttHost: '127.0.0.1', mqttPort, child, pid: child.pid ?? 0, output, dataDir, ...(env.DATABASE_URL ? { databaseUrl: env.DATABASE_URL } : {}), ...(inspectorUrl ? { inspectorUrl } : {}) };
}

// ---------------------------------------------------------------------------------------------
// The API calls of the set-up.

export async function api<T>(url: string, init: { method?: string; token?: string; json?: unknown; form?: Record<string, string>; basic?: [string, string] } = {}): Promise<T> {
  const headers: Record<string, string> = {};
  let body: string | undefined;
  if (init.json !== undefined) { headers['content-type'] = 'application/json'; body = JSON.stringify(init.json); }
  if (init.form) { headers['content-type'] = 'application/x-www-form-urlencoded'; body = new URLSearchParams(init.form).toString(); }
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  if (init.basic) headers.authorization = `Basic ${Buffer.from(`${init.basic[0]}:${init.basic[1]}`).toString('base64')}`;
  const method = init.method ?? (body ? 'POST' : 'GET');
  const res = await fetch(url, { method, headers, body: body ?? null });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${text.slice(0, 500)}`);
  return (text ? JSON.parse(text) : {}) as T;
}

/** Signs up a user, logs in (password grant, client particle-api) and creates a product. */
export async function userWithProduct(url: string, description: string): Promise<{ token: string; productId: number }> {
  const username = `bench-${randomBytes(4).toString('hex')}@example.com`;
  const password = `bench ${randomBytes(8).toString('hex')}`;
  await api(`${url}/v1/users`, { json: { username, password } });
  const { access_token: token } = await api<{ access_token: string }>(`${url}/oauth/token`, { form: { grant_type: 'password', username, password }, basic: ['particle-api', 'particle-api'] });
  const { product } = await api<{ product: { id: number } }>(`${url}/v1/user/products`, { token, json: { product: { name: `Bench ${description}`, description, platform_id: 26 } } });
  return { token, productId: product.id };
}

// ---------------------------------------------------------------------------------------------
// Readings.

const TICKS_PER_SECOND = 100; // USER_HZ (getconf CLK_TCK), 100 on Linux

/** CPU time of a process so far, user and system, in seconds; null when it cannot be read. */
export function cpuTimes(pid: number | undefined, file = `/proc/${pid}/stat`): { user: number; system: number } | null {
  if (!pid) return null;
  try {
    const stat = readFileSync(file, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: Number(fields[11]) / TICKS_PER_SECOND, system: Number(fields[12]) / TICKS_PER_SECOND };
  } catch {
    return null;
  }
}

/** CPU time (user + system) of a process so far, in seconds; null when it cannot be read. */
export function cpuSeconds(pid: number | undefined): number | null {
  const t = cpuTimes(pid);
  return t && t.user + t.system;
}

/** CPU seconds (user + system) of each thread of a process so far, by thread id; empty when it cannot be read. */
export function threadCpuSeconds(pid: number | undefined): Map<number, number> {
  const out = new Map<number, number>();
  if (!pid) return out;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const t = cpuTimes(Number(tid), `/proc/${pid}/task/${tid}/stat`);
      if (t) out.set(Number(tid), t.user + t.system);
    }
  } catch { /* the process is gone */ }
  return out;
}

/**
 * A process's CPU since `before` (threadCpuSeconds), split: its main thread, its busiest other
 * thread (a Skyport server's embedded store), and the rest (V8's compiler and GC helpers, libuv's pool).
 */
export function threadSplit(pid: number, before: Map<number, number>): { main: number; busiest: number; rest: number } {
  const spent = [...threadCpuSeconds(pid)].map(([tid, s]) => [tid, s - (before.get(tid) ?? 0)] as const);
  const main = spent.find(([tid]) => tid === pid)?.[1] ?? 0;
  const others = spent.filter(([tid]) => tid !== pid).map(([, s]) => s).sort((a, b) => b - a);
  const busiest = others[0] ?? 0;
  return { main: round2(main), busiest: round2(busiest), rest: round2(others.slice(1).reduce((a, s) => a + s, 0)) };
}

/** Resident memory of a process, in KiB (VmRSS of /proc/<pid>/status). */
export function rssKb(pid: number): number {
  return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
}

/** The commit the run measured, with `+dirty` when src/ or migrations/ had changes. */
export function gitCommit(): string | undefined {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'migrations'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() !== '';
    return dirty ? `${head}+dirty` : head;
  } catch {
    return undefined;
  }
}

export const round2 = (n: number) => Math.round(n * 100) / 100;

/** The p-th quantile (0..1) of ascending values, by the nearest-rank method. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(sorted.length * p) - 1))] as number;
}

/** `--name value` or `--name=value`. */
export function option(args: readonly string[], name: string): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === `--${name}`) {
      const v = args[i + 1];
      if (v === undefined || v.startsWith('--')) throw new Error(`--${name} needs a value`);
      return v;
    }
    if (a.startsWith(`--${name}=`)) return a.slice(name.length + 3);
  }
  return undefined;
}

/**
 * A benchmark's command line: `--help` prints `usage` and exits; `--quick`; `--store
 * embedded|postgres|both` (default `defaultStore`) as the stores to run, in that order.
 */
export function commandLine(usage: string, defaultStore: Store | 'both'): { args: string[]; quick: boolean; stores: Store[] } {
  const args = process.argv.slice(2);
  if (args.includes('--help')) {
    console.log(usage);
    process.exit(0);
  }
  const storeArg = option(args, 'store') ?? defaultStore;
  if (!['embedded', 'postgres', 'both'].includes(storeArg)) throw new Error(`--store must be embedded, postgres or both\n${usage}`);
  return { args, quick: args.includes('--quick'), stores: storeArg === 'both' ? ['embedded', 'postgres'] : [storeArg as Store] };
}

/**
 * A session with a server's inspector (it runs with --inspect): the Chrome DevTools protocol over
 * a WebSocket. `send` answers the result of one method call; `ws` carries events too.
 */
export async function inspectorSession(url: string): Promise<{ ws: WebSocket; send: <T>(method: string, params?: object) => Promise<T> }> {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => { ws.once('open', resolve); ws.once('error', reject); });
  let id = 0;
  const send = <T>(method: string, params: object = {}) => new Promise<T>((resolve, reject) => {
    const mine = ++id;
    const onMessage = (data: WebSocket.RawData) => {
      const m = JSON.parse(data.toString()) as { id?: number; result?: T; error?: { message: string } };
      if (m.id !== mine) return;
      ws.off('message', onMessage);
      if (m.error) reject(new Error(`${method}: ${m.error.message}`));
      else resolve(m.result as T);
    };
    ws.on('message', onMessage);
    ws.send(JSON.stringify({ id: mine, method, params }));
  });
  return { ws, send };
}

/** A server's inspector (it runs with --inspect; --heap, --profile): Chrome DevTools protocol over a WebSocket. */
export async function serverInspector(url: string) {
  const { ws, send } = await inspectorSession(url);
  return {
    send,
    /** process.memoryUsage() after a full garbage collection, in MB. */
    async memory(): Promise<Record<'rss' | 'heapTotal' | 'heapUsed' | 'external' | 'arrayBuffers', number>> {
      await send('HeapProfiler.collectGarbage');
      const r = await send<{ result: { value: string } }>('Runtime.evaluate', { expression: 'JSON.stringify(process.memoryUsage())', returnByValue: true });
      return Object.fromEntries(Object.entries(JSON.parse(r.result.value) as Record<string, number>).map(([k, v]) => [k, round2(v / 2 ** 20)])) as Record<'rss' | 'heapTotal' | 'heapUsed' | 'external' | 'arrayBuffers', number>;
    },
    /** Writes a heap snapshot (after a full GC) to `file`. */
    async snapshot(file: string): Promise<void> {
      const out = createWriteStream(file);
      const onChunk = (data: WebSocket.RawData) => {
        const m = JSON.parse(data.toString()) as { method?: string; params?: { chunk: string } };
        if (m.method === 'HeapProfiler.addHeapSnapshotChunk') out.write(m.params?.chunk ?? '');
      };
      ws.on('message', onChunk);
      await send('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
      ws.off('message', onChunk);
      await new Promise<void>((resolve) => out.end(() => resolve()));
    },
    close: () => ws.close(),
  };
}
