import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { logDestination } from '../../src/http/logging.js';
import { eventually } from '../helpers/eventually.js';

/**
 * The log's destination writes in blocks, off the request's path (src/http/logging.ts): a line
 * waits for more, for at most a second, and nothing buffered is lost when the process ends.
 */

function scratch(): { file: string; done(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'skyport-log-'));
  return { file: join(dir, 'log'), done: () => rmSync(dir, { recursive: true, force: true }) };
}

type Destination = ReturnType<typeof logDestination> & { end(): void; once(e: string, f: () => void): void };

/** The destination writing to `file`, once the file is open. */
async function opened(file: string): Promise<Destination> {
  const stream = logDestination(file) as Destination;
  await new Promise<void>((resolve) => stream.once('ready', resolve));
  return stream;
}

const read = (file: string) => { try { return readFileSync(file, 'utf8'); } catch { return ''; } };

test('a short line waits for more, then is written within a second', async () => {
  const { file, done } = scratch();
  const stream = await opened(file);
  stream.write('{"msg":"one"}\n');
  assert.equal(read(file), '', 'not written at once');
  await eventually(() => (read(file) === '{"msg":"one"}\n' ? true : undefined), 3000, 'the periodic flush');
  stream.end();
  done();
});

test('4 KB of lines are written without waiting', async () => {
  const { file, done } = scratch();
  const stream = await opened(file);
  const line = `{"msg":"${'x'.repeat(100)}"}\n`;
  for (let i = 0; i < 50; i++) stream.write(line);
  // Well within the periodic flush's second: the block went out because it was full.
  await eventually(() => (read(file).length >= 4096 ? true : undefined), 500, 'a full block');
  stream.end();
  done();
});

test('what is buffered is written when the process exits', () => {
  const { file, done } = scratch();
  const module = new URL('../../src/http/logging.js', import.meta.url).href;
  // An open descriptor, as standard output is for a server.
  const program = `import { logDestination } from ${JSON.stringify(module)};
    import { openSync } from 'node:fs';
    import pino from 'pino';
    const log = pino(logDestination(openSync(${JSON.stringify(file)}, 'a')));
    log.info('before exit');
    setTimeout(() => { log.info('last words'); process.exit(3); }, 10);`;
  const child = spawnSync(process.execPath, ['--input-type=module', '-e', program], { encoding: 'utf8', cwd: process.cwd() });
  assert.equal(child.status, 3, child.stderr);
  const lines = read(file).trim().split('\n').map((l) => (JSON.parse(l) as { msg: string }).msg);
  assert.deepEqual(lines, ['before exit', 'last words']);
  done();
});
