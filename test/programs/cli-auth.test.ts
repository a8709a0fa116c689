import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { stat, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { raw } from '../helpers/http.js';
import { enableMfa, signUp } from '../helpers/fixtures.js';
import { cliHome, skyport } from '../helpers/cli.js';
import { totpNow } from '../../src/domain/totp.js';

/** The skyport CLI: login (with MFA), whoami, logout, profiles and their permissions, errors. */
let server: TestServer;
before(async () => { server = await startTestServer(); });
after(async () => { await server.close(); });

test('login, whoami and logout; the token is kept in a 0600 profile and revoked at logout', async () => {
  const { username, password } = await signUp(server.url);
  const home = await cliHome();
  const login = await skyport(['login', '--api-url', server.url, '--username', username], { home, input: `${password}\n` });
  assert.equal(login.code, 0, login.stderr);
  assert.match(login.stdout, new RegExp(`logged in as ${username.replace('.', '\\.')}`));

  const file = join(home, 'config', 'profiles.json');
  assert.equal((await stat(file)).mode & 0o777, 0o600);
  const saved = JSON.parse(await readFile(file, 'utf8'));
  const token = saved.profiles.default.token as string;
  assert.match(token, /^[0-9a-f]{40}$/);
  assert.equal(saved.profiles.default.apiUrl, server.url);

  const who = await skyport(['whoami'], { home });
  assert.equal(who.code, 0, who.stderr);
  assert.equal(who.stdout.trim(), username);
  const whoJson = await skyport(['whoami', '--json'], { home });
  assert.equal(whoJson.json.username, username);

  const out = await skyport(['logout'], { home });
  assert.equal(out.code, 0, out.stderr);
  assert.equal((await raw(`${server.url}/v1/user`, { token })).status, 401, 'the token is revoked');
  const after = await skyport(['whoami'], { home });
  assert.equal(after.code, 1);
  assert.equal(after.stderr.trim().split('\n').length, 1, 'one line');
  assert.match(after.stderr, /^skyport: not logged in .*skyport login/);
});

test('login with MFA asks for the code; SKYPORT_TOKEN and SKYPORT_API_URL override the profile', async () => {
  const { username, password, token } = await signUp(server.url);
  const secret = await enableMfa(server.url, token);

  const home = await cliHome();
  const login = await skyport(['login', '--api-url', server.url, '-u', username], { home, input: `${password}\n${totpNow(secret, new Date(Date.now() + 30_000))}\n` });
  assert.equal(login.code, 0, login.stderr);
  const wrong = await skyport(['login', '--api-url', server.url, '-u', username], { home, input: `${password}\n000000\n` });
  assert.equal(wrong.code, 1);
  assert.match(wrong.stderr, /^skyport: .*\[\d{3}\]\n$/);

  const viaEnv = await skyport(['whoami'], { home: await cliHome(), env: { SKYPORT_TOKEN: token, SKYPORT_API_URL: server.url } });
  assert.equal(viaEnv.code, 0, viaEnv.stderr);
  assert.equal(viaEnv.stdout.trim(), username);
});

test('errors: a wrong password, an unreachable cloud, and a bad flag each give one line and a non-zero exit', async () => {
  const { username } = await signUp(server.url);
  const home = await cliHome();
  const bad = await skyport(['login', '--api-url', server.url, '-u', username], { home, input: 'wrong-password\n' });
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /^skyport: invalid_grant.*\[(400|401|403)\]\n$/);
  const nowhere = await skyport(['whoami', '--api-url', 'http://127.0.0.1:9'], { home, env: { SKYPORT_TOKEN: 'x'.repeat(40) } });
  assert.equal(nowhere.code, 1);
  assert.match(nowhere.stderr, /^skyport: cannot reach http:\/\/127\.0\.0\.1:9/);
  const flag = await skyport(['whoami', '--no-such-flag'], { home });
  assert.notEqual(flag.code, 0);
});
