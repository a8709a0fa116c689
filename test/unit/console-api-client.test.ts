import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { api, FORM, schemaApi } from '../../console/src/lib/api-client.js';
import { ApiError } from '../../console/src/lib/api-error.js';
import { ERRORS } from '../../src/domain/errors.js';

/**
 * The console's typed client (console/src/lib/api-client.ts), against a plain HTTP server that
 * answers what each test asks and keeps what it was sent. The console calls its own origin; here
 * each call names the server with openapi-fetch's `baseUrl`.
 */
interface Seen { method: string; url: string; headers: IncomingMessage['headers']; body: string }
let server: Server;
let baseUrl: string;
let seen: Seen[] = [];
let answer: { status: number; type?: string; body?: string } = { status: 200, body: '{}' };

before(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => { body += chunk; });
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      res.writeHead(answer.status, answer.body === undefined ? {} : { 'content-type': answer.type ?? 'application/json' });
      res.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

function answering(status: number, body?: unknown, type?: string) {
  seen = [];
  answer = { status, ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }), ...(type ? { type } : {}) };
}

async function failure(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(() => assert.fail('expected the call to fail'), (e: unknown) => e);
  assert.ok(err instanceof ApiError, String(err));
  return err;
}

test('a call sends the token as a Bearer header, its path parameters encoded, and answers the JSON', async () => {
  answering(200, { ok: true, team: [{ username: 'a@example.com', role: 'owner', no_mfa: true, product_id: 1 }] });
  const r = await api('the-token').GET('/v1/products/{productIdOrSlug}/team', { baseUrl, params: { path: { productIdOrSlug: 'my fleet' } } });
  assert.equal(r.team[0]?.username, 'a@example.com');
  assert.equal(seen[0]?.method, 'GET');
  assert.equal(seen[0]?.url, '/v1/products/my%20fleet/team');
  assert.equal(seen[0]?.headers.authorization, 'Bearer the-token');
  assert.equal(seen[0]?.headers.accept, 'application/json');
});

test('query parameters and a JSON body', async () => {
  answering(201, { ok: true, devices: [{ id: 'abc', device_secret: 's' }] });
  await api('t').GET('/v1/products/{productIdOrSlug}/devices', { baseUrl, params: { path: { productIdOrSlug: 'p' }, query: { page: 2, per_page: 25, deviceId: 'e00f' } } });
  assert.equal(seen[0]?.url, '/v1/products/p/devices?page=2&per_page=25&deviceId=e00f');
  answering(201, { ok: true, devices: [{ id: 'abc', device_secret: 's' }] });
  const made = await api('t').POST('/v1/products/{productIdOrSlug}/device_identities', { baseUrl, params: { path: { productIdOrSlug: 'p' } }, body: { quantity: 1 } });
  assert.equal(made.devices[0]?.device_secret, 's');
  assert.equal(seen[0]?.headers['content-type'], 'application/json');
  assert.deepEqual(JSON.parse(seen[0]?.body ?? ''), { quantity: 1 });
});

test('a form body (the token endpoint), with the call\'s own Authorization when there is no token', async () => {
  answering(200, { token_type: 'bearer', access_token: 'at', expires_in: 900 });
  const t = await api(null).POST('/oauth/token', { baseUrl, headers: { authorization: 'Basic abc', ...FORM }, body: { grant_type: 'password', username: 'a@example.com', password: 'p w' } });
  assert.equal(t.access_token, 'at');
  assert.equal(seen[0]?.headers['content-type'], 'application/x-www-form-urlencoded');
  assert.equal(seen[0]?.headers.authorization, 'Basic abc');
  assert.equal(seen[0]?.body, 'grant_type=password&username=a%40example.com&password=p+w');
});

test('the schema client asks for the schema\'s own media type; a call may send it as its content type', async () => {
  answering(200, { type: 'object' }, 'application/schema+json');
  const schema = await schemaApi('t').GET('/v1/products/{productIdOrSlug}/config', { baseUrl, params: { path: { productIdOrSlug: 'p' } } });
  assert.deepEqual(schema, { type: 'object' });
  assert.equal(seen[0]?.headers.accept, 'application/schema+json');
  answering(200, { ok: true, message: 'Schema saved', history_version: 2, kept_aside: [] });
  await api('t').PUT('/v1/products/{productIdOrSlug}/config', { baseUrl, params: { path: { productIdOrSlug: 'p' } }, headers: { 'content-type': 'application/schema+json' }, body: { type: 'object' } });
  assert.equal(seen[0]?.headers['content-type'], 'application/schema+json');
  assert.equal(seen[0]?.body, '{"type":"object"}');
});

test('an answer without a body (204) is undefined', async () => {
  answering(204);
  const r = await api('t').DELETE('/v1/products/{productIdOrSlug}/team/{username}', { baseUrl, params: { path: { productIdOrSlug: 'p', username: 'a@example.com' } } });
  assert.equal(r, undefined);
  assert.equal(seen[0]?.url, '/v1/products/p/team/a%40example.com');
});

test('errors: the server\'s words, else the catalogue\'s, else the status; the body is kept', async () => {
  answering(403, { ok: false, error: 'mfa_required', error_description: 'Multi-factor authentication required', mfa_token: 'm' });
  const mfa = await failure(api(null).POST('/oauth/token', { baseUrl, headers: FORM, body: { grant_type: 'password' } }));
  assert.equal(mfa.status, 403);
  assert.equal(mfa.code, 'mfa_required');
  assert.equal(mfa.message, 'Multi-factor authentication required');
  assert.equal(mfa.body.mfa_token, 'm');

  answering(404, { ok: false, error: 'not_found' });
  const bare = await failure(api('t').GET('/v1/user', { baseUrl }));
  assert.equal(bare.message, ERRORS.not_found.summary);

  answering(502, '<html>Bad gateway</html>', 'text/html');
  const proxy = await failure(api('t').GET('/v1/user', { baseUrl }));
  assert.equal(proxy.code, 'http_502');
  assert.equal(proxy.message, 'The request failed.');
  assert.deepEqual(proxy.body, {});
});

test('a cloud that cannot be reached: the network error, in words', async () => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const err = await failure(api('t').GET('/v1/user', { baseUrl: `http://127.0.0.1:${port}` }));
  assert.equal(err.status, 0);
  assert.equal(err.code, 'network');
  assert.match(err.message, /could not be reached/);
});
