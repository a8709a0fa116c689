// The simulated fleet of bench/config-fanout.ts and bench/cluster.ts: a few worker processes (bench/config-devices.ts)
// that hold the devices' connections between them, driven as one.
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { Connected, Expect, Report, Setup } from './config-devices.js';
import { ROOT, cpuSeconds, onCleanup, sleep, stopChild, track } from './harness.js';

export interface Fleet {
  /** Starts a round in every worker; `done` resolves once every device has done it. */
  expect(e: Expect): Promise<{ done: Promise<void> }>;
  /** Connects every device that is not connected; with `hello`, each reports its hashes. */
  connect(hello: boolean): Promise<Connected>;
  disconnect(): Promise<void>;
  /** While on, every device acknowledges the config/set messages it gets but keeps its old hashes (counted in the report's `missed`). */
  forgetful(on: boolean): Promise<void>;
  /** The connections lost so far, all workers; the count starts again from 0. */
  forgetLost(): Promise<number>;
  report(): Promise<Report>;
  /** CPU seconds of the worker processes so far. */
  cpu(): number;
  stop(): Promise<void>;
}

/** Sends a message and waits for the answer of kind `answer`; fails if the worker exits first. */
function ask<T>(child: ChildProcess, message: object, answer: string, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const done = (err?: Error, value?: T) => {
      child.off('message', onMessage);
      child.off('exit', onExit);
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(value as T);
    };
    const onMessage = (m: { kind: string }) => { if (m.kind === answer) done(undefined, m as T); };
    const onExit = (code: number | null, signal: string | null) => done(new Error(`a device worker exited (${signal ?? code}) while waiting for ${answer}`));
    const timer = setTimeout(() => done(new Error(`a device worker did not answer ${answer} within ${ms / 1000} s`)), ms);
    child.on('message', onMessage);
    child.once('exit', onExit);
    child.send(message);
  });
}

export async function startFleet(setup: Omit<Setup, 'devices'>, devices: Setup['devices'], perWorker: number): Promise<Fleet> {
  const workers: ChildProcess[] = [];
  // Each worker's devices go to one server (a cluster's gateways each take their own workers).
  const byPort = new Map<number, Setup['devices']>();
  for (const d of devices) {
    const port = d.port ?? setup.port;
    byPort.set(port, byPort.get(port) ?? []).get(port)?.push(d);
  }
  for (const group of byPort.values()) {
    for (let i = 0; i < group.length; i += perWorker) {
      const child = track(fork(join(ROOT, 'bench', 'config-devices.ts'), [], { cwd: ROOT, execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
      onCleanup(() => stopChild(child, 2000));
      workers.push(child);
      await ask(child, { kind: 'setup', ...setup, devices: group.slice(i, i + perWorker) }, 'ready', 30_000);
    }
  }
  const all = <T>(message: object, answer: string, ms: number) => Promise.all(workers.map((w) => ask<T>(w, message, answer, ms)));

  return {
    async expect(e) {
      // Listening before the round starts: a worker may finish as soon as the trigger goes out.
      const done = Promise.all(workers.map((w) => new Promise<void>((resolve) => {
        const on = (m: { kind: string }) => {
          if (m.kind !== 'round-done') return;
          w.off('message', on);
          resolve();
        };
        w.on('message', on);
      }))).then(() => undefined);
      await all({ kind: 'expect', ...e }, 'expecting', 10_000);
      return { done };
    },
    async connect(hello) {
      const parts = await all<Connected>({ kind: 'connect', hello }, 'connected', 600_000);
      const codes: Record<string, number> = {};
      for (const p of parts) for (const [c, k] of Object.entries(p.codes)) codes[c] = (codes[c] ?? 0) + k;
      return {
        ok: parts.reduce((a, p) => a + p.ok, 0), failed: parts.reduce((a, p) => a + p.failed, 0), codes,
        lastConnackAt: Math.max(...parts.map((p) => p.lastConnackAt)), lastReadyAt: Math.max(...parts.map((p) => p.lastReadyAt)),
      };
    },
    async disconnect() {
      await all({ kind: 'disconnect' }, 'disconnected', 120_000);
    },
    async forgetful(on) {
      await all({ kind: 'forgetful', on }, 'forgetting', 10_000);
    },
    async forgetLost() {
      return (await all<{ lost: number }>({ kind: 'forget-lost' }, 'forgot', 10_000)).reduce((a, p) => a + p.lost, 0);
    },
    async report() {
      const parts = await all<Report>({ kind: 'report' }, 'report', 30_000);
      const sum = (k: 'devices' | 'done' | 'sets' | 'extra' | 'wrong' | 'stray' | 'lost' | 'missed') => parts.reduce((a, p) => a + p[k], 0);
      const firsts = parts.map((p) => p.firstSetAt).filter((t) => t > 0);
      return {
        devices: sum('devices'), done: sum('done'), sets: sum('sets'), extra: sum('extra'), wrong: sum('wrong'), stray: sum('stray'), lost: sum('lost'), missed: sum('missed'),
        firstSetAt: firsts.length ? Math.min(...firsts) : 0, lastAckAt: Math.max(...parts.map((p) => p.lastAckAt)),
        ackTimes: parts.flatMap((p) => p.ackTimes), notDone: parts.flatMap((p) => p.notDone).slice(0, 5),
      };
    },
    cpu: () => workers.reduce((a, w) => a + (cpuSeconds(w.pid) ?? 0), 0),
    async stop() {
      await Promise.all(workers.map((w) => {
        if (w.connected) w.send({ kind: 'stop' });
        return stopChild(w, 5000);
      }));
    },
  };
}

/** After the last acknowledgement, how long to watch for messages a device should not get. */
const GRACE_MS = 1000;

/** Waits until the fleet's round is done, printing progress; fails with what got through by `timeoutMs` after t0. */
export async function roundDone(fleet: Fleet, done: Promise<void>, what: string, t0: number, timeoutMs: number): Promise<Report> {
  let timer: NodeJS.Timeout | undefined;
  const progress = setInterval(() => void fleet.report().then((r) => console.log(`    … ${what}: ${r.done} of ${r.devices} devices done`)).catch(() => undefined), 10_000);
  try {
    const ok = await Promise.race([done.then(() => true), new Promise<false>((resolve) => { timer = setTimeout(() => resolve(false), Math.max(0, t0 + timeoutMs - Date.now())); })]);
    if (!ok) {
      const r = await fleet.report();
      throw new Error(`${what}: ${r.done} of ${r.devices} devices done within ${timeoutMs / 1000} s (${r.sets} config/set received; not done: ${r.notDone.join(', ')})`);
    }
  } finally {
    clearTimeout(timer);
    clearInterval(progress);
  }
  // Anything sent after the last acknowledgement that should not have been is caught here.
  await sleep(GRACE_MS);
  return fleet.report();
}

/** What was wrong in a round, as the report shows it: devices not done, messages they should not have had, lost connections. */
export function problemsOf(r: Report): string[] {
  const problems: string[] = [];
  if (r.done !== r.devices) problems.push(`${r.devices - r.done} devices not done`);
  if (r.extra > 0) problems.push(`${r.extra} devices got a module twice or one the round did not change`);
  if (r.wrong > 0) problems.push(`${r.wrong} modules carried the wrong value`);
  if (r.lost > 0) problems.push(`${r.lost} connections lost`);
  return problems;
}
