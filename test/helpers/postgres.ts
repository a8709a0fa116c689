import { execFile } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports.js';

const run = promisify(execFile);

export interface TestPostgres {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string;
  port: number;
  /** Stops the server: `fast` (a restart or a fail-over: clients are told and disconnected) or `immediate` (a crash). */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again on the same port and data. */
  start(): Promise<void>;
  destroy(): Promise<void>;
}

/** Debian keeps each major version's server programs apart; pg_config names them when it is there. */
async function binaries(): Promise<string> {
  try {
    return (await run('pg_config', ['--bindir'])).stdout.trim();
  } catch {
    const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a));
    if (versions.length === 0) throw new Error('no PostgreSQL server programs: install postgresql');
    return join('/usr/lib/postgresql', versions[0] as string, 'bin');
  }
}

/**
 * A PostgreSQL server of the test's own (Debian's binaries: initdb and pg_ctl), on a free
 * loopback port with trust authentication, for tests that stop and start it: the machine's own
 * server on 5432 is never touched. PostgreSQL refuses to run as root, so as root it runs as the
 * `postgres` user, as the packaged server does.
 */
export async function startPostgres(): Promise<TestPostgres> {
  const bin = await binaries();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'skyport-pg-'));
  const data = join(dir, 'data');
  const asRoot = userInfo().uid === 0;
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const pg = (program: string, args: string[]) => (asRoot
    ? run('runuser', ['-u', 'postgres', '--', join(bin, program), ...args])
    : run(join(bin, program), args));
  await pg('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '--no-instructions', '-E', 'UTF8']);
  // fsync off: the tests stop the server, not the machine, so what it wrote is in the page cache.
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off`;
  const start = async () => { await pg('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', '-t', '30', 'start']); };
  const stop = async (mode: 'fast' | 'immediate' = 'fast') => { await pg('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '30', 'stop']); };
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    stop,
    start,
    async destroy() {
      await stop('immediate').catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
