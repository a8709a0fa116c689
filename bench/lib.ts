// Shared pieces of the benchmarks: free ports, child processes, autocannon runs, the baseline.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { freePort, LIMITS_OFF } from './harness.js';

// The API client and free ports are the harness's (bench/harness.ts).
export { api, freePort } from './harness.js';

const children: ChildProcess[] = [];
process.on('exit', () => children.forEach((c) => c.kill('SIGKILL')));

export function killAll(): void {
  children.forEach((c) => c.kill('SIGTERM'));
}

export async function waitFor(url: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(url)).status < 500) return;
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not come up`);
}

/** The bare node:http server of bench/bare-server.mjs, in its own process. */
export async function startBare(): Promise<string> {
  const bare = fork(new URL('./bare-server.mjs', import.meta.url).pathname);
  children.push(bare);
  const { port } = await new Promise<{ port: number }>((r) => bare.once('message', (m) => r(m as { port: number })));
  return `http://127.0.0.1:${port}/`;
}

/** Skyport from the compiled build (npm run build), in its own process, with the per-address limits off. */
export async function startSkyport(env: Record<string, string>): Promise<{ url: string; mqttUrl: string; pid: number; stop(): Promise<void> }> {
  const port = await freePort();
  // 1883 is usually taken on a machine that runs a broker: the gateway gets a free port too.
  const mqttPort = await freePort();
  // BENCH_SERVER_NODE_ARGS adds Node flags to the server only (e.g. --cpu-prof to profile it).
  const nodeArgs = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean);
  // Its log at the shipped level (info: a line per request), written to a file as an operator keeps it.
  const logDir = mkdtempSync(join(tmpdir(), 'skyport-bench-log-'));
  const log = openSync(join(logDir, 'skyport.log'), 'a');
  const child = spawn(process.execPath, [...nodeArgs, 'bin/skyport.js', 'server', 'start', '--port', String(port), '--mqtt-port', String(mqttPort), '--host', '127.0.0.1'], {
    env: { ...process.env, ...LIMITS_OFF, ...env },
    stdio: ['ignore', log, 'inherit'],
  });
  child.once('exit', () => {
    closeSync(log);
    rmSync(logDir, { recursive: true, force: true });
  });
  children.push(child);
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${url}/healthz`);
  return {
    url,
    mqttUrl: `mqtt://127.0.0.1:${mqttPort}`,
    pid: child.pid ?? 0,
    stop: () => new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    }),
  };
}

export interface Result { name: string; rps: number; p50: number; p99: number; non2xx: number }

export async function load(name: string, opts: autocannon.Options, seconds: number): Promise<Result> {
  await autocannon({ ...opts, connections: 32, duration: 2 }); // warm-up
  const r = await autocannon({ ...opts, connections: 32, duration: seconds });
  const res = { name, rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx + r.errors };
  if (res.non2xx > 0) throw new Error(`${name}: ${res.non2xx} failed requests`);
  return res;
}

export function table(results: Result[], baseline: number): string {
  return ['| scenario | req/s | p50 ms | p99 ms | ratio to bare |', '|---|---|---|---|---|',
    ...results.map((r) => `| ${r.name} | ${r.rps} | ${r.p50} | ${r.p99} | ${(r.rps / baseline).toFixed(2)} |`)].join('\n');
}

export function flag(args: string[], name: string, dflt: string): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] ? (args[i + 1] as string) : dflt;
}

