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
  // Another public client may send the code (particle-cli 3.43 starts `token create` as `user`
  // and sends the code as `CLI2`); the token is the starting client's, with its lifetime.
  clock.advance(30_000);
  const otherPublic = await token({ grant_type: 'urn:custom:mfa-otp', mfa_token: third.body.mfa_token, otp: totpNow(secret, clock.now()), client_id: 'particle-cli', client_secret: 'particle-cli' });
  assert.equal(otherPublic.status, 200, otherPublic.text);
  assert.equal(otherPublic.json.expires_in, 600);
  const issued = await raw(`${server.url}/v1/access_tokens/current`, { token: otherPublic.json.access_token as string });
  assert.equal(issued.json.client, 'particle-api');
  // A registered client's login belongs to that client, and it finishes no other client's login.
  const own = (await api.createOAuthClient({ name: 'Mine', auth: first })).body.client as { id: string; secret: string };
  const ownLogin = await token({ grant_type: 'password', username, password: 'correct horse', client_id: own.id, client_secret: own.secret });
  assert.deepEqual([ownLogin.status, ownLogin.json.error], [403, 'mfa_required']);
  clock.advance(30_000);
  const viaPublic = await token({ grant_type: 'urn:custom:mfa-otp', mfa_token: ownLogin.json.mfa_token, otp: totpNow(secret, clock.now()), client_id: 'particle-cli', client_secret: 'particle-cli' });
  assert.deepEqual([viaPublic.status, viaPublic.json.error_description], [400, 'The mfa_token was issued to another client']);
  const publicLogin = await api.login({ username, password: 'correct horse' }).catch((e: { body: { mfa_token: string } }) => e);
  const viaOwn = await token({ grant_type: 'urn:custom:mfa-otp', mfa_token: publicLogin.body.mfa_token, otp: totpNow(secret, clock.now()), client_id: own.id, client_secret: own.secret });
  assert.deepEqual([viaOwn.status, viaOwn.json.error_description], [400, 'The mfa_token was issued to another client']);
  const ownDone = await token({ grant_type: 'urn:custom:mfa-otp', mfa_token: ownLogin.json.mfa_token, otp: totpNow(secret, clock.now()), client_id: own.id, client_secret: own.secret });
  assert.equal(ownDone.status, 200, ownDone.text);

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

const PASSWORD = 'correct horse';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const introspect = (t: string, headers: Record<string, string>, form: Record<string, string> = {}) =>
  raw(`${server.url}/oauth/introspect`, { method: 'POST', form: { token: t, ...form }, headers });

test('MFA: the OTP step restores a never-expiring lifetime and the scope of the password request', async () => {
  const username = await signUp();
  const api = particle(server.url);
  const first = (await api.login({ username, password: PASSWORD })).body.access_token;
  const enrol = await api.enableMfa({ auth: first });
  assert.deepEqual(Object.keys(enrol.body).sort(), ['mfa_token', 'otpauth_url', 'qr_url', 'secret']);
  assert.match(enrol.body.otpauth_url, /^otpauth:\/\/totp\//);
  const secret = enrol.body.secret as string;
  const badConfirm = await api.confirmMfa({ mfaToken: enrol.body.mfa_token, otp: '000000', auth: first }).catch((e: { statusCode: number; body: { error: string } }) => e);
  assert.deepEqual([badConfirm.statusCode, badConfirm.body.error], [400, 'invalid_grant']);
  assert.equal((await api.getUserInfo({ auth: first })).body.mfa.enabled, false, 'a wrong first code enables nothing');
  await api.confirmMfa({ mfaToken: enrol.body.mfa_token, otp: totpNow(secret, clock.now()), auth: first });
  const twice = await raw(`${server.url}/v1/user/mfa-enable`, { token: first });
  assert.deepEqual([twice.status, twice.json.error], [409, 'conflict']);

  clock.advance(30_000);
  const challenge = await token({ grant_type: 'password', username, password: PASSWORD, expires_in: '0', scope: 'customers:create', client_id: 'particle-cli', client_secret: 'particle-cli' });
  assert.equal(challenge.status, 403);
  assert.match(challenge.json.mfa_token, /^[0-9a-f]{40}$/);
  assert.deepEqual(challenge.json, { ok: false, error: 'mfa_required', error_description: 'Multi-factor authentication required', mfa_token: challenge.json.mfa_token });
  const mfaToken = challenge.json.mfa_token as string;
  const cli = { client_id: 'particle-cli', client_secret: 'particle-cli' };

  const noOtp = await token({ grant_type: 'urn:custom:mfa-otp', mfa_token: mfaToken, ...cli });
  assert.deepEqual([noOtp.status, noOtp.json.error, noOtp.json.error_description], [400, 'invalid_request', 'You must provide otp and mfa token.']);
  const noMfaToken = await token({ grant_type: 'urn:custom:mfa-otp', otp: totpNow(secret, clock.now()), ...cli });
  assert.deepEqual([noMfaToken.status, noMfaToken.json.error], [400, 'invalid_request']);
  const unknownMfaToken = await token({ grant_type: 'urn:custom:mfa-otp', mfa_token: 'f'.repeat(40), otp: totpNow(secret, clock.now()), ...cli });
  assert.deepEqual([unknownMfaToken.status, unknownMfaToken.json.error], [400, 'invalid_grant']);
  const enrolmentToken = await token({ grant_type: 'urn:custom:mfa-otp', mfa_token: enrol.body.mfa_token, otp: totpNow(secret, clock.now()), ...cli });
  assert.deepEqual([enrolmentToken.status, enrolmentToken.json.error], [400, 'invalid_grant'], 'an enrolment mfa_token is not a login one');

  const done = await token({ grant_type: 'urn:custom:mfa-otp', mfa_token: mfaToken, otp: totpNow(secret, clock.now()), ...cli });
  assert.equal(done.status, 200, done.text);
  assert.deepEqual({ ...done.json, access_token: 'x' }, { token_type: 'bearer', access_token: 'x', expires_in: 0, scope: 'customers:create' });
  const current = await raw(`${server.url}/v1/access_tokens/current`, { token: done.json.access_token });
  assert.deepEqual([current.json.expires_at, current.json.client, current.json.scopes], [null, 'particle-cli', ['customers:create']]);

  clock.advance(30_000);
  const reused = await token({ grant_type: 'urn:custom:mfa-otp', mfa_token: mfaToken, otp: totpNow(secret, clock.now()), ...cli });
  assert.deepEqual([reused.status, reused.json.error], [400, 'invalid_grant'], 'an mfa_token completes one login');
});

test('MFA: five wrong codes or five minutes end a login challenge', async () => {
  const username = await signUp();
  const api = particle(server.url);
  const first = (await api.login({ username, password: PASSWORD })).body.access_token;
  const enrol = await api.enableMfa({ auth: first });
  const secret = enrol.body.secret as string;
  await api.confirmMfa({ mfaToken: enrol.body.mfa_token, otp: totpNow(secret, clock.now()), auth: first });
  clock.advance(30_000);

  const challenge = await api.login({ username, password: PASSWORD }).catch((e: { body: { mfa_token: string } }) => e);
  const wrongs: Array<{ status: number; desc: string }> = [];
  for (let i = 0; i < 5; i++) {
    const r = await api.sendOtp({ mfaToken: challenge.body.mfa_token, otp: '000000' }).catch((e: { statusCode: number; body: { error: string; error_description: string } }) => e);
    assert.equal(r.body.error, 'invalid_grant');
    wrongs.push({ status: r.statusCode, desc: r.body.error_description });
  }
  assert.deepEqual(wrongs.map((w) => w.status), [400, 400, 400, 400, 400]);
  assert.equal(wrongs[0]?.desc, 'The one-time password is invalid');
  assert.equal(wrongs[4]?.desc, 'Too many wrong codes; log in again');
  const late = await api.sendOtp({ mfaToken: challenge.body.mfa_token, otp: totpNow(secret, clock.now()) }).catch((e: { statusCode: number }) => e);
  assert.equal(late.statusCode, 400, 'the right code no longer helps');

  const slow = await api.login({ username, password: PASSWORD }).catch((e: { body: { mfa_token: string } }) => e);
  clock.advance(301_000);
  const expired = await api.sendOtp({ mfaToken: slow.body.mfa_token, otp: totpNow(secret, clock.now()) }).catch((e: { statusCode: number; body: { error: string } }) => e);
  assert.deepEqual([expired.statusCode, expired.body.error], [400, 'invalid_grant']);

  const fresh = await api.login({ username, password: PASSWORD }).catch((e: { body: { mfa_token: string } }) => e);
  assert.equal((await api.sendOtp({ mfaToken: fresh.body.mfa_token, otp: totpNow(secret, clock.now()) })).statusCode, 200);
});

test('client_credentials over HTTP Basic; a client created with customers:create; unknown scopes', async () => {
  const username = await signUp();
  const api = particle(server.url);
  const userToken = (await api.login({ username, password: PASSWORD })).body.access_token;
  const full = (await api.createOAuthClient({ name: 'full', auth: userToken })).body.client;
  const narrow = (await api.createOAuthClient({ name: 'narrow', scope: 'customers:create', auth: userToken })).body.client;

  const viaBasic = await token({ grant_type: 'client_credentials' }, { authorization: basic(full.id, full.secret) });
  assert.equal(viaBasic.status, 200, viaBasic.text);
  assert.deepEqual(Object.keys(viaBasic.json).sort(), ['access_token', 'expires_in', 'token_type']);
  assert.equal(viaBasic.json.expires_in, 7776000, 'the default lifetime is 90 days');
  assert.equal((await raw(`${server.url}/v1/user`, { token: viaBasic.json.access_token })).json.username, username);
  const both = await token({ grant_type: 'client_credentials', client_id: full.id, client_secret: full.secret }, { authorization: basic(full.id, full.secret) });
  assert.deepEqual([both.status, both.json.error], [400, 'invalid_request']);
  const badBasic = await token({ grant_type: 'client_credentials' }, { authorization: basic(full.id, 'f'.repeat(40)) });
  assert.deepEqual([badBasic.status, badBasic.json.error], [400, 'invalid_client']);
  assert.match(badBasic.headers.get('www-authenticate') ?? '', /^Basic /);
  const bearerIgnored = await token({ grant_type: 'client_credentials', client_id: full.id, client_secret: full.secret }, { authorization: 'Bearer not-a-token' });
  assert.equal(bearerIgnored.status, 200);

  const narrowed = await particle(server.url, { clientId: narrow.id, clientSecret: narrow.secret }).loginAsClientOwner();
  assert.equal(narrowed.body.scope, 'customers:create');
  const denied = await api.getUserInfo({ auth: narrowed.body.access_token }).catch((e: { statusCode: number; body: { error: string } }) => e);
  assert.deepEqual([denied.statusCode, denied.body.error], [403, 'insufficient_scope']);
  const deniedRaw = await raw(`${server.url}/v1/user`, { token: narrowed.body.access_token });
  assert.match(deniedRaw.headers.get('www-authenticate') ?? '', /error="insufficient_scope"/);
  const notWider = await token({ grant_type: 'client_credentials', scope: '*:*', client_id: narrow.id, client_secret: narrow.secret });
  assert.equal(notWider.json.scope, 'customers:create', 'asking for *:* does not widen the client');

  const bogusCc = await token({ grant_type: 'client_credentials', scope: 'bogus', client_id: full.id, client_secret: full.secret });
  assert.deepEqual([bogusCc.status, bogusCc.json.error], [400, 'invalid_scope']);
  const bogusPassword = await token({ grant_type: 'password', scope: 'bogus', username, password: PASSWORD, client_id: 'particle-api', client_secret: 'particle-api' });
  assert.deepEqual([bogusPassword.status, bogusPassword.json.error], [400, 'invalid_scope']);
  const cli = await token({ grant_type: 'client_credentials', client_id: 'particle-cli', client_secret: 'particle-cli' });
  assert.deepEqual([cli.status, cli.json.error, cli.json.error_description], [400, 'invalid_grant', 'Client credentials are invalid']);
});

test('introspection answers the fields of RFC 7662 and goes inactive on expiry', async () => {
  const username = await signUp();
  const api = particle(server.url, { tokenDuration: 3600 });
  const userToken = (await api.login({ username, password: PASSWORD })).body.access_token;
  const issuedAt = Math.floor(clock.now().getTime() / 1000);
  const c = (await api.createOAuthClient({ name: 'introspector', auth: userToken })).body.client;
  const asC = { authorization: basic(c.id, c.secret) };

  const seen = await introspect(userToken, asC);
  assert.equal(seen.status, 200);
  assert.equal(seen.headers.get('cache-control'), 'no-store');
  assert.match(seen.json.sub, UUID);
  assert.deepEqual(seen.json, { active: true, token_type: 'bearer', client_id: 'particle-api', scope: '*:*', sub: seen.json.sub, subject_kind: 'user', iat: issuedAt, exp: issuedAt + 3600 });
  const viaBody = await introspect(userToken, {}, { client_id: c.id, client_secret: c.secret });
  assert.deepEqual(viaBody.json, seen.json, 'client credentials in the body work as well');

  const scoped = await token({ grant_type: 'client_credentials', scope: 'customers:create', expires_in: '0', client_id: c.id, client_secret: c.secret });
  const scopedSeen = (await introspect(scoped.json.access_token, asC)).json;
  assert.deepEqual([scopedSeen.active, scopedSeen.client_id, scopedSeen.scope, scopedSeen.exp], [true, c.id, 'customers:create', undefined]);

  const noToken = await raw(`${server.url}/oauth/introspect`, { method: 'POST', form: {}, headers: asC });
  assert.deepEqual([noToken.status, noToken.json.error], [400, 'invalid_request']);
  const noClient = await introspect(userToken, {});
  assert.deepEqual([noClient.status, noClient.json.error], [400, 'invalid_client']);

  clock.advance(3600_000);
  assert.deepEqual((await introspect(userToken, asC)).json, { active: false });
  assert.equal((await introspect(scoped.json.access_token, asC)).json.active, true, 'a token that never expires stays active');
});

test('refresh tokens: a new pair that works, introspectable, and revoking one revokes its access token', async () => {
  const api = particle(server.url);
  const username = await signUp();
  const userToken = (await api.login({ username, password: PASSWORD })).body.access_token;
  const product = (await raw(`${server.url}/v1/user/products`, { method: 'POST', token: userToken, json: { product: { name: 'Pairs', platform_id: 13 } } })).json.product;
  const c = (await api.createOAuthClient({ name: 'pairs', product: product.id, auth: userToken })).body.client;
  const userClient = (await api.createOAuthClient({ name: 'mine', auth: userToken })).body.client;
  const asC = { authorization: basic(c.id, c.secret) };
  const refresh = (rt: string, cl: { id: string; secret: string }) => token({ grant_type: 'refresh_token', refresh_token: rt, client_id: cl.id, client_secret: cl.secret });

  const first = await token({ grant_type: 'client_credentials', expires_in: '120', client_id: c.id, client_secret: c.secret });
  assert.equal(first.status, 200, first.text);
  assert.match(first.json.refresh_token, /^[0-9a-f]{40}$/);
  assert.deepEqual(Object.keys(first.json).sort(), ['access_token', 'expires_in', 'refresh_token', 'token_type']);

  const second = await refresh(first.json.refresh_token, c);
  assert.equal(second.status, 200, second.text);
  assert.equal(second.headers.get('cache-control'), 'no-store');
  assert.equal(second.json.token_type, 'bearer');
  assert.equal(second.json.expires_in, 120, 'the lifetime of the first token');
  assert.notEqual(second.json.access_token, first.json.access_token);
  assert.match(second.json.refresh_token, /^[0-9a-f]{40}$/);
  assert.notEqual(second.json.refresh_token, first.json.refresh_token);
  const read = await raw(`${server.url}/v1/products/${product.id}`, { token: second.json.access_token });
  assert.deepEqual([read.status, read.json.product.id], [200, product.id]);

  const missing = await token({ grant_type: 'refresh_token', client_id: c.id, client_secret: c.secret });
  assert.deepEqual([missing.status, missing.json.error], [400, 'invalid_request']);
  const wrongClient = await refresh(second.json.refresh_token, userClient);
  assert.deepEqual([wrongClient.status, wrongClient.json.error, wrongClient.json.error_description], [400, 'invalid_grant', 'Invalid refresh token']);
  const publicClient = await refresh(second.json.refresh_token, { id: 'particle-api', secret: 'particle-api' });
  assert.deepEqual([publicClient.status, publicClient.json.error], [400, 'invalid_grant']);

  const seen = await introspect(second.json.refresh_token, asC, { token_type_hint: 'refresh_token' });
  assert.deepEqual([seen.json.active, seen.json.token_type, seen.json.client_id, seen.json.subject_kind, seen.json.product_id], [true, 'refresh_token', c.id, 'product', String(product.id)]);

  const revoked = await raw(`${server.url}/oauth/revoke`, { method: 'POST', form: { token: second.json.refresh_token, token_type_hint: 'refresh_token' }, headers: asC });
  assert.deepEqual([revoked.status, revoked.json], [200, { ok: true }]);
  assert.equal((await raw(`${server.url}/v1/products/${product.id}`, { token: second.json.access_token })).status, 401, 'RFC 7009 §2.1: its access token goes too');
  assert.deepEqual((await introspect(second.json.refresh_token, asC)).json, { active: false });
  assert.equal((await refresh(second.json.refresh_token, c)).json.error, 'invalid_grant');
});

test('races: of two concurrent uses of one refresh token, one OTP or one recovery code, exactly one wins', async () => {
  const api = particle(server.url);
  const username = await signUp();
  const userToken = (await api.login({ username, password: PASSWORD })).body.access_token;
  const product = (await raw(`${server.url}/v1/user/products`, { method: 'POST', token: userToken, json: { product: { name: 'Racers', platform_id: 13 } } })).json.product;
  const c = (await api.createOAuthClient({ name: 'racer', product: product.id, auth: userToken })).body.client;
  const first = await token({ grant_type: 'client_credentials', expires_in: '60', client_id: c.id, client_secret: c.secret });
  const refreshes = await Promise.all([0, 1].map(() => token({ grant_type: 'refresh_token', refresh_token: first.json.refresh_token, client_id: c.id, client_secret: c.secret })));
  assert.deepEqual(refreshes.map((r) => r.status).sort(), [200, 400]);

  const enrol = (await api.enableMfa({ auth: userToken })).body;
  const codes = (await api.confirmMfa({ mfaToken: enrol.mfa_token, otp: totpNow(enrol.secret, clock.now()), auth: userToken })).body.recovery_codes as string[];
  clock.advance(30_000);
  const challenge = async () => (await api.login({ username, password: PASSWORD }).catch((e: { body: { mfa_token: string } }) => e)).body.mfa_token;
  const [a, b] = [await challenge(), await challenge()];
  const otp = totpNow(enrol.secret, clock.now());
  const otps = await Promise.all([a, b].map((m) => token({ grant_type: 'urn:custom:mfa-otp', mfa_token: m, otp, client_id: 'particle-api', client_secret: 'particle-api' })));
  assert.deepEqual(otps.map((r) => r.status).sort(), [200, 400]);

  const [x, y] = [await challenge(), await challenge()];
  const recoveries = await Promise.all([x, y].map((m) => token({ grant_type: 'urn:custom:recovery-code', mfa_token: m, recovery_code: codes[3] as string, client_id: 'particle-api', client_secret: 'particle-api' })));
  assert.deepEqual(recoveries.map((r) => r.status).sort(), [200, 400]);
  // Recovery codes are accepted without their dash and in capitals.
  const z = await challenge();
  const loose = await token({ grant_type: 'urn:custom:recovery-code', mfa_token: z, recovery_code: (codes[4] as string).replace('-', '').toUpperCase(), client_id: 'particle-api', client_secret: 'particle-api' });
  assert.equal(loose.status, 200, loose.text);
});
