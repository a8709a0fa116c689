import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * The real particle-cli from the npm registry, installed once into a cache folder outside the
 * repository and run as a user would run it, with a HOME of its own (it keeps its settings in
 * ~/.particle).
 *
 * 3.43.1 is the newest release that installs from the registry and runs on Node 20: every later
 * release (3.47.x to 3.51.0) declares `node >= 22` and depends on binary-version-reader 4 and
 * particle-commands releases that the registry does not serve (npm answers ETARGET).
 */
export const PARTICLE_CLI_VERSION = '3.43.1';

/**
 * Where it is installed: $PARTICLE_CLI_CACHE, or a folder of the system's temporary directory,
 * which outlives `npm ci` and is shared by every clone on the machine.
 */
export function particleCliCache(): string {
  return process.env.PARTICLE_CLI_CACHE ?? join(tmpdir(), `skyport-particle-cli-${PARTICLE_CLI_VERSION}`);
}

export type ParticleCliInstall =
  | { ok: true; entry: string; dir: string; installedMs: number | null }
  | { ok: false; reason: string };

const INSTALL_TIMEOUT_MS = 5 * 60_000;
/** npm's words for a registry it cannot reach (as opposed to a package it cannot find). */
const UNREACHABLE = /\b(ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ESOCKETTIMEDOUT|EHOSTUNREACH|ENETUNREACH|ERR_SOCKET_TIMEOUT)\b/;

function entryOf(dir: string): string {
  return join(dir, 'node_modules', 'particle-cli', 'src', 'index.js');
}

function installedVersion(dir: string): string | undefined {
  try {
    return (JSON.parse(readFileSync(join(dir, 'node_modules', 'particle-cli', 'package.json'), 'utf8')) as { version?: string }).version;
  } catch {
    return undefined;
  }
}

const installed = (dir: string) => installedVersion(dir) === PARTICLE_CLI_VERSION && existsSync(entryOf(dir));

/**
 * The cached install, or a new one. One process of the machine installs at a time (a lock folder
 * beside the cache): the test files that use the CLI start together on a fresh machine, and a
 * second install would cost another minute of CPU and then replace the folder the first file's
 * commands are running from. The others wait for it and use its install. npm installs into a
 * fresh folder beside the cache, which is renamed into place only when complete, so an
 * interrupted install never leaves a half-filled cache. Optional dependencies and install scripts
 * are left out: they build the native USB and serial modules, which no cloud command loads.
 * A registry that cannot be reached gives `ok: false` (the caller skips); any other failure throws.
 */
export async function ensureParticleCli(): Promise<ParticleCliInstall> {
  const dir = particleCliCache();
  const ready = { ok: true, entry: entryOf(dir), dir, installedMs: null } as const;
  if (installed(dir)) return ready;
  await mkdir(dirname(dir), { recursive: true });
  const lock = `${dir}.lock`;
  for (;;) {
    try {
      await mkdir(lock);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    // Held by an install under way, or left by one that was killed (older than any install may take).
    const since = await stat(lock).then((st) => Date.now() - st.mtimeMs, () => 0);
    if (since > INSTALL_TIMEOUT_MS + 60_000) await rm(lock, { recursive: true, force: true });
    else await new Promise((r) => setTimeout(r, 500));
    if (installed(dir)) return ready;
  }
  try {
    return installed(dir) ? ready : await install(dir);
  } finally {
    await rm(lock, { recursive: true, force: true });
  }
}

async function install(dir: string): Promise<ParticleCliInstall> {
  const partial = await mkdtemp(`${dir}.partial-`);
  const started = Date.now();
  try {
    await writeFile(join(partial, 'package.json'), JSON.stringify({ name: 'particle-cli-cache', private: true }));
    const env: NodeJS.ProcessEnv = {};
    // Run from `npm test`, npm passes its own script's settings down; keep only what says where
    // the registry is and how to reach it.
    for (const [k, v] of Object.entries(process.env)) {
      if (/^npm_(package|lifecycle)_/i.test(k) || /^npm_config_(local_|global_)?prefix$/i.test(k)) continue;
      env[k] = v;
    }
    const r = await run('npm', ['install', '--no-audit', '--no-fund', '--no-update-notifier', '--omit=optional', '--ignore-scripts', '--loglevel=error', `particle-cli@${PARTICLE_CLI_VERSION}`], partial, env, INSTALL_TIMEOUT_MS);
    if (r.code !== 0) {
      const output = `${r.stdout}\n${r.stderr}`.trim();
      if (UNREACHABLE.test(output) || r.timedOut) {
        const why = r.timedOut ? `no answer in ${INSTALL_TIMEOUT_MS / 1000} s` : output.split('\n').find((l) => UNREACHABLE.test(l))?.trim();
        return { ok: false, reason: `the npm registry is unreachable, so particle-cli ${PARTICLE_CLI_VERSION} cannot be installed (${why})` };
      }
      throw new Error(`npm install particle-cli@${PARTICLE_CLI_VERSION} failed (exit ${r.code}):\n${output}`);
    }
    if (installedVersion(partial) !== PARTICLE_CLI_VERSION) throw new Error(`npm installed particle-cli ${installedVersion(partial)}, not ${PARTICLE_CLI_VERSION}`);
    // What is there is another version or a broken install (this process holds the lock).
    if (existsSync(dir)) await rm(dir, { recursive: true, force: true });
    await rename(partial, dir);
    return { ok: true, entry: entryOf(dir), dir, installedMs: Date.now() - started };
  } finally {
    await rm(partial, { recursive: true, force: true });
  }
}

interface Ran { code: number; stdout: string; stderr: string; timedOut: boolean }

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL'); }, timeoutMs);
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    child.on('error', (err) => { clearTimeout(timer); reject(err); });
    child.on('close', (code) => { clearTimeout(timer); resolve({ code: code ?? -1, stdout, stderr, timedOut }); });
  });
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout and stderr as they interleaved, without the spinner's and prompts' escape codes. */
  out: string;
}

/** Removes ANSI escape sequences (the CLI's spinner and inquirer's prompt rendering). */
export function plain(text: string): string {
  return text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '');
}

/**
 * Runs `particle <args>` with `home` as HOME and nothing else from this environment that could
 * point it elsewhere (no proxy, no PARTICLE_* settings). `answers` drive its prompts: each is sent,
 * with a newline, once its prompt has appeared in the output (inquirer takes whatever is waiting
 * on stdin as the answer to its first prompt, so a plain pipe cannot answer two), and stdin is
 * closed after the last one, or at once without answers, so that an unexpected prompt ends the
 * command instead of hanging it. A command still running
 * after `timeoutMs` is killed and reported with code -1.
 */
export function particle(entry: string, args: string[], options: { home: string; answers?: Array<[RegExp, string]>; timeoutMs?: number }): Promise<CliResult> {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: options.home, PARTICLE_DISABLE_UPDATE: 'true', NO_COLOR: '1', FORCE_COLOR: '0' };
  const answers = [...(options.answers ?? [])];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [entry, ...args], { env, cwd: options.home, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let all = '';
    let seen = 0;
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 30_000);
    const answer = () => {
      const next = answers[0];
      if (!next) return;
      const text = plain(all).slice(seen);
      if (!next[0].test(text)) return;
      answers.shift();
      seen = plain(all).length;
      child.stdin.write(`${next[1]}\n`);
      if (answers.length === 0) child.stdin.end();
    };
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); all += d.toString(); answer(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); all += d.toString(); answer(); });
    child.stdin.on('error', () => undefined);
    child.on('error', (err) => { clearTimeout(timer); reject(err); });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal === 'SIGKILL' ? -1 : -2), stdout, stderr, out: plain(all) });
    });
    if (answers.length === 0) child.stdin.end();
  });
}
