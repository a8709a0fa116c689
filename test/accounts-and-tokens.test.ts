import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, email, manualClock, type TestServer } from './helpers/server.js';
import { particle } from './helpers/particle.js';
import { raw } from './helpers/http.js';

const clock = manualClock(new Date());
let server: TestServer;
before(async () => { server = await startTestServer({ clock, env: { LOGIN_MAX_FAILURES: '3', LOGIN_LOCKOUT_SECONDS: '60' } }); });
after(async () => { await server.close(); });

async function account() {
  const api = particle(server.url);
  const username = email();
  await api.createUser({ username, password: 'correct horse' });
  const token = (await api.login({ username, password: 'correct horse' })).body.access_token as string;
  return { api, username, token };
}

test('the token may come from the header, the query or the body, but only one of them', async () => {
  const { token } = await account();
  assert.equal((await raw(`${server.url}/v1/user`, { token })).status, 200);
  assert.equal((await raw(`${server.url}/v1/user?access_token=${token}`)).status, 200);
  assert.equal((await raw(`${server.url}/v1/user`, { method: 'PUT', form: { access_token: token, 'account_info[first_name]': 'x' } })).status !== 401, true);
  const viaBody = await raw(`${server.url}/v1/user/mfa-disable`, { method: 'PUT', json: { access_token: token, current_password: 'correct horse' } });
  assert.equal(viaBody.status, 409, 'authenticated through the body; MFA is simply not on');
  const twice = await raw(`${server.url}/v1/user?access_token=${token}`, { token });
  assert.deepEqual([twice.status, twice.json.error], [400, 'invalid_request']);
  const none = await raw(`${server.url}/v1/user`);
  assert.deepEqual([none.status, none.json.error_description], [400, 'The access token was not found']);
  const bad = await raw(`${server.url}/v1/user`, { token: 'nope' });
  assert.equal(bad.status, 401);
  assert.match(bad.headers.get('www-authenticate') ?? '', /invalid_token/);
});

test('log out, revoke all, revoke by path with particle-api-js', async () => {
  const { api, username, token } = await account();
  const second = (await api.login({ username, password: 'correct horse' })).body.access_token;
  const third = (await api.login({ username, password: 'correct horse' })).body.access_token;
  assert.deepEqual((await api.deleteCurrentAccessToken({ auth: token })).body, { ok: true });
  assert.equal((await raw(`${server.url}/v1/user`, { token })).status, 401);
  assert.deepEqual((await api.deleteAccessToken({ token: second })).body, { ok: true });
  assert.equal((await raw(`${server.url}/v1/user`, { token: second })).status, 401);
  assert.equal((await raw(`${server.url}/v1/access_tokens/${second}`, { method: 'DELETE' })).status, 401, 'an unknown token in the path');
  const fourth = (await api.login({ username, password: 'correct horse' })).body.access_token;
  assert.equal((await raw(`${server.url}/v1/access_tokens`, { method: 'DELETE', token: third })).status, 200);
  assert.equal((await raw(`${server.url}/v1/user`, { token: third })).status, 401);
  assert.equal((await raw(`${server.url}/v1/user`, { token: fourth })).status, 401);
});

test('profile, username and password changes; a new password revokes the other tokens', async () => {
  const { api, username, token } = await account();
  const other = (await api.login({ username, password: 'correct horse' })).body.access_token;
  await api.setUserInfo({ accountInfo: { first_name: 'Ada', business_account: false }, auth: token });
  assert.deepEqual((await api.getUserInfo({ auth: token })).body.account_info, { first_name: 'Ada', business_account: false });
  const wrong = await raw(`${server.url}/v1/user`, { method: 'PUT', token, json: { password: 'a brand new one', current_password: 'wrong horse' } });
  assert.equal(wrong.status, 403);
  await api.changeUserPassword({ currentPassword: 'correct horse', password: 'a brand new one', auth: token });
  assert.equal((await raw(`${server.url}/v1/user`, { token })).status, 200, "the caller's token stays");
  assert.equal((await raw(`${server.url}/v1/user`, { token: other })).status, 401, 'other tokens are revoked');
  const renamed = email('renamed');
  await api.changeUsername({ currentPassword: 'a brand new one', username: renamed, auth: token });
  assert.equal((await api.getUserInfo({ auth: token })).body.username, renamed);
  assert.equal((await api.login({ username: renamed, password: 'a brand new one' })).statusCode, 200);
});

test('sign-up rules; account deletion needs the password and removes everything', async () => {
  const api = particle(server.url);
  const username = email();
  await api.createUser({ username, password: 'correct horse' });
  const dup = await raw(`${server.url}/v1/users`, { method: 'POST', json: { username: username.toUpperCase(), password: 'correct horse' } });
  assert.deepEqual([dup.status, dup.json.error], [409, 'username_taken']);
  const short = await raw(`${server.url}/v1/users`, { method: 'POST', json: { username: email(), password: 'short' } });
  assert.equal(short.status, 400);
  const token = (await api.login({ username, password: 'correct horse' })).body.access_token;
  const client = (await api.createOAuthClient({ name: 'gone soon', auth: token })).body.client;
  const noPw = await raw(`${server.url}/v1/user`, { method: 'DELETE', token, json: {} });
  assert.equal(noPw.status, 400);
  assert.deepEqual((await api.deleteUser({ password: 'correct horse', auth: token })).body, { ok: true });
  assert.equal((await raw(`${server.url}/v1/user`, { token })).status, 401);
  const login = await raw(`${server.url}/oauth/token`, { method: 'POST', form: { grant_type: 'client_credentials', client_id: client.id, client_secret: client.secret } });
  assert.equal(login.status, 400, 'the account\'s clients are gone');
});

test('lock-out after repeated failures, even for the right password, until it passes', async () => {
  const { username } = await account();
  const attempt = (password: string) => raw(`${server.url}/oauth/token`, { method: 'POST', form: { grant_type: 'password', username, password, client_id: 'particle-api', client_secret: 'particle-api' } });
  for (let i = 0; i < 2; i++) assert.equal((await attempt('wrong horse')).status, 400);
  assert.equal((await attempt('wrong horse')).status, 429, 'the failure that reaches the limit already says so');
  const locked = await attempt('correct horse');
  assert.deepEqual([locked.status, locked.json.error], [429, 'rate_limit_exceeded']);
  assert.ok(Number(locked.headers.get('retry-after')) > 0);
  clock.advance(61_000);
  assert.equal((await attempt('correct horse')).status, 200);
});

test('the security audit log records events without secrets', async () => {
  const { api, username, token } = await account();
  await raw(`${server.url}/oauth/token`, { method: 'POST', form: { grant_type: 'password', username, password: 'wrong horse', client_id: 'particle-api', client_secret: 'particle-api' } });
  const client = (await api.createOAuthClient({ name: 'audited', auth: token })).body.client;
  await api.deleteOAuthClient({ clientId: client.id, auth: token });
  const log = await raw(`${server.url}/v1/user/security_events?per_page=50`, { token });
  assert.equal(log.status, 200);
  const types = log.json.events.map((e: { type: string }) => e.type);
  for (const t of ['user.signup', 'user.login', 'token.created', 'user.login_failed', 'client.created', 'client.deleted']) assert.ok(types.includes(t), `${t} in ${types}`);
  assert.ok(!log.text.includes(token) && !log.text.includes(client.secret) && !log.text.includes('correct horse'));
});

test('OAuth clients through particle-api-js: create, list without secrets, update, delete revokes their tokens; others see 404', async () => {
  const { api, token } = await account();
  const stranger = await account();
  const web = await raw(`${server.url}/v1/clients`, { method: 'POST', token, json: { name: 'web', type: 'web' } });
  assert.equal(web.status, 400, 'a web client needs a redirect_uri');
  const c = (await api.createOAuthClient({ name: 'My App ✓', type: 'installed', scope: 'customers:create', auth: token })).body.client;
  assert.equal(c.scope, 'customers:create');
  assert.equal(c.name, 'My App ✓');
  const listed = (await api.listOAuthClients({ auth: token })).body.clients;
  assert.deepEqual(listed.map((x: { id: string; secret?: string }) => [x.id, x.secret]), [[c.id, undefined]]);
  const updated = await api.updateOAuthClient({ clientId: c.id, name: 'Renamed', scope: null, auth: token });
  assert.deepEqual([updated.body.client.name, updated.body.client.scope], ['Renamed', null]);
  assert.equal((await raw(`${server.url}/v1/clients/${c.id}`, { method: 'PUT', token: stranger.token, json: { name: 'x' } })).status, 404);
  assert.equal((await raw(`${server.url}/v1/clients/${c.id}`, { method: 'DELETE', token: stranger.token })).status, 404);
  const cc = await raw(`${server.url}/oauth/token`, { method: 'POST', form: { grant_type: 'client_credentials', client_id: c.id, client_secret: c.secret } });
  assert.equal(cc.status, 200);
  const del = await api.deleteOAuthClient({ clientId: c.id, auth: token });
  assert.equal(del.statusCode, 204);
  assert.equal((await raw(`${server.url}/v1/user`, { token: cc.json.access_token })).status, 401);
});
