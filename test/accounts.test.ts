import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, email, type TestServer } from './helpers/server.js';
import { particle } from './helpers/particle.js';
import { raw } from './helpers/http.js';
import { PASSWORD, rejection, signUp } from './helpers/fixtures.js';

// Accounts end to end: sign-up, the profile, PUT /v1/user, deletion, closed sign-up (docs/particle-compatibility.md#user-accounts).

let server: TestServer;
before(async () => { server = await startTestServer(); });
after(async () => { await server.close(); });

const account = (password = PASSWORD) => signUp(server.url, { password });

const login = (username: string, password: string) => raw(`${server.url}/oauth/token`, {
  method: 'POST',
  form: { grant_type: 'password', username, password, client_id: 'particle-api', client_secret: 'particle-api' },
});

const me = (token: string) => raw(`${server.url}/v1/user`, { token });

test('createUser signs up; getUserInfo answers the whole profile', async () => {
  const api = particle(server.url);
  const username = email('signup');
  const created = await api.createUser({ username, password: PASSWORD, accountInfo: { first_name: 'Ada', last_name: 'Lovelace', business_account: false }, utm: { utm_source: 'test' } });
  assert.equal(created.statusCode, 201);
  assert.deepEqual(created.body, { ok: true });

  const token = (await api.login({ username, password: PASSWORD })).body.access_token;
  const info = await api.getUserInfo({ auth: token });
  assert.equal(info.statusCode, 200);
  const { created_at: createdAt, ...rest } = info.body;
  assert.deepEqual(rest, {
    username,
    subscription_ids: [],
    account_info: { first_name: 'Ada', last_name: 'Lovelace', business_account: false },
    scim_provisioned: false,
    no_password: false,
    mfa: { enabled: false },
    tos: null,
    memberships: [],
    wifi_device_count: 0,
    cellular_device_count: 0,
  });
  assert.ok(Math.abs(Date.parse(createdAt) - Date.now()) < 60_000, `created_at ${createdAt} is now`);

  // Form-encoded sign-up (particle-cli 3.43.1) works too.
  const viaForm = await raw(`${server.url}/v1/users`, { method: 'POST', form: { username: email('form'), password: PASSWORD } });
  assert.deepEqual([viaForm.status, viaForm.json], [201, { ok: true }]);
});

test('sign-up refuses a bad e-mail and a short password with 400', async () => {
  const api = particle(server.url);
  const badEmail = await rejection(api.createUser({ username: 'not-an-email', password: PASSWORD }));
  assert.deepEqual([badEmail.statusCode, badEmail.body.error], [400, 'invalid_request']);
  const short = await rejection(api.createUser({ username: email(), password: 'short' }));
  assert.deepEqual([short.statusCode, short.body.error], [400, 'invalid_request']);
  assert.match(String(short.body.error_description), /at least 8 characters/);
});

test('a username taken in another letter case is 409 username_taken', async () => {
  const api = particle(server.url);
  const username = email('dup');
  await api.createUser({ username, password: PASSWORD });
  const dup = await rejection(api.createUser({ username: username.toUpperCase(), password: 'another password' }));
  assert.equal(dup.statusCode, 409);
  assert.equal(dup.body.error, 'username_taken');
  assert.deepEqual(dup.body.errors, ['username already taken']);
  assert.equal(dup.body.ok, false);
  // The login is case-insensitive too, and the original password is still the one.
  assert.equal((await login(username.toUpperCase(), PASSWORD)).status, 200);
  assert.equal((await login(username, 'another password')).status, 400);
});

test('PUT /v1/user sets account_info with setUserInfo', async () => {
  const { api, token } = await account();
  const set = await api.setUserInfo({ accountInfo: { first_name: 'Grace', company_name: 'Navy', business_account: true }, auth: token });
  assert.deepEqual([set.statusCode, set.body], [200, { ok: true }]);
  assert.deepEqual((await api.getUserInfo({ auth: token })).body.account_info, { first_name: 'Grace', company_name: 'Navy', business_account: true });
  const bad = await raw(`${server.url}/v1/user`, { method: 'PUT', token, json: { account_info: { first_name: 42 } } });
  assert.deepEqual([bad.status, bad.json.error], [400, 'invalid_request']);
  const nothing = await raw(`${server.url}/v1/user`, { method: 'PUT', token, json: {} });
  assert.deepEqual([nothing.status, nothing.json.error], [400, 'invalid_request']);
});

test('a password change needs the current password and revokes the other tokens, not the caller\'s', async () => {
  const { api, username, token } = await account();
  const other = (await api.login({ username, password: PASSWORD })).body.access_token as string;

  const missing = await raw(`${server.url}/v1/user`, { method: 'PUT', token, json: { password: 'a brand new one' } });
  assert.deepEqual([missing.status, missing.json.error], [400, 'invalid_request']);
  const wrong = await rejection(api.changeUserPassword({ currentPassword: 'wrong horse', password: 'a brand new one', auth: token }));
  assert.deepEqual([wrong.statusCode, wrong.body.error], [403, 'forbidden']);
  assert.equal((await me(other)).status, 200, 'a refused change revokes nothing');
  assert.equal((await login(username, PASSWORD)).status, 200, 'and keeps the old password');

  const changed = await api.changeUserPassword({ currentPassword: PASSWORD, password: 'a brand new one', auth: token });
  assert.deepEqual([changed.statusCode, changed.body], [200, { ok: true }]);
  assert.equal((await me(token)).status, 200, "the caller's token still works");
  const revoked = await me(other);
  assert.deepEqual([revoked.status, revoked.json.error], [401, 'invalid_token']);
  const old = await login(username, PASSWORD);
  assert.deepEqual([old.status, old.json.error], [400, 'invalid_grant']);
  assert.equal((await login(username, 'a brand new one')).status, 200);
});

test('a username change needs the current password; the new name logs in, the old does not', async () => {
  const { api, username, token } = await account();
  const other = (await api.login({ username, password: PASSWORD })).body.access_token as string;
  const renamed = email('renamed');

  const wrong = await rejection(api.changeUsername({ currentPassword: 'wrong horse', username: renamed, auth: token }));
  assert.deepEqual([wrong.statusCode, wrong.body.error], [403, 'forbidden']);
  assert.equal((await api.getUserInfo({ auth: token })).body.username, username);

  const taken = await account();
  const clash = await rejection(api.changeUsername({ currentPassword: PASSWORD, username: taken.username.toUpperCase(), auth: token }));
  assert.deepEqual([clash.statusCode, clash.body.error], [409, 'username_taken']);

  const done = await api.changeUsername({ currentPassword: PASSWORD, username: renamed, auth: token });
  assert.deepEqual(done.body, { ok: true });
  assert.equal((await api.getUserInfo({ auth: token })).body.username, renamed);
  assert.equal((await me(other)).status, 200, 'a username change alone keeps the other tokens');
  assert.equal((await login(renamed, PASSWORD)).status, 200);
  assert.equal((await login(username, PASSWORD)).json.error, 'invalid_grant');

  // invalidate_tokens revokes the others on request.
  const again = email('renamed-again');
  await api.changeUsername({ currentPassword: PASSWORD, username: again, invalidateTokens: true, auth: token });
  assert.equal((await me(other)).status, 401);
  assert.equal((await me(token)).status, 200);
});

test('deleteUser needs the password; afterwards the tokens are 401 and the login fails', async () => {
  const { api, username, token } = await account();
  const other = (await api.login({ username, password: PASSWORD })).body.access_token as string;

  const noPassword = await raw(`${server.url}/v1/user`, { method: 'DELETE', token, json: {} });
  assert.deepEqual([noPassword.status, noPassword.json.error], [400, 'invalid_request']);
  const wrong = await rejection(api.deleteUser({ password: 'wrong horse', auth: token }));
  assert.deepEqual([wrong.statusCode, wrong.body.error], [403, 'forbidden']);
  assert.equal((await me(token)).status, 200, 'a refused deletion deletes nothing');

  const deleted = await api.deleteUser({ password: PASSWORD, auth: token });
  assert.deepEqual([deleted.statusCode, deleted.body], [200, { ok: true }]);
  for (const t of [token, other]) {
    const gone = await me(t);
    assert.deepEqual([gone.status, gone.json.error], [401, 'invalid_token']);
  }
  const again = await login(username, PASSWORD);
  assert.deepEqual([again.status, again.json.error, again.json.error_description], [400, 'invalid_grant', 'User credentials are invalid']);
  // The address is free again.
  assert.equal((await particle(server.url).createUser({ username, password: PASSWORD })).statusCode, 201);
});

test('with SIGNUP=off, POST /v1/users is 403 signup_closed', async () => {
  const closed = await startTestServer({ env: { SIGNUP: 'off' } });
  try {
    const refused = await rejection(particle(closed.url).createUser({ username: email(), password: PASSWORD }));
    assert.equal(refused.statusCode, 403);
    assert.equal(refused.body.error, 'signup_closed');
    const viaForm = await raw(`${closed.url}/v1/users`, { method: 'POST', form: { username: email(), password: PASSWORD } });
    assert.deepEqual([viaForm.status, viaForm.json.error], [403, 'signup_closed']);
  } finally {
    await closed.close();
  }
});
