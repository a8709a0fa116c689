// A Mosquitto of the benchmark's own, the baseline of bench/connections.ts and bench/cluster.ts:
// a fresh broker on a free port, so that its memory starts from nothing and the machine's own
// broker (1883) is never touched.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { accepting, captureOutput, exitedEarly, freePort, onCleanup, stopChild, timeout, track } from './harness.js';

export interface Mosquitto { host: string; port: number; pid: number; stop(): Promise<void> }

/**
 * Anonymous, no persistence, no log, and no cap on connections of its own (`max_connections -1`):
 * what it can hold is then its open-files limit.
 */
export async function startMosquitto(): Promise<Mosquitto> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-mosquitto-'));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const port = await freePort();
  writeFileSync(join(dir, 'mosquitto.conf'), `listener ${port} 127.0.0.1\nmax_connections -1\nallow_anonymous true\npersistence false\nlog_dest none\n`);
  const bin = ['/usr/sbin/mosquitto', '/usr/local/sbin/mosquitto'].find((b) => existsSync(b)) ?? 'mosquitto';
  const child = track(spawn(bin, ['-c', join(dir, 'mosquitto.conf')], { stdio: ['ignore', 'pipe', 'pipe'] }));
  onCleanup(() => stopChild(child, 2000));
  const output = captureOutput(child);
  await Promise.race([accepting(port), exitedEarly(child, 'mosquitto', output), timeout(10_000, 'mosquitto start')]);
  return { host: '127.0.0.1', port, pid: child.pid ?? 0, stop: () => stopChild(child, 5000) };
}
