// The benchmark's side of a helper process that takes numbered commands (bench/child-commands.ts):
// started with tsx, always cleaned up, each command answered by its `seq` or failed when the child
// goes away. bench/webhooks.ts and bench/ota.ts run their devices and receivers this way.
import { fork, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { setPriority } from 'node:os';
import { exitedEarly, onCleanup, ROOT, stopChild, timeout, track } from './harness.js';

export interface CommandChild { child: ChildProcess; call<T>(cmd: object, ms?: number): Promise<T>; stop(): Promise<void> }

/**
 * Forks bench/`file` and waits for its `ready`. A child that exits before it is stopped fails the
 * commands it was answering and is reported to `lost` (the benchmark fails at its next check).
 * `nice` lowers its CPU priority (0 to 19): a load generator standing in for machines elsewhere.
 */
export async function startCommandChild(file: string, name: string, lost: (err: Error) => void, options: { nice?: number } = {}): Promise<CommandChild> {
  const child = track(fork(join(ROOT, 'bench', file), [], { cwd: ROOT, execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  if (options.nice && child.pid !== undefined) setPriority(child.pid, options.nice);
  onCleanup(() => stopChild(child, 2000));
  const waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  child.on('message', (m) => {
    const { seq, result, error } = m as { seq: number; result?: unknown; error?: string };
    const w = waiting.get(seq);
    if (!w) return;
    waiting.delete(seq);
    if (error !== undefined) w.reject(new Error(`${name}: ${error}`));
    else w.resolve(result);
  });
  let stopping = false;
  child.once('exit', (code, signal) => {
    if (stopping) return;
    for (const w of waiting.values()) w.reject(new Error(`${name} exited (${signal ?? code})`));
    lost(new Error(`${name} exited (${signal ?? code}) during the run`));
  });
  let seq = 0;
  const call = <T>(cmd: object, ms = 60_000) => {
    const mine = ++seq;
    const answer = new Promise<T>((resolve, reject) => {
      waiting.set(mine, { resolve: resolve as (v: unknown) => void, reject });
      child.send({ ...cmd, seq: mine });
    });
    return Promise.race([answer, timeout(ms, `${name}: ${(cmd as { cmd: string }).cmd}`)]);
  };
  const ready = new Promise<void>((resolve) => waiting.set(0, { resolve: () => resolve(), reject: () => undefined }));
  await Promise.race([ready, exitedEarly(child, name, () => ''), timeout(30_000, `${name} ready`)]);
  return { child, call, stop: () => { stopping = true; return stopChild(child, 2000); } };
}
