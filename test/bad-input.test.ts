import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, email, type TestServer } from './helpers/server.js';
import { basic, raw, type RawResponse } from './helpers/http.js';

/**
 * Bad input: every refused request answers a 4xx JSON error that says what is wrong (never a
 * 5xx, never an empty or non-JSON body), and changes nothing that is stored.
 */

let server: TestServer;
/** A second server with a small body limit, for 413. */
let small: TestServer;
let username: string;
let token: string;
const PASSWORD = 'correct horse';
const creds = { client_id: 'particle-api', client_secret: 'particle-api' };
const FORM = 'application/x-www-form-urlencoded';

before(async () => {
  // Failed logins below must not trip the lock-out; lockout.test.ts tests that.
  server = await startTestServer({ env: { IP_MAX_FAILURES: '100000', LOGIN_MAX_FAILURES: '1000' } });
  small = await startTestServer({ env: { BODY_LIMIT_BYTES: '2048' } });
  username = email();
  assert.equal((await raw(`${server.url}/v1/users`, { method: 'POST', json: { username, password: PASSWORD } })).status, 201);
  token = (await login(server, username, PASSWORD)).json.access_token;
  assert.equal(typeof token, 'string');
});
after(async () => {
  await server.close();
  await small.close();
});

function login(s: TestServer, user: string, password: string, extra: Record<string, string> = {}): Promise<RawResponse> {
  return raw(`${s.url}/oauth/token`, { method: 'POST', form: { grant_type: 'password', username: user, password, ...creds, ...extra } });
}

/** A 4xx JSON error body that names the problem. */
function isClearError(r: RawResponse, status: number, label: string, code?: string, description?: string | RegExp): void {
  assert.ok(r.status < 500, `${label}: answered ${r.status}: ${r.text}`);
  assert.equal(r.status, status, `${label}: ${r.text}`);
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/, `${label}: content-type`);
  assert.match(r.headers.get('x-request-id') ?? '', /^[\w.-]{1,64}$/, `${label}: x-request-id`);
  assert.ok(r.json !== undefined && typeof r.json === 'object', `${label}: body parses as JSON: ${r.text}`);
  assert.equal(typeof r.json.error, 'string', `${label}: error field`);
  assert.equal(typeof r.json.error_description, 'string', `${label}: error_description field`);
  assert.ok(r.json.error_description.length > 0, `${label}: error_description says what is wrong`);
  if (code !== undefined) assert.equal(r.json.error, code, `${label}: ${r.text}`);
  if (typeof description === 'string') assert.equal(r.json.error_description, description, label);
  else if (description) assert.match(r.json.error_description, description, label);
}

async function tokensCreated(): Promise<number> {
  const r = await raw(`${server.url}/v1/user/security_events?per_page=1000`, { token });
  assert.equal(r.status, 200, r.text);
  return (r.json.events as Array<{ type: string }>).filter((e) => e.type === 'token.created').length;
}

async function profile(): Promise<unknown> {
  const r = await raw(`${server.url}/v1/user`, { token });
  assert.equal(r.status, 200, r.text);
  return r.json;
}

type Init = RequestInit & { form?: Record<string, string>; json?: unknown; token?: string };
const formBody = (body: string, headers: Record<string, string> = {}): Init => ({ method: 'POST', body, headers: { 'content-type': FORM, ...headers } });

test('/oauth/token: wrong encodings answer RFC 6749 invalid_request', async () => {
  const url = `${server.url}/oauth/token`;
  const ENCODING = 'Method must be POST with application/x-www-form-urlencoded encoding';
  const before = await tokensCreated();
  const cases: Array<[string, Init]> = [
    ['JSON body', { method: 'POST', json: { grant_type: 'password', username, password: PASSWORD, ...creds } }],
    ['text/xml body', { method: 'POST', body: '<grant_type>password</grant_type>', headers: { 'content-type': 'text/xml' } }],
    ['text/plain body', { method: 'POST', body: `grant_type=password&username=${username}`, headers: { 'content-type': 'text/plain' } }],
    ['no content type', { method: 'POST', body: 'grant_type=password' }],
  ];
  for (const [label, init] of cases) isClearError(await raw(url, init), 400, label, 'invalid_request', ENCODING);
  assert.equal(await tokensCreated(), before, 'no token was made');
});

test('/oauth/token: missing, unknown, repeated and malformed parameters', async () => {
  const url = `${server.url}/oauth/token`;
  const user = encodeURIComponent(username);
  const before = await tokensCreated();
  const cases: Array<[string, Init, string, (string | RegExp)?]> = [
    ['malformed form encoding', formBody(`grant_type=%zz%&username=%E0%A4%A&password=%&client_id=particle-api&client_secret=particle-api`), 'unsupported_grant_type'],
    ['only separators', formBody('&&&==&'), 'invalid_request', /grant_type/],
    ['empty form', formBody(''), 'invalid_request', /grant_type/],
    ['missing grant_type', { method: 'POST', form: { username, password: PASSWORD, ...creds } }, 'invalid_request', /grant_type/],
    ['empty grant_type', { method: 'POST', form: { grant_type: '', username, password: PASSWORD, ...creds } }, 'invalid_request', /grant_type/],
    ['unknown grant_type', { method: 'POST', form: { grant_type: 'implicit', ...creds } }, 'unsupported_grant_type', /grant_type/],
    ['missing username', { method: 'POST', form: { grant_type: 'password', password: PASSWORD, ...creds } }, 'invalid_client', 'Missing parameters. "username" and "password" are required'],
    ['missing password', { method: 'POST', form: { grant_type: 'password', username, ...creds } }, 'invalid_client', 'Missing parameters. "username" and "password" are required'],
    ['no client credentials', { method: 'POST', form: { grant_type: 'password', username, password: PASSWORD } }, 'invalid_client', 'Invalid or missing client_id parameter'],
    ['no client secret', { method: 'POST', form: { grant_type: 'password', username, password: PASSWORD, client_id: 'particle-api' } }, 'invalid_client', 'Missing client_secret parameter'],
    ['client credentials both in Basic and body', { method: 'POST', form: { grant_type: 'password', username, password: PASSWORD, ...creds }, headers: { authorization: basic('particle-api', 'particle-api') } }, 'invalid_request', /not both/],
    ['Basic client id, body client secret', { method: 'POST', form: { grant_type: 'password', username, password: PASSWORD, client_secret: 'particle-api' }, headers: { authorization: basic('particle-api', 'particle-api') } }, 'invalid_request'],
    ['grant_type twice', formBody(`grant_type=password&grant_type=client_credentials&username=${user}&password=x&client_id=particle-api&client_secret=particle-api`), 'invalid_request', /grant_type/],
    ['username twice', formBody(`grant_type=password&username=${user}&username=${user}&password=x&client_id=particle-api&client_secret=particle-api`), 'invalid_request', /username/],
    ['client_id twice', formBody(`grant_type=password&username=${user}&password=x&client_id=particle-api&client_id=particle-api&client_secret=particle-api`), 'invalid_request', /client_id/],
    ['malformed Basic header', { method: 'POST', form: { grant_type: 'client_credentials' }, headers: { authorization: 'Basic !!!' } }, 'invalid_client', /Basic/],
    ['Basic without a colon', { method: 'POST', form: { grant_type: 'client_credentials' }, headers: { authorization: `Basic ${Buffer.from('particle-api').toString('base64')}` } }, 'invalid_client', /Basic/],
    ['Basic with a bad escape', { method: 'POST', form: { grant_type: 'client_credentials' }, headers: { authorization: `Basic ${Buffer.from('a%zz:b').toString('base64')}` } }, 'invalid_client', /Basic/],
    ['client_id of a bad shape', { method: 'POST', form: { grant_type: 'password', username, password: PASSWORD, client_id: 'no spaces!', client_secret: 'x' } }, 'invalid_client'],
    ['client_id too short', { method: 'POST', form: { grant_type: 'client_credentials', client_id: 'ab', client_secret: 'x' } }, 'invalid_client'],
    ['client_id of 300 characters', { method: 'POST', form: { grant_type: 'client_credentials', client_id: 'a'.repeat(300), client_secret: 'x' } }, 'invalid_request', /client_id/],
    ['password of 10,000 characters', { method: 'POST', form: { grant_type: 'password', username, password: 'x'.repeat(10_000), ...creds } }, 'invalid_request', /password/],
    ['username of 1000 characters', { method: 'POST', form: { grant_type: 'password', username: `${'u'.repeat(988)}@example.com`, password: PASSWORD, ...creds } }, 'invalid_request', /username/],
    ['expires_in=-1', { method: 'POST', form: { grant_type: 'password', username, password: PASSWORD, expires_in: '-1', ...creds } }, 'invalid_request', /expires_in/],
    ['expires_in=abc', { method: 'POST', form: { grant_type: 'password', username, password: PASSWORD, expires_in: 'abc', ...creds } }, 'invalid_request', /expires_in/],
    ['expires_in=1.5', { method: 'POST', form: { grant_type: 'password', username, password: PASSWORD, expires_in: '1.5', ...creds } }, 'invalid_request', /expires_in/],
    ['expires_in huge', { method: 'POST', form: { grant_type: 'password', username, password: PASSWORD, expires_in: '99999999999999999999', ...creds } }, 'invalid_request', /expires_in/],
    ['expires_in over ten years', { method: 'POST', form: { grant_type: 'password', username, password: PASSWORD, expires_in: '9999999999', ...creds } }, 'invalid_request', /expires_in/],
    ['expires_at in the past', { method: 'POST', form: { grant_type: 'password', username, password: PASSWORD, expires_at: '2001-01-01T00:00:00Z', ...creds } }, 'invalid_request', /expires_at/],
    ['expires_at not a date', { method: 'POST', form: { grant_type: 'password', username, password: PASSWORD, expires_at: 'soon', ...creds } }, 'invalid_request', /expires_at/],
    ['expires_at impossible date', { method: 'POST', form: { grant_type: 'password', username, password: PASSWORD, expires_at: '2099-13-45T99:00:00Z', ...creds } }, 'invalid_request', /expires_at/],
    ['expires_at in year 9999', { method: 'POST', form: { grant_type: 'password', username, password: PASSWORD, expires_at: '9999-12-31T00:00:00Z', ...creds } }, 'invalid_request', /expires_at/],
    ['unknown scope', { method: 'POST', form: { grant_type: 'password', username, password: PASSWORD, scope: 'everything', ...creds } }, 'invalid_scope', /everything/],
    ['NUL in username', { method: 'POST', form: { grant_type: 'password', username: `a\u0000${username}`, password: PASSWORD, ...creds } }, 'invalid_request', /NUL/],
    ['NUL in password', { method: 'POST', form: { grant_type: 'password', username, password: `${PASSWORD}\u0000`, ...creds } }, 'invalid_request', /NUL/],
    ['mfa grant without mfa_token', { method: 'POST', form: { grant_type: 'urn:custom:mfa-otp', ...creds } }, 'invalid_request', 'You must provide otp and mfa token.'],
    ['refresh grant without refresh_token', { method: 'POST', form: { grant_type: 'refresh_token', ...creds } }, 'invalid_request', /refresh_token/],
    ['wrong password', { method: 'POST', form: { grant_type: 'password', username, password: 'wrong horse', ...creds } }, 'invalid_grant', 'User credentials are invalid'],
  ];
  for (const [label, init, code, description] of cases) {
    const r = await raw(url, init);
    isClearError(r, 400, label, code, description);
    if (code === 'invalid_client') assert.match(r.headers.get('www-authenticate') ?? '', /^Basic /, `${label}: WWW-Authenticate`);
  }
  assert.equal(await tokensCreated(), before, 'no refused token request made a token');
});

test('/oauth/token: a body over BODY_LIMIT_BYTES answers 413', async () => {
  const r = await raw(`${small.url}/oauth/token`, { method: 'POST', form: { grant_type: 'password', username, password: 'x'.repeat(4000), ...creds } });
  isClearError(r, 413, 'large form', 'payload_too_large');
});

test('resource routes: no token, a garbage token, a huge token', async () => {
  isClearError(await raw(`${server.url}/v1/user`), 400, 'no token', 'invalid_request', 'The access token was not found');
  isClearError(await raw(`${server.url}/v1/user`, { headers: { authorization: 'Bearer' } }), 400, 'empty Bearer', 'invalid_request', 'The access token was not found');
  for (const [label, bad] of [['garbage token', 'garbage'], ['token of 5000 characters', 'a'.repeat(5000)], ['token with quotes', `"'; DROP TABLE tokens; --`]] as const) {
    const r = await raw(`${server.url}/v1/user`, { token: bad });
    isClearError(r, 401, label, 'invalid_token', 'The access token provided is invalid.');
    assert.match(r.headers.get('www-authenticate') ?? '', /^Bearer .*error="invalid_token"/, `${label}: WWW-Authenticate`);
  }
  isClearError(await raw(`${server.url}/v1/user?access_token=${'a'.repeat(5000)}`), 401, 'huge query token', 'invalid_token');
  isClearError(await raw(`${server.url}/v1/user?access_token=${token}`, { token }), 400, 'token twice', 'invalid_request', /Only one method/);
  isClearError(await raw(`${server.url}/v1/user?access_token=${token}&access_token=${token}`), 400, 'query token repeated', 'invalid_request');
  // The token in the path is the credential of DELETE /v1/access_tokens/:token.
  isClearError(await raw(`${server.url}/v1/access_tokens/garbage`, { method: 'DELETE' }), 401, 'revoke garbage', 'invalid_token');
  isClearError(await raw(`${server.url}/v1/access_tokens/${'a'.repeat(300)}`, { method: 'DELETE' }), 400, 'revoke long', 'invalid_request');
  isClearError(await raw(`${server.url}/v1/access_tokens/${'a'.repeat(5000)}`, { method: 'DELETE' }), 400, 'revoke very long', 'invalid_request');
  assert.equal((await raw(`${server.url}/v1/user`, { token })).status, 200, 'the good token still works');
});

test('resource routes: malformed and mistyped bodies are refused and change nothing', async () => {
  const before = await profile();
  const put = (init: Init) => raw(`${server.url}/v1/user`, { method: 'PUT', token, ...init });
  const json = (body: string): Init => ({ body, headers: { 'content-type': 'application/json' } });
  const cases: Array<[string, Promise<RawResponse>, number, string, (string | RegExp)?]> = [
    ['malformed JSON', put(json('{"account_info":')), 400, 'invalid_request', 'The body is not valid JSON'],
    ['JSON with a trailing comma', put(json('{"account_info":{},}')), 400, 'invalid_request', 'The body is not valid JSON'],
    ['empty JSON body', put(json('')), 400, 'invalid_request', /empty/],
    ['JSON array', put({ json: [1, 2] }), 400, 'invalid_request', /body must be object/],
    ['JSON string', put({ json: 'x' }), 400, 'invalid_request', /body must be object/],
    ['JSON number', put({ json: 5 }), 400, 'invalid_request', /body must be object/],
    ['JSON null', put(json('null')), 400, 'invalid_request', /body must be object/],
    ['__proto__ key', put(json('{"__proto__":{"admin":true},"account_info":{}}')), 400, 'invalid_request'],
    ['deep nesting', put(json(`${'['.repeat(5000)}${']'.repeat(5000)}`)), 400, 'invalid_request'],
    ['account_info: "x"', put({ json: { account_info: 'x' } }), 400, 'invalid_request', /account_info/],
    ['account_info: []', put({ json: { account_info: [] } }), 400, 'invalid_request', /account_info/],
    ['account_info field of a wrong type', put({ json: { account_info: { first_name: 7 } } }), 400, 'invalid_request', /first_name/],
    ['account_info field too long', put({ json: { account_info: { first_name: 'x'.repeat(201) } } }), 400, 'invalid_request', /first_name/],
    ['account_info bad field name', put({ json: { account_info: { 'First Name': 'x' } } }), 400, 'invalid_request', /First Name/],
    ['username: 123', put({ json: { username: 123, current_password: PASSWORD } }), 400, 'invalid_request', /username/],
    ['username not an e-mail', put({ json: { username: 'not an email', current_password: PASSWORD } }), 400, 'invalid_request', /username/],
    ['password: true', put({ json: { password: true, current_password: PASSWORD } }), 400, 'invalid_request', /password/],
    ['password too short', put({ json: { password: 'short', current_password: PASSWORD } }), 400, 'invalid_request', /password/],
    ['invalidate_tokens: "maybe"', put({ json: { invalidate_tokens: 'maybe' } }), 400, 'invalid_request', /invalidate_tokens/],
    ['nothing to change', put({ json: {} }), 400, 'invalid_request', /Nothing to change/],
    ['form field of a wrong shape', put({ form: { account_info: 'x' } }), 400, 'invalid_request', /account_info/],
    ['unknown content type', put({ body: 'x', headers: { 'content-type': 'application/octet-stream' } }), 415, 'unsupported_media_type', /Content-Type/],
    ['XML', put({ body: '<user/>', headers: { 'content-type': 'application/xml' } }), 415, 'unsupported_media_type'],
    ['NUL in a JSON value', put({ json: { account_info: { first_name: 'a\u0000b' } } }), 400, 'invalid_request', /NUL/],
    ['NUL in a JSON key', put(json('{"account_info":{"a\\u0000":"x"}}')), 400, 'invalid_request', /NUL/],
    ['NUL in the query', raw(`${server.url}/v1/user?x=%00`, { token }), 400, 'invalid_request', /NUL/],
    ['lone surrogate', put(json('{"account_info":{"first_name":"\\ud800"}}')), 400, 'invalid_request', /Unicode/],
    ['bad escape in the path', raw(`${server.url}/v1/clients/%zz`, { method: 'PUT', token, json: { name: 'x' } }), 400, 'invalid_request', /percent-encoding/],
    ['too long a path segment', raw(`${server.url}/v1/products/${'p'.repeat(1000)}`, { token }), 400, 'invalid_request', /too long/],
    ['bad page', raw(`${server.url}/v1/user/security_events?page=abc`, { token }), 400, 'invalid_request', /page/],
    ['page zero', raw(`${server.url}/v1/user/security_events?page=0`, { token }), 400, 'invalid_request', /page/],
    ['DELETE without the password', raw(`${server.url}/v1/user`, { method: 'DELETE', token, json: {} }), 400, 'invalid_request', /password/],
    ['DELETE with a wrong password', raw(`${server.url}/v1/user`, { method: 'DELETE', token, json: { password: 'wrong horse' } }), 403, 'forbidden'],
  ];
  for (const [label, pending, status, code, description] of cases) isClearError(await pending, status, label, code, description);
  assert.deepEqual(await profile(), before, 'a refused request changes nothing');
});

test('a body over BODY_LIMIT_BYTES answers 413 and changes nothing', async () => {
  const user = email();
  assert.equal((await raw(`${small.url}/v1/users`, { method: 'POST', json: { username: user, password: PASSWORD } })).status, 201);
  const smallToken = (await login(small, user, PASSWORD)).json.access_token as string;
  const before = (await raw(`${small.url}/v1/user`, { token: smallToken })).json;
  isClearError(await raw(`${small.url}/v1/user`, { method: 'PUT', token: smallToken, json: { account_info: { first_name: 'x'.repeat(200), a: 'y'.repeat(3000) } } }), 413, 'large JSON', 'payload_too_large');
  isClearError(await raw(`${small.url}/v1/clients`, { method: 'POST', token: smallToken, form: { name: 'x'.repeat(5000) } }), 413, 'large form', 'payload_too_large');
  const ghost = email();
  isClearError(await raw(`${small.url}/v1/users`, { method: 'POST', json: { username: ghost, password: PASSWORD, utm: 'x'.repeat(5000) } }), 413, 'large sign-up', 'payload_too_large');
  assert.deepEqual((await raw(`${small.url}/v1/user`, { token: smallToken })).json, before);
  assert.equal((await raw(`${small.url}/v1/clients`, { token: smallToken })).json.clients.length, 0);
  isClearError(await login(small, ghost, PASSWORD), 400, 'the refused sign-up made no account', 'invalid_grant');
});

test('sign-up: bad fields are named and no account is made', async () => {
  const signUp = (body: unknown) => raw(`${server.url}/v1/users`, { method: 'POST', json: body });
  const cases: Array<[string, (user: string) => unknown, (string | RegExp)?]> = [
    ['username not an e-mail', () => ({ username: 'not an email', password: PASSWORD }), /username/],
    ['username: 123', () => ({ username: 123, password: PASSWORD }), /username/],
    ['username of 300 characters', () => ({ username: `${'a'.repeat(290)}@x.com`, password: PASSWORD }), /username/],
    ['missing username', () => ({ password: PASSWORD }), /username/],
    ['missing password', (u) => ({ username: u }), /password/],
    ['numeric password', (u) => ({ username: u, password: 12345678 }), /password/],
    ['short password', (u) => ({ username: u, password: 'short' }), /password/],
    ['password of 10,000 characters', (u) => ({ username: u, password: 'x'.repeat(10_000) }), /password/],
    ['account_info: "x"', (u) => ({ username: u, password: PASSWORD, account_info: 'x' }), /account_info/],
    ['account_info field of a wrong type', (u) => ({ username: u, password: PASSWORD, account_info: { first_name: 7 } }), /first_name/],
    ['NUL in the password', (u) => ({ username: u, password: `${PASSWORD}\u0000` }), /NUL/],
    ['NUL in account_info', (u) => ({ username: u, password: PASSWORD, account_info: { first_name: '\u0000' } }), /NUL/],
    ['an array', () => [{ username: email(), password: PASSWORD }], /body must be object/],
  ];
  for (const [label, body, description] of cases) {
    const ghost = email();
    isClearError(await signUp(body(ghost)), 400, label, 'invalid_request', description);
    isClearError(await login(server, ghost, PASSWORD), 400, `${label}: no account was made`, 'invalid_grant');
  }
  const lone = email();
  isClearError(await raw(`${server.url}/v1/users`, { method: 'POST', body: `{"username":"${lone}","password":"${PASSWORD}","account_info":{"first_name":"\\udc00"}}`, headers: { 'content-type': 'application/json' } }), 400, 'lone surrogate', 'invalid_request');
  isClearError(await login(server, lone, PASSWORD), 400, 'lone surrogate: no account was made', 'invalid_grant');
  isClearError(await raw(`${server.url}/v1/users`, { method: 'POST', body: '<user/>', headers: { 'content-type': 'text/xml' } }), 415, 'XML sign-up', 'unsupported_media_type');
  // A taken username answers 409 with errors[] (docs/particle-compatibility.md#user-accounts) and leaves the account as it was.
  const taken = await signUp({ username: username.toUpperCase(), password: 'another password' });
  isClearError(taken, 409, 'taken username', 'username_taken');
  assert.ok(Array.isArray(taken.json.errors) && taken.json.errors.length > 0, 'errors[]');
  assert.equal((await login(server, username, PASSWORD)).status, 200, 'the first account keeps its password');
});

test('quotes, unicode and emoji are accepted and stored exactly', async () => {
  const odd = `O'Brien "Bob" \\ ; DROP TABLE users; -- Zoë 日本 🚀👩‍👩‍👧`;
  const user = `zoë.🚀-${Date.now()}@exämple.com`;
  assert.equal((await raw(`${server.url}/v1/users`, { method: 'POST', json: { username: user, password: `pässwörd ${odd}`, account_info: { first_name: odd, last_name: '🚀' } } })).status, 201);
  const l = await login(server, user, `pässwörd ${odd}`);
  assert.equal(l.status, 200, l.text);
  const me = await raw(`${server.url}/v1/user`, { token: l.json.access_token });
  assert.equal(me.json.username, user);
  assert.deepEqual(me.json.account_info, { first_name: odd, last_name: '🚀' });

  const created = await raw(`${server.url}/v1/clients`, { method: 'POST', token, json: { name: odd } });
  assert.equal(created.status, 201, created.text);
  assert.equal(created.json.client.name, odd);
  assert.match(created.json.client.id, /^[a-z0-9\-_]{3,40}$/i, 'the client id stays within the wire format');
  const listed = (await raw(`${server.url}/v1/clients`, { token })).json.clients as Array<{ id: string; name: string }>;
  assert.equal(listed.find((c) => c.id === created.json.client.id)?.name, odd);
  const renamed = await raw(`${server.url}/v1/clients/${created.json.client.id}`, { method: 'PUT', token, json: { name: '🚀'.repeat(50) } });
  assert.equal(renamed.status, 200, renamed.text);
  assert.equal(renamed.json.client.name, '🚀'.repeat(50));
});

test('OAuth clients: bad fields are named and no client is made', async () => {
  const list = async () => ((await raw(`${server.url}/v1/clients`, { token })).json.clients as unknown[]).length;
  const before = await list();
  const create = (body: unknown) => raw(`${server.url}/v1/clients`, { method: 'POST', token, json: body });
  const cases: Array<[string, unknown, (string | RegExp)?]> = [
    ['no name', {}, /name/],
    ['empty name', { name: '   ' }, /name/],
    ['name: []', { name: [] }, /name/],
    ['name: 123', { name: 123 }, /name/],
    ['name of 101 characters', { name: 'x'.repeat(101) }, /name/],
    ['name of 10,000 characters', { name: 'x'.repeat(10_000) }, /name/],
    ['name of 60 emoji', { name: '🚀'.repeat(60) }, /name/],
    ['bad type', { name: 'w', type: 'desktop' }, /type/],
    ['web client without redirect_uri', { name: 'w', type: 'web' }, /redirect_uri/],
    ['redirect_uri that is not a URL', { name: 'w', type: 'web', redirect_uri: 'not a url' }, /redirect_uri/],
    ['redirect_uri with a fragment', { name: 'w', type: 'web', redirect_uri: 'https://app.example/cb#frag' }, /fragment/],
    ['redirect_uri with another scheme', { name: 'w', type: 'web', redirect_uri: 'javascript:alert(1)' }, /redirect_uri/],
    ['redirect_uri: 5', { name: 'w', type: 'web', redirect_uri: 5 }, /redirect_uri/],
    ['bad scope value', { name: 'w', scope: 'everything' }, /scope/],
    ['scope: []', { name: 'w', scope: [] }, /scope/],
    ['NUL in the name', { name: 'a\u0000b' }, /NUL/],
  ];
  for (const [label, body, description] of cases) isClearError(await create(body), 400, label, 'invalid_request', description);
  isClearError(await raw(`${server.url}/v1/clients`, { method: 'POST', token, body: 'name=a&name=b', headers: { 'content-type': FORM } }), 400, 'name twice', 'invalid_request', /name/);
  isClearError(await raw(`${server.url}/v1/clients/no-such-client-1234`, { method: 'PUT', token, json: { name: 'x' } }), 404, 'unknown client', 'not_found');
  isClearError(await raw(`${server.url}/v1/clients/${'c'.repeat(41)}`, { method: 'DELETE', token }), 400, 'client id too long', 'invalid_request');
  assert.equal(await list(), before, 'no client was made');
});

test('unknown routes answer 404 JSON', async () => {
  const cases: Array<[string, Init]> = [
    ['/v1/nothing-here', {}],
    ['/v1/nothing-here', { token }],
    ['/v1/nothing-here', { method: 'POST', json: { a: 1 } }],
    ['/v1/nothing-here', { method: 'POST', body: '<x/>', headers: { 'content-type': 'text/xml' } }],
    ['/oauth/token', {}],
    ['/v2/user', { token }],
    // `/` is the web console's page (GET); anything else there is no route.
    ['/', { method: 'POST', json: {} }],
    ['/no-such-page', {}],
  ];
  for (const [path, init] of cases) isClearError(await raw(`${server.url}${path}`, init), 404, `${init.method ?? 'GET'} ${path}`, 'not_found', /No route/);
});
