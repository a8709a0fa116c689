import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';

async function accepting(port: number, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = tcpConnect(port, '127.0.0.1');
      s.once('connect', () => { s.destroy(); resolve(true); });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nats-server did not listen on ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface TestNats {
  url: string;
  port: number;
  /** Kills the server (SIGKILL by default) and waits for it to be gone. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port with the same JetStream folder. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A nats-server of the test's own, with JetStream, on a free port (Debian's `nats-server`;
 * .ci/run installs it). The machine's own NATS on 4222 is never touched.
 */
export async function startNats(): Promise<TestNats> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'skyport-nats-'));
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir], { stdio: 'ignore' });
    await accepting(port);
  };
  const kill = async (signal: NodeJS.Signals = 'SIGKILL') => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      c.once('exit', () => resolve());
      c.kill(signal);
    });
  };
  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    kill,
    restart: start,
    async stop() {
      await kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
