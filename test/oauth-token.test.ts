import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, email, manualClock, type TestServer } from './helpers/server.js';
import { particle } from './helpers/particle.js';
import { basic, raw } from './helpers/http.js';
import { totpNow } from '../src/domain/totp.js';

const clock = manualClock(new Date());
let server: TestServer;
before(async () => { server = await startTestServer({ clock }); });
after(async () => { await server.close(); });

async function signUp(username = email()) {
  await particle(server.url).createUser({ username, password: 'correct horse' });
  return username;
}

const token = (form: Record<string, string>, headers: Record<string, string> = {}) =>
  raw(`${server.url}/oauth/token`, { method: 'POST', form, headers });

test('password grant: default, custom and never-expiring lifetimes; expiry is enforced', async () => {
  const username = await signUp();
  const api = particle(server.url, { tokenDuration: 3600 });
  const login = await api.login({ username, password: 'correct horse' });
  assert.equal(login.body.expires_in, 3600);
  assert.equal(login.body.refresh_token, undefined, 'user tokens get no refresh token');
  const current = await raw(`${server.url}/v1/access_tokens/current`, { token: login.body.access_token });
  assert.equal(current.json.client, 'particle-api');
  assert.equal(Date.parse(current.json.expires_at), clock.now().getTime() + 3600_000);

  const forever = await token({ grant_type: 'password', username, password: 'correct horse', client_id: 'particle-cli', client_secret: 'particle-cli', expires_in: '0' });
  assert.equal(forever.status, 200);
  assert.equal(forever.json.expires_in, 0);
  assert.equal((await raw(`${server.url}/v1/access_tokens/current`, { token: forever.json.access_token })).json.expires_at, null);

  const at = new Date(clock.now().getTime() + 120_000).toISOString();
  const until = await token({ grant_type: 'password', username, password: 'correct horse', client_id: 'particle', client_secret: 'particle', expires_at: at });
  assert.equal(until.json.expires_in, 120);

  clock.advance(3601_000);
  const expired = await raw(`${server.url}/v1/user`, { token: login.body.access_token });
  assert.equal(expired.status, 401);
  assert.equal(expired.json.error, 'invalid_token');
  assert.match(expired.json.error_description, /expired/);
  assert.equal((await raw(`${server.url}/v1/user`, { token: forever.json.access_token })).status, 200);
});

test('wrong password, Basic credentials, ignored Bearer header', async () => {
  const username = await signUp();
  const wrong = await token({ grant_type: 'password', username, password: 'wrong horse', client_id: 'particle-api', client_secret: 'particle-api' });
  assert.equal(wrong.status, 400);
  assert.deepEqual([wrong.json.error, wrong.json.error_description], ['invalid_grant', 'User credentials are invalid']);
  const viaBasic = await token({ grant_type: 'password', username, password: 'correct horse' }, { authorization: basic('particle', 'particle') });
  assert.equal(viaBasic.status, 200);
  assert.equal(viaBasic.headers.get('cache-control'), 'no-store');
  // Older particle-cli always sends a Bearer header, even "null".
  const withBearer = await token({ grant_type: 'password', username, password: 'correct horse', client_id: 'CLI2', client_secret: 'client_secret_here' }, { authorization: 'Bearer null' });
  assert.equal(withBearer.status, 200);
});

test('MFA: enrol with particle-api-js, log in with the OTP step, replay refused, recovery code once, disable', async () => {
  const username = await signUp();
  const api = particle(server.url, { tokenDuration: 600 });
  const first = (await api.login({ username, password: 'correct horse' })).body.access_token;
  const enrol = await api.enableMfa({ auth: first });
  const secret = enrol.body.secret as string;
  const confirmed = await api.confirmMfa({ mfaToken: enrol.body.mfa_token, otp: totpNow(secret, clock.now()), auth: first });
  assert.equal(confirmed.body.enrolled, true);
  assert.equal(confirmed.body.recovery_codes.length, 10);
  assert.equal((await api.getUserInfo({ auth: first })).body.mfa.enabled, true, 'existing tokens keep working');

  clock.advance(30_000);
  const challenge = await api.login({ username, password: 'correct horse' }).then(() => assert.fail('expected mfa_required'), (e: { statusCode: number; body: { error: string; mfa_token: string } }) => e);
  assert.equal(challenge.statusCode, 403);
  assert.equal(challenge.body.error, 'mfa_required');
  const bad = await api.sendOtp({ mfaToken: challenge.body.mfa_token, otp: '000000' }).catch((e: { statusCode: number; body: { error: string } }) => e);
  assert.equal(bad.statusCode, 400);
  assert.equal(bad.body.error, 'invalid_grant');
  const otp = totpNow(secret, clock.now());
  const done = await api.sendOtp({ mfaToken: challenge.body.mfa_token, otp });
  assert.equal(done.body.expires_in, 600, 'the lifetime of the original login request');

  // The same code cannot log in twice.
  const again = await api.login({ username, password: 'correct horse' }).catch((e: { body: { mfa_token: string } }) => e);
  const replay = await api.sendOtp({ mfaToken: again.body.mfa_token, otp }).catch((e: { statusCode: number }) => e);
  assert.equal(replay.statusCode, 400);

  // A recovery code works once.
  const code = confirmed.body.recovery_codes[0] as string;
  const viaCode = await token({ grant_type: 'urn:custom:recovery-code', mfa_token: again.body.mfa_token, recovery_code: code, client_id: 'particle-api', client_secret: 'particle-api' });
  assert.equal(viaCode.status, 200, viaCode.text);
  const third = await api.login({ username, password: 'correct horse' }).catch((e: { body: { mfa_token: string } }) => e);
  const reused = await token({ grant_type: 'urn:custom:recovery-code', mfa_token: third.body.mfa_token, recovery_code: code, client_id: 'particle-api', client_secret: 'particle-api' });
  assert.equal(reused.status, 400);
  // The mfa_token belongs to the client that started the login.
  clock.advance(30_000);
  const otherClient = await token({ grant_type: 'urn:custom:mfa-otp', mfa_token: third.body.mfa_token, otp: totpNow(secret, clock.now()), client_id: 'particle-cli', client_secret: 'particle-cli' });
  assert.equal(otherClient.status, 400);

  const wrongPw = await raw(`${server.url}/v1/user/mfa-disable`, { method: 'PUT', token: first, json: { current_password: 'nope nope' } });
  assert.equal(wrongPw.status, 403);
  await api.disableMfa({ currentPassword: 'correct horse', auth: first });
  assert.equal((await api.login({ username, password: 'correct horse' })).statusCode, 200);
});

test('client_credentials: a user client acts for its owner; public clients and unknown scopes are refused; customers:create tokens do nothing else', async () => {
  const username = await signUp();
  const api = particle(server.url);
  const userToken = (await api.login({ username, password: 'correct horse' })).body.access_token;
  const client = (await api.createOAuthClient({ name: 'Back end', auth: userToken })).body.client;
  const backend = particle(server.url, { clientId: client.id, clientSecret: client.secret });
  const cc = await backend.loginAsClientOwner();
  assert.equal(cc.body.refresh_token, undefined);
  assert.equal((await api.getUserInfo({ auth: cc.body.access_token })).body.username, username);

  const pub = await token({ grant_type: 'client_credentials', client_id: 'particle-api', client_secret: 'particle-api' });
  assert.deepEqual([pub.status, pub.json.error], [400, 'invalid_grant']);
  const bogus = await token({ grant_type: 'client_credentials', scope: 'admin:all', client_id: client.id, client_secret: client.secret });
  assert.deepEqual([bogus.status, bogus.json.error], [400, 'invalid_scope']);
  const badSecret = await token({ grant_type: 'client_credentials', client_id: client.id, client_secret: 'x'.repeat(40) });
  assert.deepEqual([badSecret.status, badSecret.json.error], [400, 'invalid_client']);

  const narrow = await token({ grant_type: 'client_credentials', scope: 'customers:create', client_id: client.id, client_secret: client.secret });
  assert.equal(narrow.json.scope, 'customers:create');
  const denied = await raw(`${server.url}/v1/user`, { token: narrow.json.access_token });
  assert.deepEqual([denied.status, denied.json.error], [403, 'insufficient_scope']);

  // A user's client logs in only its owner with the password grant.
  const stranger = await signUp();
  const foreign = await token({ grant_type: 'password', username: stranger, password: 'correct horse', client_id: client.id, client_secret: client.secret });
  assert.deepEqual([foreign.status, foreign.json.error], [400, 'unauthorized_client']);
});

test('introspection (RFC 7662) and revocation (RFC 7009) for trusted back-ends', async () => {
  const api = particle(server.url);
  const alice = await signUp();
  const bob = await signUp();
  const aliceToken = (await api.login({ username: alice, password: 'correct horse' })).body.access_token;
  const bobToken = (await api.login({ username: bob, password: 'correct horse' })).body.access_token;
  const aliceClient = (await api.createOAuthClient({ name: 'alice back end', auth: aliceToken })).body.client;
  const bobClient = (await api.createOAuthClient({ name: 'bob back end', auth: bobToken })).body.client;
  const asAlice = { authorization: basic(aliceClient.id, aliceClient.secret) };
  const introspect = (t: string, headers: Record<string, string>) => raw(`${server.url}/oauth/introspect`, { method: 'POST', form: { token: t }, headers });

  const seen = await introspect(aliceToken, asAlice);
  assert.equal(seen.json.active, true);
  assert.equal(seen.json.client_id, 'particle-api');
  assert.equal(typeof seen.json.exp, 'number');
  assert.deepEqual((await introspect(aliceToken, { authorization: basic(bobClient.id, bobClient.secret) })).json, { active: false });
  assert.deepEqual((await introspect('f'.repeat(40), asAlice)).json, { active: false });
  const publicClient = await introspect(aliceToken, { authorization: basic('particle-api', 'particle-api') });
  assert.equal(publicClient.status, 400);

  const unknown = await raw(`${server.url}/oauth/revoke`, { method: 'POST', form: { token: 'f'.repeat(40) }, headers: asAlice });
  assert.equal(unknown.status, 200);
  const foreign = await raw(`${server.url}/oauth/revoke`, { method: 'POST', form: { token: bobToken }, headers: asAlice });
  assert.equal(foreign.status, 200);
  assert.equal((await raw(`${server.url}/v1/user`, { token: bobToken })).status, 200, "another owner's token is left alone");
  await raw(`${server.url}/oauth/revoke`, { method: 'POST', form: { token: aliceToken }, headers: asAlice });
  assert.equal((await raw(`${server.url}/v1/user`, { token: aliceToken })).status, 401);
  assert.deepEqual((await introspect(aliceToken, asAlice)).json, { active: false });
});

test('refresh tokens of product clients: rotated, single use, bound to their client, expiring', async () => {
  const api = particle(server.url);
  const username = await signUp();
  const userToken = (await api.login({ username, password: 'correct horse' })).body.access_token;
  const product = (await raw(`${server.url}/v1/user/products`, { method: 'POST', token: userToken, json: { product: { name: 'Refreshers', platform_id: 13 } } })).json.product;
  const c1 = (await api.createOAuthClient({ name: 'one', product: product.id, auth: userToken })).body.client;
  const c2 = (await api.createOAuthClient({ name: 'two', product: product.id, auth: userToken })).body.client;
  const first = await token({ grant_type: 'client_credentials', expires_in: '60', client_id: c1.id, client_secret: c1.secret });
  const refresh = (rt: string, c: { id: string; secret: string }) => token({ grant_type: 'refresh_token', refresh_token: rt, client_id: c.id, client_secret: c.secret });

  const other = await refresh(first.json.refresh_token, c2);
  assert.deepEqual([other.status, other.json.error_description], [400, 'Invalid refresh token']);
  const second = await refresh(first.json.refresh_token, c1);
  assert.equal(second.status, 200, 'a refresh token another client tried is still good for its own');
  assert.equal(second.json.expires_in, 60);
  assert.equal((await refresh(first.json.refresh_token, c1)).status, 400, 'single use');

  const never = await token({ grant_type: 'client_credentials', expires_in: '0', client_id: c1.id, client_secret: c1.secret });
  assert.equal(never.json.refresh_token, undefined, 'no refresh token for a token that never expires');

  clock.advance((60 + 14 * 86400 + 1) * 1000);
  const late = await refresh(second.json.refresh_token, c1);
  assert.deepEqual([late.status, late.json.error_description], [400, 'Refresh token has expired']);
});
