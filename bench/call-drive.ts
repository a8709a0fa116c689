// The callers' side of the function call benchmarks (bench/device-calls.ts, bench/cluster.ts):
// callers in a loop with every answer checked, the devices that answer (bench/responder.ts, in
// a process of their own), and the summary of a run: rate, latency percentiles, CPU per call.
import { fork } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { ROOT, cpuSeconds, exitedEarly, onCleanup, percentile, round2, stopChild, timeout, track, type Store } from './harness.js';

/** The argument every call sends; the devices answer its length. */
export const ARG = 'hello, device';
export const CALL_TIMEOUT_MS = 10_000;

export type Call = (worker: number) => Promise<void>;

export interface Sample { latencies: number[]; seconds: number; serverCpu: number | null; devicesCpu: number | null; callersCpu: number }
export interface Row {
  /** floor / skyport (bench:calls), single / cluster (bench:cluster). */
  side: string;
  scenario: string;
  store: Store | null;
  concurrency: number;
  calls: number;
  rate: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** CPU of the server (Skyport, all its nodes) or broker (Mosquitto) per call, in µs. */
  serverUsPerCall: number | null;
  devicesUsPerCall: number | null;
  callersUsPerCall: number;
  slices: Array<{ calls: number; seconds: number; p50: number }>;
  rateRatio?: number;
  p50Ratio?: number;
}

/** CPU seconds so far of one process or several together; null when one cannot be read. */
function cpuOf(pids: Pids): number | null {
  const all = Array.isArray(pids) ? pids : [pids];
  const each = all.map((p) => cpuSeconds(p));
  return each.some((c) => c === null) ? null : (each as number[]).reduce((a, c) => a + c, 0);
}
type Pids = number | number[] | undefined;

/** Runs `concurrency` callers in a loop for `seconds`; every call's latency, in ms. */
export async function drive(concurrency: number, seconds: number, call: Call, pids: { server: Pids; devices: Pids }): Promise<Sample> {
  const latencies: number[] = [];
  const server0 = cpuOf(pids.server);
  const devices0 = cpuOf(pids.devices);
  const self0 = process.cpuUsage();
  const started = performance.now();
  const until = started + seconds * 1000;
  await Promise.all(Array.from({ length: concurrency }, async (_, w) => {
    while (performance.now() < until) {
      const t = performance.now();
      await call(w);
      latencies.push(performance.now() - t);
    }
  }));
  const elapsed = (performance.now() - started) / 1000;
  const self = process.cpuUsage(self0);
  const server1 = cpuOf(pids.server);
  const devices1 = cpuOf(pids.devices);
  return {
    latencies, seconds: elapsed,
    serverCpu: server0 === null || server1 === null ? null : server1 - server0,
    devicesCpu: devices0 === null || devices1 === null ? null : devices1 - devices0,
    callersCpu: (self.user + self.system) / 1e6,
  };
}

export function summarise(side: Row['side'], scenario: string, store: Store | null, concurrency: number, samples: Sample[]): Row {
  const all = samples.flatMap((s) => s.latencies).sort((a, b) => a - b);
  const seconds = samples.reduce((a, s) => a + s.seconds, 0);
  const perCall = (pick: (s: Sample) => number | null) => {
    const values = samples.map(pick);
    return values.some((v) => v === null) ? null : Math.round(((values as number[]).reduce((a, v) => a + v, 0) * 1e6) / all.length);
  };
  return {
    side, scenario, store, concurrency, calls: all.length, rate: Math.round(all.length / seconds),
    p50: round2(percentile(all, 0.5)), p90: round2(percentile(all, 0.9)), p99: round2(percentile(all, 0.99)), max: round2(all.at(-1) ?? NaN),
    serverUsPerCall: perCall((s) => s.serverCpu), devicesUsPerCall: perCall((s) => s.devicesCpu), callersUsPerCall: perCall((s) => s.callersCpu) ?? 0,
    slices: samples.map((s) => ({ calls: s.latencies.length, seconds: round2(s.seconds), p50: round2(percentile([...s.latencies].sort((a, b) => a - b), 0.5)) })),
  };
}

export interface Responder { pid: number | undefined; stop(): Promise<void> }

/** The first responder that exited during the run (before its stop): compare() fails with it. */
let failure: Error | undefined;

/** The answering side (bench/responder.ts), in its own process; resolves once every client is ready. */
export async function startResponder(setup: { mode: 'skyport' | 'raw'; mqttUrl: string; prefix?: string; devices: Array<{ id: string; secret: string }> }): Promise<Responder> {
  const child = track(fork(join(ROOT, 'bench', 'responder.ts'), [], { cwd: ROOT, execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  onCleanup(() => stopChild(child, 2000));
  child.send(setup);
  const ready = new Promise<void>((resolve) => child.once('message', () => resolve()));
  await Promise.race([ready, exitedEarly(child, `responder (${setup.mode})`, () => ''), timeout(30_000, `responder (${setup.mode}) ready`)]);
  // From now on, a responder that dies fails the run.
  let stopping = false;
  child.once('exit', (code, signal) => { if (!stopping) failure ??= new Error(`responder (${setup.mode}) exited (${signal ?? code}) during the run`); });
  return {
    pid: child.pid,
    stop: () => {
      stopping = true;
      return stopChild(child, 2000);
    },
  };
}

/** Whether a call's answer is the device's: 200, this device, connected, the argument's length. */
export function checkAnswer(id: string, status: number, text: string, what: string): Error | undefined {
  if (status === 200) {
    const r = JSON.parse(text) as { id?: string; connected?: boolean; return_value?: number };
    if (r.id === id && r.connected === true && r.return_value === ARG.length) return undefined;
  }
  return new Error(`${what}: ${status} ${text.slice(0, 300)}`);
}

/**
 * Callers on bare keep-alive sockets, one per caller: the request is prepared bytes, and the
 * answer is read by its content-length (Skyport answers JSON with one; anything else fails).
 */
export function wireCaller(url: URL, path: (id: string) => string, ids: string[], headers: Record<string, string>, body: string): Call {
  const requests = new Map(ids.map((id) => [id, Buffer.from(
    `POST ${path(id)} HTTP/1.1\r\nhost: ${url.host}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n${body}`)]));
  const sockets = new Map<number, { socket: Socket; waiting: ((chunk: Buffer | Error) => void) | undefined }>();
  const open = (w: number) => new Promise<{ socket: Socket; waiting: ((chunk: Buffer | Error) => void) | undefined }>((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port), noDelay: true }, () => resolve(entry));
    const entry = { socket, waiting: undefined as ((chunk: Buffer | Error) => void) | undefined };
    socket.on('data', (chunk) => entry.waiting?.(chunk));
    socket.on('error', (err) => { entry.waiting?.(err); reject(err); });
    socket.on('close', () => { sockets.delete(w); entry.waiting?.(new Error('the server closed the connection')); });
    onCleanup(async () => { socket.destroy(); });
    sockets.set(w, entry);
  });
  return async (w) => {
    const id = ids[w % ids.length] as string;
    const conn = sockets.get(w) ?? (await open(w));
    const answer = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      let buffered: Buffer = Buffer.alloc(0);
      const timer = setTimeout(() => finish(new Error(`POST ${path(id)}: no answer within ${CALL_TIMEOUT_MS / 1000} s`)), CALL_TIMEOUT_MS);
      const finish = (result: { status: number; text: string } | Error) => {
        clearTimeout(timer);
        conn.waiting = undefined;
        if (result instanceof Error) reject(result);
        else resolve(result);
      };
      conn.waiting = (chunk) => {
        if (chunk instanceof Error) return finish(chunk);
        buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
        const end = buffered.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buffered.toString('latin1', 0, end);
        const length = /\r\ncontent-length: *(\d+)/i.exec(head)?.[1];
        if (length === undefined) return finish(new Error(`POST ${path(id)}: an answer without content-length: ${head.slice(0, 200)}`));
        if (buffered.length < end + 4 + Number(length)) return;
        finish({ status: Number(head.slice(9, 12)), text: buffered.toString('utf8', end + 4, end + 4 + Number(length)) });
      };
      conn.socket.write(requests.get(id) as Buffer);
    });
    const err = checkAnswer(id, answer.status, answer.text, `POST ${path(id)}`);
    if (err) throw err;
  };
}

export interface Side { side: Row['side']; scenario: string; store: Store | null; call: Call; pids: { server: Pids; devices: Pids } }

/**
 * Measures each side in turn, `rounds` slices each, the order rotating every round, so that drift
 * in the machine's load hits every side alike; each row's ratios are to the side named `baseline`.
 */
export async function compare(label: string, sides: Side[], o: { concurrencies: number[]; warmup: number; duration: number; rounds: number }, baseline: string): Promise<Row[]> {
  const rows: Row[] = [];
  for (const concurrency of o.concurrencies) {
    const samples = sides.map(() => [] as Sample[]);
    process.stdout.write(`  ${label}, ${concurrency} caller(s): warm-up ${o.warmup} s each, `);
    for (const s of sides) await drive(concurrency, o.warmup, s.call, s.pids);
    process.stdout.write(`measuring ${o.rounds} × ${o.duration / o.rounds} s each... `);
    for (let r = 0; r < o.rounds; r++) {
      for (let k = 0; k < sides.length; k++) {
        const i = (k + r) % sides.length;
        const s = sides[i] as Side;
        samples[i]?.push(await drive(concurrency, o.duration / o.rounds, s.call, s.pids));
        if (failure) throw failure;
      }
    }
    const measured = sides.map((s, i) => summarise(s.side, s.scenario, s.store, concurrency, samples[i] as Sample[]));
    const base = measured.find((m) => m.side === baseline) as Row;
    for (const m of measured) {
      m.rateRatio = round2(m.rate / base.rate);
      m.p50Ratio = round2(m.p50 / base.p50);
    }
    console.log(measured.map((m) => `${m.side === baseline ? baseline : m.scenario.replace(/^Skyport /, '')} ${m.rate}/s p50 ${m.p50} ms`).join('; '));
    rows.push(...measured);
  }
  return rows;
}
