// What writing the request log costs per line (src/http/logging.ts, logDestination):
//   tsx bench/log-destination.ts [--lines N] [--rounds N]
// A pino logger writes request lines, as logRequests does (32 lines per turn of the event loop,
// as 32 connections' answers come), to a file, in two ways taken in turn each round: the
// baseline, sonic-boom in its default text mode with the same block size and flush period, and
// logDestination as it ships. Printed: this process's CPU per line (the main thread and libuv's
// threads, which make the writes) and the wall time per line, medians of the rounds.
import { mkdtempSync, openSync, closeSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino, { type DestinationStream } from 'pino';
import { logDestination } from '../src/http/logging.js';
import { median, numberOption } from './rounds.js';

const LINES = numberOption('lines', 200_000);
const ROUNDS = numberOption('rounds', 5);
const PER_TURN = 32;

type Way = 'text blocks (baseline)' | 'logDestination';
const WAYS: Way[] = ['text blocks (baseline)', 'logDestination'];
const dir = mkdtempSync(join(tmpdir(), 'skyport-log-bench-'));

type Flushable = DestinationStream & { flush(cb: (err?: Error) => void): void };

function destination(way: Way, fd: number): Flushable {
  if (way === 'logDestination') return logDestination(fd) as Flushable;
  return pino.destination({ dest: fd, minLength: 4096, periodicFlush: 1000, sync: false });
}

async function round(way: Way): Promise<{ cpuUs: number; wallUs: number }> {
  const fd = openSync(join(dir, 'log'), 'w');
  const stream = destination(way, fd);
  const log = pino({ level: 'info' }, stream);
  const started = performance.now();
  const cpu = process.cpuUsage();
  for (let i = 0; i < LINES; i += PER_TURN) {
    for (let j = 0; j < PER_TURN; j++) {
      log.info({ reqId: `f6074fb7a145-${i + j}`, method: 'GET', route: '/v1/user', url: '/v1/user', status: 200, ms: 0.4, ip: '127.0.0.1' }, 'request');
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  // Everything written before the descriptor closes: no write may be left on its way.
  await new Promise<void>((resolve, reject) => stream.flush((err) => (err ? reject(err) : resolve())));
  const used = process.cpuUsage(cpu);
  const wall = performance.now() - started;
  closeSync(fd);
  return { cpuUs: (used.user + used.system) / LINES, wallUs: (wall * 1000) / LINES };
}

const results = new Map<Way, { cpuUs: number; wallUs: number }[]>(WAYS.map((w) => [w, []]));
try {
  for (let r = 0; r < ROUNDS; r++) {
    // The order alternates, so that neither way always runs on a warmer process.
    for (const way of r % 2 === 0 ? WAYS : [...WAYS].reverse()) results.get(way)!.push(await round(way));
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(`${LINES} lines a round, ${ROUNDS} rounds, ${PER_TURN} lines a turn; medians:`);
console.log('| destination | µs CPU/line | µs wall/line |\n|---|---:|---:|');
for (const way of WAYS) {
  const rs = results.get(way)!;
  console.log(`| ${way} | ${median(rs.map((x) => x.cpuUs)).toFixed(2)} | ${median(rs.map((x) => x.wallUs)).toFixed(2)} |`);
}
