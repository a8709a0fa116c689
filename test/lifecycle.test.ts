import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshStore, startTestServer, email, STORE } from './helpers/server.js';
import { particle } from './helpers/particle.js';

test('data survive a restart', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'skyport-restart-'));
  const store = await freshStore({ dataDir: dir });
  try {
    const username = email();
    const first = await startTestServer({ store });
    await particle(first.url).createUser({ username, password: 'correct horse' });
    const token = (await particle(first.url).login({ username, password: 'correct horse' })).body.access_token;
    await first.close();
    const second = await startTestServer({ store });
    assert.equal((await particle(second.url).getUserInfo({ auth: token })).body.username, username);
    assert.equal((await particle(second.url).login({ username, password: 'correct horse' })).statusCode, 200);
    await second.close();
  } finally {
    await store.drop();
    rmSync(dir, { recursive: true, force: true });
  }
});

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

function run(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/run.ts', ...args], { env: { ...process.env, LOG_LEVEL: 'silent', ...env } });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => { out += String(d); });
  child.stderr.on('data', (d) => { err += String(d); });
  const exit = new Promise<number | null>((resolve) => child.on('close', resolve));
  return { child, exit, out: () => out, err: () => err };
}

// The server process tests run on the embedded store (the one `npm start` uses).
const processTest = STORE === 'embedded' ? test : test.skip;

processTest('the server process: user create with sign-up closed, start, SIGTERM exits cleanly, bad settings and taken ports say which setting', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'skyport-proc-'));
  try {
    const username = email('admin');
    const create = run(['user', 'create', '--username', username, '--data-dir', dir], { SKYPORT_PASSWORD: 'bootstrap pass', SIGNUP: 'off' });
    assert.equal(await create.exit, 0, create.err());
    assert.match(create.out(), /created user/);

    const port = await freePort();
    const server = run(['server', 'start', '--port', String(port), '--host', '127.0.0.1', '--data-dir', dir], { SIGNUP: 'off' });
    const url = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 100 && !server.out().includes('Skyport is running'); i++) await new Promise((r) => setTimeout(r, 100));
    assert.match(server.out(), new RegExp(`API +http://127.0.0.1:${port}`));
    assert.equal((await fetch(`${url}/healthz`)).status, 200);
    const login = await particle(url).login({ username, password: 'bootstrap pass' });
    assert.equal(login.statusCode, 200);
    const signup = await fetch(`${url}/v1/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: email(), password: 'correct horse' }) });
    assert.equal(signup.status, 403);

    const taken = run(['server', 'start', '--port', String(port), '--host', '127.0.0.1', '--data-dir', join(dir, 'other')], {});
    assert.equal(await taken.exit, 1);
    assert.match(taken.err(), /port \d+ is already in use; set PORT/);

    server.child.kill('SIGTERM');
    assert.equal(await server.exit, 0, server.err());

    const bad = run(['server', 'start'], { PORT: 'abc', DATA_DIR: dir });
    assert.equal(await bad.exit, 1);
    assert.match(bad.err(), /PORT must be a whole number/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
