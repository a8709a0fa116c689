// What a webhook request's deadline and the reading of its answer cost the sender
// (src/services/webhooks/sender.ts):
//   tsx bench/webhook-deadline.ts [--requests N] [--rounds N]
// The same undici requests (Agent, 32 at once, a 288-byte form body, as the sender's) to a bare
// node:http receiver in a child process, in four ways taken in turn each round, the first three
// through undici's `request` (its answer read as a stream): no deadline (the baseline, as the bare
// loop of bench:webhooks sends), an AbortSignal.timeout as the request's signal, an EventEmitter
// with a timer (the sender until 2026-12-05); and the sender as it ships (undici's dispatcher and a
// handler of its own, with its deadline). Printed: requests/s and this process's CPU per request,
// medians of the rounds. The receiver is bench/bare-server.mjs.
import { fork } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { createSender } from '../src/services/webhooks/sender.js';
import { median, numberOption } from './rounds.js';

const REQUESTS = numberOption('requests', 20_000);
const ROUNDS = numberOption('rounds', 5);
const AT_ONCE = 32;

type Way = 'none' | 'AbortSignal.timeout' | 'emitter and timer' | 'the sender';
const WAYS: Way[] = ['none', 'AbortSignal.timeout', 'emitter and timer', 'the sender'];

// The baseline server of `npm run bench` (a small JSON answer once the body is in), as the receiver.
const receiver = fork(fileURLToPath(new URL('./bare-server.mjs', import.meta.url)));
const [{ port }] = (await once(receiver, 'message')) as [{ port: number }];
const url = `http://127.0.0.1:${port}/hook`;
const agent = new Agent({ connections: AT_ONCE, headersTimeout: 20_000, bodyTimeout: 20_000 });
const body = `event=bench&data=${'x'.repeat(250)}&coreid=0123456789abcdef01234567`;
const headers = { 'content-type': 'application/x-www-form-urlencoded', 'webhook-id': 'msg_bench', 'webhook-timestamp': '1', 'webhook-signature': 'v1,bench' };
const sender = createSender({ check: () => null, connectionsPerHost: AT_ONCE });

async function send(way: Way): Promise<void> {
  if (way === 'the sender') {
    const r = await sender.send({ method: 'POST', url, headers, body }, true);
    if (r.status !== 200) throw new Error(`the receiver answered ${r.status ?? r.error}`);
    return;
  }
  let signal: AbortSignal | EventEmitter | undefined;
  let timer: NodeJS.Timeout | undefined;
  if (way === 'AbortSignal.timeout') signal = AbortSignal.timeout(20_000);
  if (way === 'emitter and timer') {
    const deadline = new EventEmitter();
    timer = setTimeout(() => deadline.emit('abort'), 20_000).unref();
    signal = deadline;
  }
  try {
    const res = await request(url, { method: 'POST', headers, body, dispatcher: agent, ...(signal ? { signal } : {}) });
    for await (const chunk of res.body) void chunk;
    if (res.statusCode !== 200) throw new Error(`the receiver answered ${res.statusCode}`);
  } finally {
    clearTimeout(timer);
  }
}

async function measure(way: Way): Promise<{ rate: number; cpuUs: number }> {
  let left = REQUESTS;
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(Array.from({ length: AT_ONCE }, async () => {
    while (left-- > 0) await send(way);
  }));
  const used = process.cpuUsage(cpu);
  return { rate: REQUESTS / ((performance.now() - started) / 1000), cpuUs: (used.user + used.system) / REQUESTS };
}

try {
  await measure('none'); // warm-up: connections open, code compiled
  const runs = new Map<Way, Array<{ rate: number; cpuUs: number }>>(WAYS.map((w) => [w, []]));
  for (let round = 0; round < ROUNDS; round++) {
    // Each round in another order, so that no way always follows the same one.
    const order = round % 2 === 0 ? WAYS : [...WAYS].reverse();
    for (const way of order) runs.get(way)?.push(await measure(way));
  }
  console.log(`${REQUESTS} requests per run, ${AT_ONCE} at once, ${ROUNDS} rounds; medians\n`);
  console.log('| way | requests/s | client µs CPU/request | CPU/request ÷ none |');
  console.log('|---|---:|---:|---:|');
  const base = median((runs.get('none') ?? []).map((r) => r.cpuUs));
  for (const way of WAYS) {
    const r = runs.get(way) ?? [];
    const cpu = median(r.map((x) => x.cpuUs));
    console.log(`| ${way} | ${Math.round(median(r.map((x) => x.rate)))} | ${cpu.toFixed(0)} | ${(cpu / base).toFixed(2)} |`);
  }
} finally {
  await Promise.all([agent.close(), sender.close()]);
  receiver.kill();
}
