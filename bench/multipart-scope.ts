// What @fastify/multipart costs the requests that send no multipart body (src/http/multipart.ts):
//   tsx bench/multipart-scope.ts [--seconds S] [--rounds N]
// Two Fastify servers in child processes (bench/fastify-server.mjs), each with one route answering
// a GET /v1/user-sized JSON body through a response schema: one without the plugin (the
// baseline), one with it registered for the whole app, as Skyport had it. autocannon (32
// connections, in this process) loads each in turn, the order swapped every round. Printed:
// requests/s and the server's CPU per request (from /proc), medians of the rounds.
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { cpuSeconds } from './harness.js';
import { median, numberOption } from './rounds.js';

const SECONDS = numberOption('seconds', 5);
const ROUNDS = numberOption('rounds', 5);

type Way = 'no multipart (baseline)' | 'multipart for the whole app';
const server = fileURLToPath(new URL('./fastify-server.mjs', import.meta.url));
const servers = new Map<Way, { child: ChildProcess; url: string }>();
for (const [way, flag] of [['no multipart (baseline)', 'none'], ['multipart for the whole app', 'multipart']] as const) {
  const child = fork(server, [flag], { execArgv: [] });
  const [{ port }] = (await once(child, 'message')) as [{ port: number }];
  servers.set(way, { child, url: `http://127.0.0.1:${port}/v1/user` });
}
/** A server's CPU seconds so far (/proc, bench/harness.ts); a reading that fails ends the run. */
function cpu(child: ChildProcess): number {
  const seconds = cpuSeconds(child.pid);
  if (seconds === null) throw new Error(`cannot read the CPU time of process ${child.pid}`);
  return seconds;
}
const results = new Map<Way, { rate: number; us: number }[]>([...servers.keys()].map((w) => [w, []]));
try {
  for (let r = 0; r < ROUNDS; r++) {
    const order = [...servers.keys()];
    for (const way of r % 2 === 0 ? order : order.reverse()) {
      const { child, url } = servers.get(way)!;
      await autocannon({ url, connections: 32, duration: 1 });
      const before = cpu(child);
      const out = await autocannon({ url, connections: 32, duration: SECONDS });
      const used = cpu(child) - before;
      results.get(way)!.push({ rate: out.requests.total / SECONDS, us: (used * 1e6) / out.requests.total });
    }
  }
} finally {
  for (const { child } of servers.values()) child.kill();
}
console.log(`${ROUNDS} rounds of ${SECONDS} s each; medians:\n| server | req/s | server µs CPU/request |\n|---|---:|---:|`);
for (const [way, rs] of results) console.log(`| ${way} | ${Math.round(median(rs.map((x) => x.rate)))} | ${median(rs.map((x) => x.us)).toFixed(1)} |`);
