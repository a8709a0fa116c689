import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { email, manualClock, startTestServer, type TestServer } from './helpers/server.js';
import { basic, raw } from './helpers/http.js';
import { newProduct, PASSWORD, signUp } from './helpers/fixtures.js';

// The console's renewable session and the temporary tokens taken from it
// (docs/api.md, "OAuth" and "Access tokens"), and the account's token list.

const clock = manualClock(new Date());
let server: TestServer;
before(async () => { server = await startTestServer({ clock }); });
after(async () => { await server.close(); });

const CONSOLE = basic('skyport-console', 'skyport-console');

/** A console login: the password grant through the console's public client. */
async function consoleLogin(username: string, expiresIn = 900) {
  const r = await raw(`${server.url}/oauth/token`, { method: 'POST', headers: { authorization: CONSOLE }, form: { grant_type: 'password', username, password: PASSWORD, expires_in: String(expiresIn) } });
  assert.equal(r.status, 200, r.text);
  return r.json as { access_token: string; refresh_token: string; expires_in: number };
}

const renew = (refreshToken: string) =>
  raw(`${server.url}/oauth/token`, { method: 'POST', headers: { authorization: CONSOLE }, form: { grant_type: 'refresh_token', refresh_token: refreshToken } });
const temporary = (token: string, json?: unknown) => raw(`${server.url}/v1/access_tokens`, { method: 'POST', token, ...(json === undefined ? {} : { json }) });
const current = (token: string) => raw(`${server.url}/v1/access_tokens/current`, { token });

test('the console client gets a refresh token and renews its short token; other public clients get none', async () => {
  const { username } = await signUp(server.url);
  const first = await consoleLogin(username);
  assert.equal(first.expires_in, 900);
  assert.equal(typeof first.refresh_token, 'string');
  const cli = await raw(`${server.url}/oauth/token`, { method: 'POST', headers: { authorization: basic('particle-cli', 'particle-cli') }, form: { grant_type: 'password', username, password: PASSWORD } });
  assert.equal(cli.status, 200);
  assert.equal(cli.json.refresh_token, undefined, 'a tool\'s public client still gets no refresh token');

  clock.advance(840_000);
  const next = await renew(first.refresh_token);
  assert.equal(next.status, 200, next.text);
  assert.equal(next.json.expires_in, 900);
  assert.equal((await current(next.json.access_token)).status, 200);
  assert.equal((await renew(first.refresh_token)).json.error, 'invalid_grant', 'single use');
  // Revoking an older token leaves the newer one: a client may revoke its previous token.
  clock.advance(60_000);
  const third = await renew(next.json.refresh_token);
  assert.equal(third.status, 200, third.text);
  assert.equal((await raw(`${server.url}/v1/access_tokens/${next.json.access_token}`, { method: 'DELETE' })).status, 200);
  assert.equal((await current(next.json.access_token)).status, 401);
  assert.equal((await current(third.json.access_token)).status, 200, 'the newer token lives on');
  assert.equal((await current(first.access_token)).status, 401, 'the older one goes with it');
  // Revoking the session's newest token ends the session.
  assert.equal((await raw(`${server.url}/v1/access_tokens/current`, { method: 'DELETE', token: third.json.access_token })).status, 200);
  assert.equal((await renew(third.json.refresh_token)).json.error, 'invalid_grant');
});

test('a temporary token acts for the account, expires with the session and is carried along by renewals, never revived', async () => {
  const { username } = await signUp(server.url);
  const login = await consoleLogin(username);
  const t = await temporary(login.access_token);
  assert.equal(t.status, 201, t.text);
  assert.equal(t.headers.get('cache-control'), 'no-store');
  assert.equal((await raw(`${server.url}/v1/user`, { token: t.json.access_token })).json.username, username);
  // Asked for a day, cut to the session's expiry.
  const sessionEnd = Date.parse((await current(login.access_token)).json.expires_at);
  assert.equal(Date.parse(t.json.expires_at), sessionEnd);
  assert.equal(t.json.expires_in, 900);

  clock.advance(840_000);
  const renewed = await renew(login.refresh_token);
  assert.equal(renewed.status, 200, renewed.text);
  clock.advance(120_000); // past the first token's expiry
  const seen = await current(t.json.access_token);
  assert.equal(seen.status, 200, 'the renewal carried the temporary token along');
  assert.equal(Date.parse(seen.json.expires_at), clock.nowMs() - 960_000 + 840_000 + 900_000);

  // The console closed: no renewal, the session's token expires and the temporary one with it.
  clock.advance(900_000);
  assert.equal((await current(t.json.access_token)).status, 401);
  // A late renewal (the refresh token still lives) does not bring it back.
  const late = await renew(renewed.json.refresh_token);
  assert.equal(late.status, 200, late.text);
  assert.equal((await current(t.json.access_token)).status, 401);
});

test('revoking the session revokes its temporary tokens; revoking a temporary token leaves the session', async () => {
  const { username } = await signUp(server.url);
  const login = await consoleLogin(username);
  const a = (await temporary(login.access_token, { expires_in: 600 })).json;
  assert.equal(a.expires_in, 600);
  const b = (await temporary(login.access_token)).json;
  assert.equal((await raw(`${server.url}/v1/access_tokens/current`, { method: 'DELETE', token: a.access_token })).status, 200);
  assert.equal((await current(a.access_token)).status, 401);
  assert.equal((await current(login.access_token)).status, 200, 'the session lives on');
  assert.equal((await current(b.access_token)).status, 200);

  // Log-out as the console does it: the refresh token (RFC 7009) takes the whole session.
  const out = await raw(`${server.url}/oauth/revoke`, { method: 'POST', headers: { authorization: CONSOLE }, form: { token: login.refresh_token } });
  assert.equal(out.status, 200, out.text);
  assert.equal((await current(login.access_token)).status, 401);
  assert.equal((await current(b.access_token)).status, 401);

  // A new password revokes every other token, temporary ones too.
  const again = await consoleLogin(username);
  const c = (await temporary(again.access_token)).json;
  const { token: other } = { token: (await consoleLogin(username)).access_token };
  const pw = await raw(`${server.url}/v1/user`, { method: 'PUT', token: other, json: { password: 'another horse', current_password: PASSWORD } });
  assert.equal(pw.status, 200, pw.text);
  assert.equal((await current(c.access_token)).status, 401);
});

test('temporary tokens: refused inputs and callers', async () => {
  const owner = await signUp(server.url);
  const login = await consoleLogin(owner.username);
  for (const expires_in of [0, 59, 86401, -5, 1.5, 'soon', '99999999999']) {
    const r = await temporary(login.access_token, { expires_in });
    assert.equal(r.status, 400, `${expires_in}: ${r.text}`);
    assert.equal(r.json.error, 'invalid_request');
  }
  const viaForm = await raw(`${server.url}/v1/access_tokens`, { method: 'POST', token: login.access_token, form: { expires_in: '120' } });
  assert.deepEqual([viaForm.status, viaForm.json.expires_in], [201, 120]);
  const t = (await temporary(login.access_token)).json;
  const chained = await temporary(t.access_token);
  assert.deepEqual([chained.status, chained.json.error], [403, 'forbidden']);
  assert.equal((await raw(`${server.url}/v1/access_tokens`, { method: 'POST' })).status, 400);
  assert.equal((await temporary('0'.repeat(40))).status, 401);

  // Products' and customers' tokens are not a user's console session.
  const product = await newProduct(server.url, owner.token, 'Temp Fleet');
  const made = await raw(`${server.url}/v1/products/${product.id}/clients`, { method: 'POST', token: owner.token, json: { name: 'back-end', type: 'installed' } });
  assert.equal(made.status, 201, made.text);
  const client = made.json.client as { id: string; secret: string };
  const productToken = await raw(`${server.url}/oauth/token`, { method: 'POST', headers: { authorization: basic(client.id, client.secret) }, form: { grant_type: 'client_credentials' } });
  assert.equal(productToken.status, 200, productToken.text);
  const byProduct = await temporary(productToken.json.access_token);
  assert.deepEqual([byProduct.status, byProduct.json.error], [403, 'forbidden']);
  const customer = await raw(`${server.url}/v1/products/${product.id}/customers`, { method: 'POST', headers: { authorization: basic(client.id, client.secret) }, form: { email: email('cust'), no_password: 'true' } });
  assert.equal(customer.status, 201, customer.text);
  const byCustomer = await temporary(customer.json.access_token);
  assert.deepEqual([byCustomer.status, byCustomer.json.error], [403, 'forbidden']);
  assert.equal((await raw(`${server.url}/v1/user/access_tokens`, { token: customer.json.access_token })).status, 403);
});

test('the token list shows live tokens without their values; revoking by id reaches only the account\'s own', async () => {
  const me = await signUp(server.url);
  const login = await consoleLogin(me.username);
  const t = (await temporary(login.access_token)).json;
  const list = await raw(`${server.url}/v1/user/access_tokens`, { token: login.access_token });
  assert.equal(list.status, 200, list.text);
  assert.equal(list.json.meta.total, 3);
  for (const secret of [login.access_token, login.refresh_token, t.access_token, me.token]) assert.ok(!list.text.includes(secret), 'no token value in the list');
  const mine = list.json.tokens.find((x: { current: boolean }) => x.current);
  assert.equal(mine.client_id, 'skyport-console');
  const temp = list.json.tokens.find((x: { temporary: boolean }) => x.temporary);
  assert.equal(temp.same_session, true);
  assert.match(temp.id, /^[0-9a-f]{16}$/);
  const paged = await raw(`${server.url}/v1/user/access_tokens?per_page=2&page=2`, { token: login.access_token });
  assert.deepEqual([paged.json.tokens.length, paged.json.meta.total_pages], [1, 2]);

  const other = await signUp(server.url);
  const theirs = await raw(`${server.url}/v1/user/access_tokens/${temp.id}`, { method: 'DELETE', token: other.token });
  assert.deepEqual([theirs.status, theirs.json.error], [404, 'not_found']);
  assert.equal((await current(t.access_token)).status, 200, 'another account cannot revoke it');
  assert.equal((await raw(`${server.url}/v1/user/access_tokens/not-an-id`, { method: 'DELETE', token: login.access_token })).status, 400);
  assert.equal((await raw(`${server.url}/v1/user/access_tokens/${'f'.repeat(16)}`, { method: 'DELETE', token: login.access_token })).status, 404);

  const revoked = await raw(`${server.url}/v1/user/access_tokens/${temp.id}`, { method: 'DELETE', token: login.access_token });
  assert.equal(revoked.status, 200, revoked.text);
  assert.equal((await current(t.access_token)).status, 401);
  assert.equal((await raw(`${server.url}/v1/user/access_tokens/${temp.id}`, { method: 'DELETE', token: login.access_token })).status, 404, 'gone');
  const events = await raw(`${server.url}/v1/user/security_events`, { token: login.access_token });
  assert.ok(events.json.events.some((e: { type: string; details: { via?: string } }) => e.type === 'token.revoked' && e.details.via === 'id'));
});
