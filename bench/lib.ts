// Pieces of bench:fleet: the baseline server, autocannon runs and their table (the rest is the harness's).
import { fork } from 'node:child_process';
import autocannon from 'autocannon';
import { track } from './harness.js';

/** The bare node:http server of bench/bare-server.mjs, in its own process. */
export async function startBare(): Promise<string> {
  // Killed with the harness's other children when the run ends.
  const bare = track(fork(new URL('./bare-server.mjs', import.meta.url).pathname));
  const { port } = await new Promise<{ port: number }>((r) => bare.once('message', (m) => r(m as { port: number })));
  return `http://127.0.0.1:${port}/`;
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
