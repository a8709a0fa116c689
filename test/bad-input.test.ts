import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, email, type TestServer } from './helpers/server.js';
import { particle } from './helpers/particle.js';
import { basic, raw, type RawResponse } from './helpers/http.js';

let server: TestServer;
let username: string;
let token: string;
before(async () => {
  server = await startTestServer({ env: { BODY_LIMIT_BYTES: '4096' } });
  username = email();
  await particle(server.url).createUser({ username, password: 'correct horse' });
  token = (await particle(server.url).login({ username, password: 'correct horse' })).body.access_token;
});
after(async () => { await server.close(); });

function isClearError(r: RawResponse, status: number, label: string): void {
  assert.equal(r.status, status, `${label}: ${r.text}`);
  assert.equal(typeof r.json?.error, 'string', `${label}: JSON error body`);
  assert.equal(typeof r.json?.error_description, 'string', `${label}: says what is wrong`);
}

const creds = { client_id: 'particle-api', client_secret: 'particle-api' };

test('/oauth/token refuses what it cannot take, with RFC 6749 bodies', async () => {
  const url = `${server.url}/oauth/token`;
  const cases: Array<[string, RequestInit & { form?: Record<string, string>; json?: unknown }, number, string?]> = [
    ['JSON body', { method: 'POST', json: { grant_type: 'password', username, password: 'correct horse', ...creds } }, 400, 'invalid_request'],
    ['XML body', { method: 'POST', body: '<x/>', headers: { 'content-type': 'text/xml' } }, 400, 'invalid_request'],
    ['no grant_type', { method: 'POST', form: { ...creds } }, 400, 'invalid_request'],
    ['unknown grant', { method: 'POST', form: { grant_type: 'implicit', ...creds } }, 400, 'unsupported_grant_type'],
    ['no username', { method: 'POST', form: { grant_type: 'password', password: 'x', ...creds } }, 400, 'invalid_client'],
    ['no client', { method: 'POST', form: { grant_type: 'password', username, password: 'correct horse' } }, 400, 'invalid_client'],
    ['no secret', { method: 'POST', form: { grant_type: 'password', username, password: 'correct horse', client_id: 'particle-api' } }, 400, 'invalid_client'],
    ['bad client id shape', { method: 'POST', form: { grant_type: 'password', username, password: 'correct horse', client_id: 'no spaces!', client_secret: 'x' } }, 400, 'invalid_client'],
    ['doubled credentials', { method: 'POST', form: { grant_type: 'password', username, password: 'correct horse', ...creds }, headers: { authorization: basic('particle-api', 'particle-api') } }, 400, 'invalid_request'],
    ['malformed Basic', { method: 'POST', form: { grant_type: 'client_credentials' }, headers: { authorization: 'Basic !!!' } }, 400, 'invalid_client'],
    ['huge password', { method: 'POST', form: { grant_type: 'password', username, password: 'x'.repeat(3000), ...creds } }, 400, 'invalid_request'],
    ['expires_in negative', { method: 'POST', form: { grant_type: 'password', username, password: 'correct horse', expires_in: '-1', ...creds } }, 400, 'invalid_request'],
    ['expires_in text', { method: 'POST', form: { grant_type: 'password', username, password: 'correct horse', expires_in: 'abc', ...creds } }, 400, 'invalid_request'],
    ['expires_at past', { method: 'POST', form: { grant_type: 'password', username, password: 'correct horse', expires_at: '2001-01-01T00:00:00Z', ...creds } }, 400, 'invalid_request'],
    ['expires_at junk', { method: 'POST', form: { grant_type: 'password', username, password: 'correct horse', expires_at: 'soon', ...creds } }, 400, 'invalid_request'],
    ['NUL in username', { method: 'POST', form: { grant_type: 'password', username: 'a\u0000b@x.com', password: 'correct horse', ...creds } }, 400, 'invalid_request'],
  ];
  for (const [label, init, status, code] of cases) {
    const r = await raw(url, init);
    isClearError(r, status, label);
    if (code) assert.equal(r.json.error, code, label);
  }
  const doubled = await raw(url, { method: 'POST', body: 'grant_type=password&grant_type=client_credentials', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  isClearError(doubled, 400, 'grant_type twice');
});

test('resource routes: malformed JSON, wrong types, content types, sizes, NULs; nothing is changed', async () => {
  const before = (await raw(`${server.url}/v1/user`, { token })).json;
  const put = (init: RequestInit & { json?: unknown }) => raw(`${server.url}/v1/user`, { method: 'PUT', token, ...init });
  const cases: Array<[string, Promise<RawResponse>, number]> = [
    ['malformed JSON', put({ body: '{"account_info":', headers: { 'content-type': 'application/json' } }), 400],
    ['JSON array', put({ json: [1, 2] }), 400],
    ['JSON string', put({ json: 'x' }), 400],
    ['wrong type', put({ json: { account_info: 'x' } }), 400],
    ['number for a string', put({ json: { username: 123, current_password: 'correct horse' } }), 400],
    ['unknown content type', put({ body: 'x', headers: { 'content-type': 'application/octet-stream' } }), 415],
    ['too large', put({ json: { account_info: { first_name: 'x'.repeat(5000) } } }), 413],
    ['NUL in JSON', put({ json: { account_info: { first_name: 'a\u0000b' } } }), 400],
    ['NUL in the query', raw(`${server.url}/v1/user?x=%00`, { token }), 400],
    ['empty JSON body', put({ body: '', headers: { 'content-type': 'application/json' } }), 400],
    ['token of 5000 characters', raw(`${server.url}/v1/user`, { token: 'a'.repeat(5000) }), 401],
    ['unknown route', raw(`${server.url}/v1/nothing-here`, { token }), 404],
  ];
  for (const [label, pending, status] of cases) isClearError(await pending, status, label);
  assert.deepEqual((await raw(`${server.url}/v1/user`, { token })).json, before, 'a refused request changes nothing');
});

test('sign-up and clients: bad fields are named; quotes and unicode are stored exactly', async () => {
  const signUp = (json: unknown) => raw(`${server.url}/v1/users`, { method: 'POST', json });
  isClearError(await signUp({ username: 'not an email', password: 'correct horse' }), 400, 'not an e-mail');
  isClearError(await signUp({ username: `${'a'.repeat(300)}@x.com`, password: 'correct horse' }), 400, 'long username');
  isClearError(await signUp({ username: email(), password: 12345678 }), 400, 'numeric password');
  isClearError(await signUp({ password: 'correct horse' }), 400, 'missing username');
  const ghost = email();
  isClearError(await signUp({ username: ghost, password: 'correct horse', account_info: { first_name: 7 } }), 400, 'bad account_info');
  const login = await raw(`${server.url}/oauth/token`, { method: 'POST', form: { grant_type: 'password', username: ghost, password: 'correct horse', ...creds } });
  assert.equal(login.status, 400, 'the refused sign-up made no account');

  const client = (json: unknown) => raw(`${server.url}/v1/clients`, { method: 'POST', token, json });
  isClearError(await client({ name: 'x'.repeat(101) }), 400, 'long name');
  isClearError(await client({ name: 'w', type: 'web', redirect_uri: 'not a url' }), 400, 'bad redirect');
  isClearError(await client({ name: 'w', type: 'web', redirect_uri: 'https://x.example/#frag' }), 400, 'fragment');
  isClearError(await client({ name: 'w', scope: 'everything' }), 400, 'bad scope');
  isClearError(await client({ name: 'w', type: 'desktop' }), 400, 'bad type');
  isClearError(await client({ name: ['a'] }), 400, 'array name');
  const odd = `Bob's "quoted" app; DROP TABLE users; -- 日本 🚀`;
  const made = await client({ name: odd });
  assert.equal(made.status, 201);
  assert.equal(made.json.client.name, odd);
  const listed = (await raw(`${server.url}/v1/clients`, { token })).json.clients;
  assert.ok(listed.some((c: { name: string }) => c.name === odd));
});
