import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshStore, startTestServer, email, manualClock, STORE } from './helpers/server.js';
import { particle } from './helpers/particle.js';
import { raw } from './helpers/http.js';
import { spawnSkyport } from './helpers/cli.js';
import { eventually } from './helpers/eventually.js';
import { freePort } from './helpers/ports.js';
import { fakeDevice, provision } from './helpers/device.js';
import { newProduct, signUp } from './helpers/fixtures.js';
import { totpNow } from '../src/domain/totp.js';
import { loadMigrations } from '../src/storage/migrate.js';

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

test('a server started on a store its previous run left with devices online (killed, no goodbye) lists them offline until they reconnect, their rows still naming the node', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'skyport-leftover-'));
  const store = await freshStore({ dataDir: dir });
  try {
    const first = await startTestServer({ store });
    const { token } = await signUp(first.url);
    const product = await newProduct(first.url, token);
    const who = await provision(first.url, token, product.id);
    const device = await fakeDevice(first.mqttUrl, who, {});
    const online = async (url: string) => (await raw(`${url}/v1/products/${product.id}/devices/${who.id}`, { token })).json.online;
    await eventually(async () => ((await online(first.url)) === true ? true : undefined), 5000, 'online on the first run');
    await device.close();
    await first.close();
    // What a run killed with its devices connected leaves behind: their rows still say online,
    // on the node (a single node is always 'local').
    const db = await store.open();
    await db.query("UPDATE devices SET online = true, node_id = 'local' WHERE id = $1", [who.id]);
    await db.close();
    const second = await startTestServer({ store });
    const row = async () => (await second.skyport.db.query<{ online: boolean; node_id: string | null }>('SELECT online, node_id FROM devices WHERE id = $1', [who.id]))[0];
    try {
      assert.equal(await online(second.url), false);
      // Still naming the node: the reconnect changes no indexed column, and is written in place.
      assert.deepEqual(await row(), { online: false, node_id: 'local' });
      const back = await fakeDevice(second.mqttUrl, who, {});
      await eventually(async () => ((await online(second.url)) === true ? true : undefined), 5000, 'online once it reconnected');
      assert.deepEqual(await row(), { online: true, node_id: 'local' });
      await back.close();
    } finally {
      await second.close();
    }
  } finally {
    await store.drop();
    rmSync(dir, { recursive: true, force: true });
  }
});

const run = (args: string[], env: Record<string, string>) => spawnSkyport(args, { LOG_LEVEL: 'silent', ...env });

// The server process tests run on the embedded store (the one `npm start` uses).
const processTest = STORE === 'embedded' ? test : test.skip;

processTest('the server process: user create with sign-up closed, migrate, start, SIGTERM exits cleanly, bad settings and taken ports say which setting', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'skyport-proc-'));
  try {
    const username = email('admin');
    const create = run(['user', 'create', '--username', username, '--data-dir', dir], { SKYPORT_PASSWORD: 'bootstrap pass', SIGNUP: 'off' });
    assert.equal(await create.exit, 0, create.err());
    assert.match(create.out(), /created user/);
    // `server migrate` on the store user create made: nothing left to apply, and it says where it is.
    const newest = loadMigrations().at(-1);
    assert.ok(newest);
    const migrate = run(['server', 'migrate', '--data-dir', dir], {});
    assert.equal(await migrate.exit, 0, migrate.err());
    assert.equal(migrate.out(), `storage is at schema version ${newest.version} (${newest.name})\n`);

    const port = await freePort();
    const mqttPort = await freePort();
    const server = run(['server', 'start', '--port', String(port), '--mqtt-port', String(mqttPort), '--host', '127.0.0.1', '--data-dir', dir], { SIGNUP: 'off', SHUTDOWN_GRACE_SECONDS: '1' });
    const url = `http://127.0.0.1:${port}`;
    // Loading the embedded store is seconds of work, and tens of them on a machine the rest of the
    // suite keeps busy (once over 30 s in CI). A process that exits instead fails at once, with what it said.
    let exited: number | null | undefined;
    void server.exit.then((code) => { exited = code; });
    await eventually(() => {
      if (exited !== undefined) throw new Error(`the server exited (${exited}) before it was running: ${server.out()}${server.err()}`);
      return server.out().includes('Skyport is running') ? true : undefined;
    }, 90_000, 'the server\'s start');
    assert.match(server.out(), new RegExp(`API +http://127.0.0.1:${port}`));
    assert.match(server.out(), new RegExp(`MQTT +mqtt://127.0.0.1:${mqttPort}`));
    assert.equal((await fetch(`${url}/healthz`)).status, 200);
    const login = await particle(url).login({ username, password: 'bootstrap pass' });
    assert.equal(login.statusCode, 200);
    const signup = await fetch(`${url}/v1/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: email(), password: 'correct horse' }) });
    assert.equal(signup.status, 403);

    const taken = run(['server', 'start', '--port', String(port), '--mqtt-port', '0', '--host', '127.0.0.1', '--data-dir', join(dir, 'other')], {});
    assert.equal(await taken.exit, 1);
    assert.match(taken.err(), /port \d+ is already in use; set PORT/);
    assert.equal(taken.err().trimEnd().split('\n').length, 1, `one line: ${taken.err()}`);
    const mqttTaken = run(['server', 'start', '--port', '0', '--mqtt-port', String(mqttPort), '--host', '127.0.0.1', '--data-dir', join(dir, 'other')], {});
    assert.equal(await mqttTaken.exit, 1);
    assert.match(mqttTaken.err(), /port \d+ is already in use; set MQTT_PORT/);
    assert.equal(mqttTaken.err().trimEnd().split('\n').length, 1, `one line: ${mqttTaken.err()}`);
    // Said before the store is opened: no data directory was made for a start that cannot listen.
    assert.equal(existsSync(join(dir, 'other')), false);

    // A device call that never ends uses the whole grace: the shutdown's last steps still have
    // their time after it, and the process exits 0 with the caller answered.
    const product = await newProduct(url, login.body.access_token);
    const who = await provision(url, login.body.access_token, product.id);
    let called = false;
    const device = await fakeDevice(`mqtt://127.0.0.1:${mqttPort}`, who, { functions: { stuck: () => { called = true; return 'hang'; } } });
    const call = raw(`${url}/v1/devices/${who.id}/stuck`, { method: 'POST', token: login.body.access_token, json: { arg: 'x' } });
    await eventually(() => (called ? true : undefined), 10_000, 'the call reaching the device');
    server.child.kill('SIGTERM');
    assert.equal(await server.exit, 0, server.err());
    const answered = await call;
    assert.ok(answered.status >= 400 && answered.status < 600 && typeof answered.json.error === 'string', `${answered.status} ${answered.text}`);
    await device.close();

    const bad = run(['server', 'start'], { PORT: 'abc', DATA_DIR: dir });
    assert.equal(await bad.exit, 1);
    assert.match(bad.err(), /PORT must be a whole number/);
    assert.equal(bad.err().trimEnd().split('\n').length, 1, `one line: ${bad.err()}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('`skyport user create` writes to the store of the run (DATA_DIR or DATABASE_URL), whatever SIGNUP says', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'skyport-create-'));
  const store = await freshStore({ dataDir: dir });
  try {
    const username = email('operator');
    // The store exists, as the test server's does on either store (made from the run's template).
    await (await store.open()).close();
    // The spawned CLI finds the store through the same settings the test server uses.
    const storeEnv = { DATABASE_URL: '', ...store.settings, SIGNUP: 'off' } as Record<string, string>;
    const create = run(['user', 'create', '--username', username], { ...storeEnv, SKYPORT_PASSWORD: 'operator pass' });
    assert.equal(await create.exit, 0, create.err());
    assert.equal(create.out(), `created user ${username}\n`);
    const again = run(['user', 'create', '--username', username.toUpperCase()], { ...storeEnv, SKYPORT_PASSWORD: 'other pass word' });
    assert.equal(await again.exit, 1);
    assert.match(again.err(), /^skyport: .*already taken\n$/);

    const server = await startTestServer({ store, env: { SIGNUP: 'off' } });
    try {
      const api = particle(server.url);
      const login = await api.login({ username, password: 'operator pass' });
      assert.equal(login.statusCode, 200);
      assert.equal((await api.getUserInfo({ auth: login.body.access_token })).body.username, username);
      const signup = await raw(`${server.url}/v1/users`, { method: 'POST', json: { username: email(), password: 'correct horse' } });
      assert.deepEqual([signup.status, signup.json.error], [403, 'signup_closed']);
      const events = await raw(`${server.url}/v1/user/security_events`, { token: login.body.access_token });
      assert.deepEqual(events.json.events.map((e: { type: string }) => e.type).reverse(), ['user.signup', 'user.login', 'token.created']);
      assert.equal(events.json.events.at(-1).ip, null, 'an account made on the command line has no address');
    } finally {
      await server.close();
    }
  } finally {
    await store.drop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the security audit log lists what happened to the account, newest first, and never a secret', async () => {
  const clock = manualClock(new Date());
  const server = await startTestServer({ clock });
  try {
    const api = particle(server.url);
    const username = email('audited');
    const password = 'correct horse';
    const newPassword = 'a better passphrase';
    const secrets: string[] = [password, newPassword];
    await api.createUser({ username, password });
    const token = (await api.login({ username, password })).body.access_token as string;
    secrets.push(token);
    const wrong = await raw(`${server.url}/oauth/token`, { method: 'POST', form: { grant_type: 'password', username, password: 'wrong horse 42', client_id: 'particle-api', client_secret: 'particle-api' } });
    assert.equal(wrong.status, 400);
    secrets.push('wrong horse 42');

    const client = (await api.createOAuthClient({ name: 'audited', auth: token })).body.client;
    secrets.push(client.secret);
    const cc = (await particle(server.url, { clientId: client.id, clientSecret: client.secret }).loginAsClientOwner()).body.access_token as string;
    secrets.push(cc);

    const enrol = (await api.enableMfa({ auth: token })).body;
    secrets.push(enrol.secret, enrol.mfa_token);
    const confirmed = (await api.confirmMfa({ mfaToken: enrol.mfa_token, otp: totpNow(enrol.secret, clock.now()), auth: token })).body;
    secrets.push(...confirmed.recovery_codes);
    clock.advance(30_000);
    const challenge = await api.login({ username, password }).catch((e: { body: { mfa_token: string } }) => e);
    secrets.push(challenge.body.mfa_token);
    await api.sendOtp({ mfaToken: challenge.body.mfa_token, otp: '000000' }).catch(() => undefined);
    const viaOtp = (await api.sendOtp({ mfaToken: challenge.body.mfa_token, otp: totpNow(enrol.secret, clock.now()) })).body.access_token as string;
    secrets.push(viaOtp);
    const second = await api.login({ username, password }).catch((e: { body: { mfa_token: string } }) => e);
    secrets.push(second.body.mfa_token);
    const viaCode = await raw(`${server.url}/oauth/token`, { method: 'POST', form: { grant_type: 'urn:custom:recovery-code', mfa_token: second.body.mfa_token, recovery_code: confirmed.recovery_codes[0], client_id: 'particle-api', client_secret: 'particle-api' } });
    assert.equal(viaCode.status, 200, viaCode.text);
    secrets.push(viaCode.json.access_token);
    await api.disableMfa({ currentPassword: password, auth: token });
    await api.deleteCurrentAccessToken({ auth: viaOtp });
    await api.changeUserPassword({ currentPassword: password, password: newPassword, auth: token });
    // The password change revoked the client's first token; this one goes with the client.
    secrets.push((await particle(server.url, { clientId: client.id, clientSecret: client.secret }).loginAsClientOwner()).body.access_token);
    await api.deleteOAuthClient({ clientId: client.id, auth: token });

    const log = await raw(`${server.url}/v1/user/security_events?per_page=100`, { token });
    assert.equal(log.status, 200);
    const types = log.json.events.map((e: { type: string }) => e.type);
    assert.deepEqual([...types].reverse(), [
      'user.signup',
      'user.login', 'token.created',
      'user.login_failed',
      'client.created',
      'token.created',
      'mfa.enabled',
      'mfa.otp_failed',
      'user.login', 'token.created',
      'mfa.recovery_code_used', 'user.login', 'token.created',
      'mfa.disabled',
      'token.revoked',
      'user.password_changed', 'tokens.revoked',
      'token.created',
      'client.deleted',
    ]);
    for (const e of log.json.events) {
      assert.equal(e.ip, '127.0.0.1');
      assert.ok(!Number.isNaN(Date.parse(e.at)), e.at);
    }
    const created = log.json.events.filter((e: { type: string }) => e.type === 'token.created').map((e: { details: { grant: string } }) => e.details.grant).reverse();
    assert.deepEqual(created, ['password', 'client_credentials', 'mfa-otp', 'recovery-code', 'client_credentials']);
    assert.deepEqual(log.json.events.find((e: { type: string }) => e.type === 'client.deleted').details, { client_id: client.id, tokens_revoked: 1 });
    for (const s of secrets) assert.ok(!log.text.includes(s), `the log contains a secret: ${s.slice(0, 6)}…`);
    assert.deepEqual(log.json.meta, { page: 1, per_page: 100, total: types.length, total_pages: 1 });

    const page2 = await raw(`${server.url}/v1/user/security_events?per_page=5&page=2`, { token });
    assert.deepEqual(page2.json.events.map((e: { type: string }) => e.type), types.slice(5, 10));
    assert.deepEqual(page2.json.meta, { page: 2, per_page: 5, total: types.length, total_pages: Math.ceil(types.length / 5) });

    // Another account sees only its own events.
    const other = email('other');
    await api.createUser({ username: other, password });
    const otherToken = (await api.login({ username: other, password })).body.access_token;
    const theirs = await raw(`${server.url}/v1/user/security_events`, { token: otherToken });
    assert.deepEqual(theirs.json.events.map((e: { type: string }) => e.type).reverse(), ['user.signup', 'user.login', 'token.created']);
  } finally {
    await server.close();
  }
});
