import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { startTestServer, email, manualClock, type TestServer } from './helpers/server.js';
import { basic, raw } from './helpers/http.js';
import { faultyDb, type FaultyDb } from './helpers/faults.js';
import { PASSWORD, newProduct, signUp } from './helpers/fixtures.js';
import { totpNow } from '../src/domain/totp.js';

// Writes of several statements in accounts, clients, tokens, MFA, customers and products are all
// or nothing: the store fails ("crashes") just before one of their later statements, and
// whatever the write had done before it must be undone.

const clock = manualClock(new Date());
let server: TestServer;
let faulty: FaultyDb;
before(async () => { server = await startTestServer({ clock, wrapDb: (db) => (faulty = faultyDb(db)) }); });
after(async () => { await server.close(); });

const url = (path: string) => `${server.url}${path}`;
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Arms a crash before the next statement matching `pattern`, runs `write`, and checks it crashed. */
async function crashing(pattern: RegExp, write: () => Promise<{ status: number; text: string }>): Promise<void> {
  faulty.crashAt(pattern);
  const r = await write();
  assert.equal(faulty.crashed, true, `no statement matched ${pattern}`);
  assert.equal(r.status, 500, r.text);
}

const tokenWorks = async (token: string) => (await raw(url('/v1/access_tokens/current'), { token })).status === 200;
const token = (form: Record<string, string>, headers: Record<string, string> = {}) => raw(url('/oauth/token'), { method: 'POST', form, headers });

/** A product with a full-scope client of its own, and a token of that client with its refresh token. */
async function productWithClient() {
  const owner = await signUp(server.url);
  const product = await newProduct(server.url, owner.token);
  const created = await raw(url(`/v1/products/${product.id}/clients`), { method: 'POST', token: owner.token, json: { name: 'back end', type: 'installed' } });
  assert.equal(created.status, 201, created.text);
  const client = created.json.client as { id: string; secret: string };
  const auth = { authorization: basic(client.id, client.secret) };
  const issue = async () => {
    const r = await token({ grant_type: 'client_credentials' }, auth);
    assert.equal(r.status, 200, r.text);
    return r.json as { access_token: string; refresh_token: string };
  };
  /** Whether the client still sees the refresh token as live (introspection does not spend it). */
  const refreshLive = async (refresh: string) => (await raw(url('/oauth/introspect'), { method: 'POST', form: { token: refresh, token_type_hint: 'refresh_token' }, headers: auth })).json.active === true;
  return { owner, product, client, auth, issue, refreshLive };
}

test('revoking a token: a crash between the access token and its refresh tokens leaves both working', async () => {
  const p = await productWithClient();
  const t = await p.issue();
  await crashing(/DELETE FROM refresh_tokens WHERE access_token_hash/, () => raw(url('/v1/access_tokens/current'), { method: 'DELETE', token: t.access_token }));
  assert.equal(await tokenWorks(t.access_token), true, 'the access token still works');
  assert.equal(await p.refreshLive(t.refresh_token), true, 'its refresh token still works');

  assert.equal((await raw(url('/v1/access_tokens/current'), { method: 'DELETE', token: t.access_token })).status, 200);
  assert.equal(await tokenWorks(t.access_token), false);
  assert.equal(await p.refreshLive(t.refresh_token), false, 'both are gone once the revocation succeeds');
});

test('revoking a refresh token (RFC 7009): a crash before its access token goes leaves both working', async () => {
  const p = await productWithClient();
  const t = await p.issue();
  await crashing(/DELETE FROM access_tokens WHERE \(\(token_hash = \$1 AND session_id = \$1\)/, () => raw(url('/oauth/revoke'), { method: 'POST', form: { token: t.refresh_token }, headers: p.auth }));
  assert.equal(await p.refreshLive(t.refresh_token), true, 'the refresh token was not spent');
  assert.equal(await tokenWorks(t.access_token), true);
});

test('revoking every token of an account: a crash before the refresh tokens leaves every token working', async () => {
  const p = await productWithClient();
  const t = await p.issue();
  const other = await p.issue();
  await crashing(/DELETE FROM refresh_tokens WHERE subject_kind/, () => raw(url('/v1/access_tokens'), { method: 'DELETE', token: t.access_token }));
  assert.equal(await tokenWorks(t.access_token), true);
  assert.equal(await tokenWorks(other.access_token), true);
  assert.equal(await p.refreshLive(other.refresh_token), true);
});

test('deleting a client: a crash before its tokens go leaves the client and its tokens all there', async () => {
  const p = await productWithClient();
  const t = await p.issue();
  await crashing(/DELETE FROM access_tokens WHERE client_id/, () => raw(url(`/v1/products/${p.product.id}/clients/${p.client.id}`), { method: 'DELETE', token: p.owner.token }));
  assert.equal((await token({ grant_type: 'client_credentials' }, p.auth)).status, 200, 'the client still authenticates');
  assert.equal(await tokenWorks(t.access_token), true);
  assert.equal(await p.refreshLive(t.refresh_token), true);

  assert.equal((await raw(url(`/v1/products/${p.product.id}/clients/${p.client.id}`), { method: 'DELETE', token: p.owner.token })).status, 204);
  assert.equal(await tokenWorks(t.access_token), false, 'a successful deletion takes the tokens');
  assert.equal((await token({ grant_type: 'client_credentials' }, p.auth)).status, 400);
});

test('deleting a product: a crash at the product row leaves its clients and tokens', async () => {
  const p = await productWithClient();
  const t = await p.issue();
  await crashing(/DELETE FROM products WHERE id/, () => raw(url(`/v1/products/${p.product.id}?confirm=${p.product.slug}`), { method: 'DELETE', token: p.owner.token }));
  assert.equal((await token({ grant_type: 'client_credentials' }, p.auth)).status, 200, "the product's client still authenticates");
  assert.equal(await tokenWorks(t.access_token), true);
  assert.equal((await raw(url(`/v1/products/${p.product.id}`), { token: p.owner.token })).status, 200);
});

/** The tokens a client has made (access and refresh), and the audit events of a type in a product. */
async function storedOf(clientId: string) {
  const n = async (sql: string, params: unknown[]) => Number((await server.skyport.db.query<{ n: string | number }>(sql, params))[0]?.n);
  return {
    access: await n('SELECT count(*) AS n FROM access_tokens WHERE client_id = $1', [clientId]),
    refresh: await n('SELECT count(*) AS n FROM refresh_tokens WHERE client_id = $1', [clientId]),
    refreshed: await n("SELECT count(*) AS n FROM audit_events WHERE type = 'token.refreshed' AND details->>'client_id' = $1", [clientId]),
    customers: await n("SELECT count(*) AS n FROM audit_events WHERE type = 'customer.created' AND details->>'client_id' = $1", [clientId]),
  };
}

// The refresh grant spends the refresh token, stores the new pair with its token.refreshed
// event, and extends the session: a crash before any of the later statements leaves the old
// refresh token working and no new token behind.
for (const [where, pattern] of [
  ['the new token', /INSERT INTO access_tokens/],
  ['the audit event', /INSERT INTO audit_events/],
  ['the session extension', /UPDATE access_tokens SET expires_at/],
] as const) {
  test(`the refresh grant: a crash before ${where} leaves the refresh token unspent and no new token`, async () => {
    const p = await productWithClient();
    const t = await p.issue();
    const before = await storedOf(p.client.id);
    const refresh = () => token({ grant_type: 'refresh_token', refresh_token: t.refresh_token }, p.auth);
    await crashing(pattern, refresh);
    assert.equal(await p.refreshLive(t.refresh_token), true, 'the refresh token was not spent');
    assert.deepEqual(await storedOf(p.client.id), before, 'no new token nor event');

    const again = await refresh();
    assert.equal(again.status, 200, again.text);
    assert.equal(await tokenWorks(again.json.access_token as string), true);
    assert.equal(await p.refreshLive(again.json.refresh_token as string), true);
    assert.equal(await p.refreshLive(t.refresh_token), false, 'spent once it worked');
    assert.deepEqual(await storedOf(p.client.id), { ...before, access: before.access + 1, refreshed: before.refreshed + 1 }, 'exactly one new pair, one event');
  });
}

// Creating a customer with a product client's credentials answers its first token: the
// customer, its customer.created event and the token are one write.
for (const [where, pattern] of [
  ['its token', /INSERT INTO access_tokens/],
  ['its audit event', /^\s*INSERT INTO audit_events/],
] as const) {
  test(`creating a customer: a crash before ${where} leaves no customer, and the same e-mail can be created again`, async () => {
    const p = await productWithClient();
    const before = await storedOf(p.client.id);
    const customerEmail = email('customer');
    const create = () => raw(url(`/v1/products/${p.product.id}/customers`), { method: 'POST', headers: p.auth, form: { email: customerEmail, password: PASSWORD } });
    await crashing(pattern, create);
    assert.deepEqual(await storedOf(p.client.id), before, 'no token nor event');
    const listed = await raw(url(`/v1/products/${p.product.id}/customers`), { token: p.owner.token });
    assert.deepEqual(listed.json.customers, [], listed.text);

    const again = await create();
    assert.equal(again.status, 201, again.text);
    assert.equal(await tokenWorks(again.json.access_token as string), true);
    assert.equal(await p.refreshLive(again.json.refresh_token as string), true);
    assert.equal((await token({ grant_type: 'password', username: customerEmail, password: PASSWORD }, p.auth)).status, 200);
    assert.deepEqual(await storedOf(p.client.id), { ...before, access: before.access + 2, refresh: before.refresh + 2, customers: before.customers + 1 });
  });
}

/** A product customer with a password, and its first token. */
async function customerOf(p: Awaited<ReturnType<typeof productWithClient>>) {
  const customerEmail = email('customer');
  const created = await raw(url(`/v1/products/${p.product.id}/customers`), { method: 'POST', headers: p.auth, form: { email: customerEmail, password: PASSWORD } });
  assert.equal(created.status, 201, created.text);
  return { email: customerEmail, access: created.json.access_token as string, refresh: created.json.refresh_token as string };
}

test("a customer's new password: a crash before its tokens are revoked keeps the old password and the tokens", async () => {
  const p = await productWithClient();
  const c = await customerOf(p);
  await crashing(/DELETE FROM access_tokens WHERE subject_kind = 'customer'/,
    () => raw(url(`/v1/products/${p.product.id}/customers/${encodeURIComponent(c.email)}`), { method: 'PUT', token: p.owner.token, json: { password: 'a new password' } }));
  assert.equal(await tokenWorks(c.access), true);
  assert.equal((await token({ grant_type: 'password', username: c.email, password: PASSWORD }, p.auth)).status, 200, 'the old password still works');
  assert.equal((await token({ grant_type: 'password', username: c.email, password: 'a new password' }, p.auth)).status, 400);
});

test('deleting a customer: a crash at the customer row leaves the customer and its tokens', async () => {
  const p = await productWithClient();
  const c = await customerOf(p);
  await crashing(/DELETE FROM customers WHERE id/, () => raw(url(`/v1/products/${p.product.id}/customers/${encodeURIComponent(c.email)}`), { method: 'DELETE', token: p.owner.token }));
  assert.equal(await tokenWorks(c.access), true);
  assert.equal(await p.refreshLive(c.refresh), true);
  assert.equal((await token({ grant_type: 'password', username: c.email, password: PASSWORD }, p.auth)).status, 200);
});

test('a new account password: a crash before the other tokens are revoked keeps the old password and the tokens', async () => {
  const u = await signUp(server.url);
  const other = await u.newToken();
  await crashing(/DELETE FROM access_tokens WHERE subject_kind = 'user'/,
    () => raw(url('/v1/user'), { method: 'PUT', token: u.token, json: { password: 'a new password', current_password: u.password } }));
  assert.equal(await tokenWorks(other), true, 'the other token still works');
  assert.equal((await token({ grant_type: 'password', username: u.username, password: u.password, client_id: 'particle', client_secret: 'particle' })).status, 200, 'the old password still works');
});

test("deleting an account: a crash at the user row leaves the account, its clients and its tokens", async () => {
  const u = await signUp(server.url);
  const created = await raw(url('/v1/clients'), { method: 'POST', token: u.token, json: { name: 'mine', type: 'installed' } });
  const client = created.json.client as { id: string; secret: string };
  const other = await u.newToken();
  await crashing(/DELETE FROM users WHERE id/, () => raw(url('/v1/user'), { method: 'DELETE', token: u.token, json: { password: u.password } }));
  assert.equal(await tokenWorks(other), true);
  assert.equal((await token({ grant_type: 'client_credentials' }, { authorization: basic(client.id, client.secret) })).status, 200, "the account's client still authenticates");
  assert.equal((await raw(url('/v1/user'), { token: u.token })).status, 200);
});

/** A user with MFA on, through the API; answers the TOTP secret and recovery codes. */
async function mfaUser() {
  const u = await signUp(server.url);
  const start = await raw(url('/v1/user/mfa-enable'), { token: u.token });
  const confirm = await raw(url('/v1/user/mfa-enable'), { method: 'POST', token: u.token, json: { mfa_token: start.json.mfa_token, otp: totpNow(start.json.secret, clock.now()) } });
  assert.equal(confirm.status, 200, confirm.text);
  clock.advance(30_000); // the next login needs a code of a later step than the enrolment's
  return { ...u, secret: start.json.secret as string, recovery: confirm.json.recovery_codes as string[] };
}

const publicClient = { client_id: 'particle', client_secret: 'particle' };

async function mfaChallenge(u: { username: string; password: string }): Promise<string> {
  const r = await token({ grant_type: 'password', username: u.username, password: u.password, ...publicClient });
  assert.equal(r.json.error, 'mfa_required', r.text);
  return r.json.mfa_token as string;
}

test('MFA enrolment: a crash after the code was checked leaves the enrolment to confirm again', async () => {
  const u = await signUp(server.url);
  const start = await raw(url('/v1/user/mfa-enable'), { token: u.token });
  const body = { mfa_token: start.json.mfa_token, otp: totpNow(start.json.secret, clock.now()) };
  await crashing(/UPDATE users SET mfa_secret/, () => raw(url('/v1/user/mfa-enable'), { method: 'POST', token: u.token, json: body }));
  assert.equal((await raw(url('/v1/user'), { token: u.token })).json.mfa.enabled, false);
  const again = await raw(url('/v1/user/mfa-enable'), { method: 'POST', token: u.token, json: body });
  assert.equal(again.status, 200, `the mfa_token was not spent: ${again.text}`);
});

test('MFA enrolment started again: a crash before the new challenge keeps the pending one', async () => {
  const u = await signUp(server.url);
  const first = await raw(url('/v1/user/mfa-enable'), { token: u.token });
  await crashing(/INSERT INTO mfa_challenges/, () => raw(url('/v1/user/mfa-enable'), { token: u.token }));
  const confirm = await raw(url('/v1/user/mfa-enable'), { method: 'POST', token: u.token, json: { mfa_token: first.json.mfa_token, otp: totpNow(first.json.secret, clock.now()) } });
  assert.equal(confirm.status, 200, confirm.text);
});

test('MFA login with a recovery code: a crash before the challenge is spent leaves the code unused', async () => {
  const u = await mfaUser();
  const mfaToken = await mfaChallenge(u);
  const form = { grant_type: 'urn:custom:recovery-code', mfa_token: mfaToken, recovery_code: u.recovery[0] as string, ...publicClient };
  await crashing(/DELETE FROM mfa_challenges WHERE token_hash/, () => token(form));
  const again = await token(form);
  assert.equal(again.status, 200, `the recovery code was not used up: ${again.text}`);
});

test('MFA login with a one-time password: a crash before the challenge is spent leaves the code usable', async () => {
  const u = await mfaUser();
  const mfaToken = await mfaChallenge(u);
  const form = { grant_type: 'urn:custom:mfa-otp', mfa_token: mfaToken, otp: totpNow(u.secret, clock.now()), ...publicClient };
  await crashing(/DELETE FROM mfa_challenges WHERE token_hash/, () => token(form));
  const again = await token(form);
  assert.equal(again.status, 200, `the code's step was not recorded as used: ${again.text}`);
});

// The last step of an MFA login spends the code and the challenge, records the login and
// stores the token: a crash before the token (or an event) leaves the code and the mfa_token
// usable, never spent without a token.
for (const [grant, where, pattern] of [
  ['a one-time password', 'the token', /INSERT INTO access_tokens/],
  ['a one-time password', 'the login event', /^\s*INSERT INTO audit_events/],
  ['a recovery code', 'the token', /INSERT INTO access_tokens/],
  ['a recovery code', 'the recovery event', /^\s*INSERT INTO audit_events/],
] as const) {
  test(`MFA login with ${grant}: a crash before ${where} leaves the code and the mfa_token usable`, async () => {
    const u = await mfaUser();
    const mfaToken = await mfaChallenge(u);
    const form = grant === 'a recovery code'
      ? { grant_type: 'urn:custom:recovery-code', mfa_token: mfaToken, recovery_code: u.recovery[0] as string, ...publicClient }
      : { grant_type: 'urn:custom:mfa-otp', mfa_token: mfaToken, otp: totpNow(u.secret, clock.now()), ...publicClient };
    const tokens = async () => Number((await server.skyport.db.query<{ n: string | number }>("SELECT count(*) AS n FROM access_tokens a JOIN users u ON u.id = a.user_id WHERE u.username = $1", [u.username]))[0]?.n);
    const before = await tokens();
    await crashing(pattern, () => token(form));
    assert.equal(await tokens(), before, 'no token');
    const again = await token(form);
    assert.equal(again.status, 200, `neither the code nor the mfa_token was spent: ${again.text}`);
    assert.equal(await tokenWorks(again.json.access_token as string), true);
    assert.equal(await tokens(), before + 1);
  });
}

test('MFA login: a crash when the last allowed wrong code ends the challenge leaves its count as it was', async () => {
  const u = await mfaUser();
  const mfaToken = await mfaChallenge(u);
  const wrong = { grant_type: 'urn:custom:mfa-otp', mfa_token: mfaToken, otp: '000000', ...publicClient };
  for (let i = 0; i < 4; i++) assert.equal((await token(wrong)).json.error, 'invalid_grant');
  await crashing(/DELETE FROM mfa_challenges WHERE token_hash/, () => token(wrong));
  const rows = await server.skyport.db.query<{ attempts: number }>('SELECT attempts FROM mfa_challenges WHERE token_hash = $1', [sha256(mfaToken)]);
  assert.deepEqual(rows.map((r) => Number(r.attempts)), [4], 'a challenge never outlives its count of wrong codes');
});

test('the expiry sweep: a crash before the refresh tokens leaves the expired access tokens too', async () => {
  const p = await productWithClient();
  const short = await token({ grant_type: 'client_credentials', expires_in: '60' }, p.auth);
  assert.equal(short.status, 200, short.text);
  clock.advance(61_000);
  const expired = async () => (await server.skyport.db.query('SELECT 1 FROM access_tokens WHERE expires_at < $1', [clock.now()])).length;
  const before = await expired();
  assert.ok(before > 0);
  faulty.crashAt(/DELETE FROM refresh_tokens WHERE expires_at/);
  await assert.rejects(server.skyport.services.tokens.purgeExpired(), /simulated crash/);
  assert.equal(faulty.crashed, true);
  assert.equal(await expired(), before);
  await server.skyport.services.tokens.purgeExpired();
  assert.equal(await expired(), 0);
});
