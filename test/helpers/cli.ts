import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Runs the built `skyport` command (bin/skyport.js → dist/, which `npm test` builds first) as a
 * user would, with its own config folder, answers piped to its prompts, and nothing inherited
 * that would point it elsewhere.
 */
export interface CliResult { code: number; stdout: string; stderr: string; json: any } // eslint-disable-line @typescript-eslint/no-explicit-any

/** The `skyport` command as `npm start` and users run it: bin/skyport.js over the build in dist/. */
export const BIN = fileURLToPath(new URL('../../bin/skyport.js', import.meta.url));

export async function cliHome(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'skyport-cli-'));
}

export function skyport(args: string[], options: { home: string; input?: string; env?: Record<string, string> }): Promise<CliResult> {
  if (!existsSync(new URL('../../dist/cli/main.js', import.meta.url))) throw new Error('the CLI is not built: run `npm run build` (npm test does)');
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: options.home, SKYPORT_CONFIG_DIR: join(options.home, 'config'), NO_COLOR: '1', ...options.env };
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    child.on('error', reject);
    child.on('close', (code) => {
      let json: unknown;
      try { json = JSON.parse(stdout); } catch { json = undefined; }
      resolve({ code: code ?? -1, stdout, stderr, json });
    });
    child.stdin.end(options.input ?? '');
  });
}

/** One line on stderr, `skyport: …`, and exit status 1. */
export function failedWith(r: CliResult, pattern: RegExp): void {
  assert.equal(r.code, 1, `expected a failure: ${r.stdout}${r.stderr}`);
  assert.equal(r.stderr.split('\n').filter((l) => l !== '').length, 1, `one line: ${r.stderr}`);
  assert.match(r.stderr, /^skyport: /);
  assert.match(r.stderr.trimEnd(), pattern);
}

/**
 * `skyport …` left running, with the test's environment (and `env` over it): for servers and
 * simulations a test stops itself. `exit` resolves with the exit code.
 */
export function spawnSkyport(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env } });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => { out += String(d); });
  child.stderr.on('data', (d) => { err += String(d); });
  const exit = new Promise<number | null>((resolve) => child.on('close', resolve));
  return { child, exit, out: () => out, err: () => err };
}
