import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, manualClock, type TestServer } from './helpers/server.js';
import { particle } from './helpers/particle.js';
import { raw } from './helpers/http.js';
import { PASSWORD, signUp } from './helpers/fixtures.js';

// Access tokens on resource routes and /v1/access_tokens (docs/particle-compatibility.md#access-tokens-on-api-routes).

const clock = manualClock(new Date());
let server: TestServer;
before(async () => { server = await startTestServer({ clock }); });
after(async () => { await server.close(); });

const ONLY_ONE = 'Only one method may be used to authenticate at a time (Auth header, GET or POST).';

const account = () => signUp(server.url, { client: { tokenDuration: 3600 } });

const me = (token: string) => raw(`${server.url}/v1/user`, { token });

test('the token may come from the Authorization header, the access_token query parameter or a body field', async () => {
  const { username, token } = await account();
  const header = await raw(`${server.url}/v1/user`, { token });
  assert.deepEqual([header.status, header.json.username], [200, username]);
  const query = await raw(`${server.url}/v1/user?access_token=${token}`);
  assert.deepEqual([query.status, query.json.username], [200, username]);

  const form = await raw(`${server.url}/v1/clients`, { method: 'POST', form: { access_token: token, name: 'form body' } });
  assert.equal(form.status, 201, form.text);
  assert.equal(form.json.client.name, 'form body');
  const json = await raw(`${server.url}/v1/clients`, { method: 'POST', json: { access_token: token, name: 'json body' } });
  assert.equal(json.status, 201, json.text);
  const listed = await raw(`${server.url}/v1/clients`, { token });
  assert.deepEqual(listed.json.clients.map((c: { name: string }) => c.name).sort(), ['form body', 'json body']);
});

test('two token sources at once are 400 invalid_request; none is 400 "The access token was not found"', async () => {
  const { token } = await account();
  const headerAndQuery = await raw(`${server.url}/v1/user?access_token=${token}`, { token });
  assert.deepEqual([headerAndQuery.status, headerAndQuery.json.error, headerAndQuery.json.error_description], [400, 'invalid_request', ONLY_ONE]);
  const headerAndBody = await raw(`${server.url}/v1/clients`, { method: 'POST', token, form: { access_token: token, name: 'x' } });
  assert.deepEqual([headerAndBody.status, headerAndBody.json.error], [400, 'invalid_request']);
  const queryAndBody = await raw(`${server.url}/v1/clients?access_token=${token}`, { method: 'POST', json: { access_token: token, name: 'x' } });
  assert.deepEqual([queryAndBody.status, queryAndBody.json.error], [400, 'invalid_request']);
  assert.deepEqual((await raw(`${server.url}/v1/clients`, { token })).json.clients, [], 'none of them created a client');

  const none = await raw(`${server.url}/v1/user`);
  assert.equal(none.status, 400);
  assert.deepEqual([none.json.error, none.json.error_description], ['invalid_request', 'The access token was not found']);
  // A Basic header is not a bearer token.
  const basicOnly = await raw(`${server.url}/v1/user`, { headers: { authorization: 'Basic dXNlcjpwYXNz' } });
  assert.deepEqual([basicOnly.status, basicOnly.json.error_description], [400, 'The access token was not found']);

  const bad = await me('0'.repeat(40));
  assert.deepEqual([bad.status, bad.json.error, bad.json.error_description], [401, 'invalid_token', 'The access token provided is invalid.']);
  assert.match(bad.headers.get('www-authenticate') ?? '', /^Bearer .*error="invalid_token"/);
});

test('GET /v1/access_tokens/current describes the token; expired tokens are 401', async () => {
  const { token, username } = await account();
  const current = await raw(`${server.url}/v1/access_tokens/current`, { token });
  assert.equal(current.status, 200);
  assert.deepEqual(current.json, {
    expires_at: new Date(clock.now().getTime() + 3600_000).toISOString(),
    client: 'particle-api',
    client_id: 'particle-api',
    scopes: [],
    orgs: [],
  });

  const forever = await raw(`${server.url}/oauth/token`, {
    method: 'POST',
    form: { grant_type: 'password', username, password: PASSWORD, expires_in: '0', client_id: 'particle-cli', client_secret: 'particle-cli' },
  });
  const foreverCurrent = await raw(`${server.url}/v1/access_tokens/current`, { token: forever.json.access_token });
  assert.deepEqual(foreverCurrent.json, { expires_at: null, client: 'particle-cli', client_id: 'particle-cli', scopes: [], orgs: [] });

  clock.advance(3600_000);
  const expired = await raw(`${server.url}/v1/access_tokens/current`, { token });
  assert.deepEqual([expired.status, expired.json.error, expired.json.error_description], [401, 'invalid_token', 'The access token provided has expired.']);
  assert.equal((await raw(`${server.url}/v1/access_tokens/current`, { token: forever.json.access_token })).status, 200);
});

test('deleteCurrentAccessToken revokes only the token of the request', async () => {
  const { api, token, newToken } = await account();
  const other = await newToken();
  const out = await api.deleteCurrentAccessToken({ auth: token });
  assert.deepEqual([out.statusCode, out.body], [200, { ok: true }]);
  const gone = await me(token);
  assert.deepEqual([gone.status, gone.json.error], [401, 'invalid_token']);
  assert.equal((await me(other)).status, 200);
  assert.equal((await raw(`${server.url}/v1/access_tokens/current`, { method: 'DELETE', token })).status, 401, 'twice');
});

test("DELETE /v1/access_tokens revokes every token of the account, the caller's included, and no one else's", async () => {
  const { api, token, newToken } = await account();
  const second = await newToken();
  const client = (await api.createOAuthClient({ name: 'back end', auth: token })).body.client;
  const ownerToken = (await particle(server.url, { clientId: client.id, clientSecret: client.secret }).loginAsClientOwner()).body.access_token as string;
  const stranger = await account();

  const out = await api.deleteActiveAccessTokens({ auth: second });
  assert.deepEqual([out.statusCode, out.body], [200, { ok: true }]);
  for (const t of [token, second, ownerToken]) assert.equal((await me(t)).status, 401);
  assert.equal((await me(stranger.token)).status, 200);
  // The client itself survives and can get a new token.
  assert.equal((await particle(server.url, { clientId: client.id, clientSecret: client.secret }).loginAsClientOwner()).statusCode, 200);
});

test('deleteAccessToken({token}): the token in the path is the credential', async () => {
  const { token, newToken } = await account();
  const victim = await newToken();
  // No auth on this instance: particle-api-js sends no Authorization header.
  const anonymous = particle(server.url);
  const out = await anonymous.deleteAccessToken({ token: victim });
  assert.deepEqual([out.statusCode, out.body], [200, { ok: true }]);
  const gone = await me(victim);
  assert.deepEqual([gone.status, gone.json.error], [401, 'invalid_token']);
  assert.equal((await me(token)).status, 200, 'the other tokens of the account stay');

  const again = await anonymous.deleteAccessToken({ token: victim }).catch((e: { statusCode: number; body: { error: string } }) => e);
  assert.deepEqual([again.statusCode, again.body.error], [401, 'invalid_token']);
  const unknown = await raw(`${server.url}/v1/access_tokens/${'a'.repeat(40)}`, { method: 'DELETE' });
  assert.deepEqual([unknown.status, unknown.json.error], [401, 'invalid_token']);
});
