import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { loadSettings } from '../src/config/settings.js';
import pino from 'pino';
import { lazyChildLogger, loggerOptions, redactUrl } from '../src/http/logging.js';
import { createSkyport, type Skyport } from '../src/main.js';
import { createSecrets } from '../src/platform/secrets.js';
import { migrate } from '../src/storage/migrate.js';
import { email, freshStore, type TestStore } from './helpers/server.js';
import { basic, raw } from './helpers/http.js';

/**
 * Secrets never reach the logs: passwords, access and refresh tokens, client secrets, MFA
 * tokens, wherever the client put them (body, Authorization header, query, path). The log is
 * captured from a real Skyport whose pino logger writes to memory.
 */

let store: TestStore;
let skyport: Skyport;
let url: string;
let captured = '';
const secrets: Array<[string, string]> = [];
const requestIds: string[] = [];

const PASSWORD = 'Tr0ub4dor&3-correct-horse';
const creds = { client_id: 'particle-api', client_secret: 'particle-api' };

before(async () => {
  store = await freshStore();
  const db = await store.open();
  await migrate(db);
  // Trace: the most a production log could ever say.
  const settings = loadSettings({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'trace', ...store.settings });
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      captured += chunk.toString('utf8');
      done();
    },
  });
  const base = loggerOptions(settings);
  assert.ok(base && typeof base === 'object', 'loggerOptions gives a pino options object');
  skyport = await createSkyport(settings, { db, secrets: createSecrets({ fastPasswordHashing: true }), logger: { ...base, stream } });
  await skyport.app.listen({ host: '127.0.0.1', port: 0 });
  const address = skyport.app.server.address();
  url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});

after(async () => {
  await skyport.close();
  await store.drop();
});

/** Records a secret to look for, and the request id of every answer. */
function keep(label: string, value: unknown): string {
  assert.equal(typeof value, 'string', `${label} is a string`);
  secrets.push([label, value as string]);
  return value as string;
}

async function call(path: string, init: Parameters<typeof raw>[1] = {}) {
  const r = await raw(`${url}${path}`, init);
  const id = r.headers.get('x-request-id');
  assert.ok(id, `${path}: x-request-id header`);
  requestIds.push(id);
  return r;
}

test('no secret reaches the log, while request ids do', async () => {
  const username = email('logged');
  keep('password', PASSWORD);
  assert.equal((await call('/v1/users', { method: 'POST', json: { username, password: PASSWORD } })).status, 201);

  // Password login, form-encoded as the clients send it.
  const login = async () => {
    const r = await call('/oauth/token', { method: 'POST', form: { grant_type: 'password', username, password: PASSWORD, ...creds } });
    assert.equal(r.status, 200, r.text);
    return r.json.access_token as string;
  };
  const headerToken = keep('access token (header)', await login());
  const queryToken = keep('access token (query)', await login());
  const encodedQueryToken = keep('access token (encoded query name)', await login());
  const bodyToken = keep('access token (body)', await login());
  const pathToken = keep('access token (path)', await login());
  const encodedPathToken = keep('access token (encoded path)', await login());
  const trailingSlashToken = keep('access token (path, trailing slash)', await login());

  assert.equal((await call('/v1/user', { token: headerToken })).status, 200);
  assert.equal((await call(`/v1/user?access_token=${queryToken}`)).status, 200);
  assert.equal((await call(`/v1/user?per_page=1&access%5Ftoken=${encodedQueryToken}`)).status, 200, 'the query parser decodes the name');
  assert.equal((await call('/v1/user', { method: 'PUT', form: { access_token: bodyToken, invalidate_tokens: 'false', 'account_info[x]': 'y' } })).status, 400);
  assert.equal((await call(`/v1/access_tokens/${pathToken}`, { method: 'DELETE' })).status, 200);
  assert.equal((await call(`/v1/access%5Ftokens/${encodedPathToken}`, { method: 'DELETE' })).status, 200, 'the router decodes the path');
  assert.equal((await call(`/v1/access_tokens/${trailingSlashToken}/`, { method: 'DELETE' })).status, 200);
  assert.equal((await call(`/v1/user?access_token=${pathToken}`)).status, 401, 'a revoked token, refused');

  // A wrong password and a refused garbage token are logged, without the values.
  const wrong = keep('wrong password', 'Wr0ng-horse-battery-staple');
  assert.equal((await call('/oauth/token', { method: 'POST', form: { grant_type: 'password', username, password: wrong, ...creds } })).status, 400);
  const garbage = keep('garbage token', 'f00dfeedf00dfeedf00dfeedf00dfeedf00dfeed');
  assert.equal((await call('/v1/user', { token: garbage })).status, 401);
  assert.equal((await call(`/v1/user?access_token=${garbage}&otp=123456`)).status, 401);

  // A client secret, used in the body and with Basic; a refresh token from a product client.
  const made = await call('/v1/user/products', { method: 'POST', token: headerToken, json: { product: { name: 'Logged product', platform_id: 13 } } });
  assert.equal(made.status, 201, made.text);
  const client = await call(`/v1/products/${made.json.product.id}/clients`, { method: 'POST', token: headerToken, json: { name: 'logged server' } });
  assert.equal(client.status, 201, client.text);
  const clientId = client.json.client.id as string;
  const clientSecret = keep('client secret', client.json.client.secret);
  const cc = await call('/oauth/token', { method: 'POST', form: { grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret } });
  assert.equal(cc.status, 200, cc.text);
  keep('product access token', cc.json.access_token);
  const refreshToken = keep('refresh token', cc.json.refresh_token);
  const refreshed = await call('/oauth/token', { method: 'POST', form: { grant_type: 'refresh_token', refresh_token: refreshToken }, headers: { authorization: basic(clientId, clientSecret) } });
  assert.equal(refreshed.status, 200, refreshed.text);
  keep('refreshed access token', refreshed.json.access_token);
  keep('second refresh token', refreshed.json.refresh_token);
  assert.equal((await call(`/oauth/token?client_secret=${clientSecret}&refresh_token=${refreshToken}`, { method: 'POST', form: { grant_type: 'refresh_token' } })).status, 400);

  // A password change puts both passwords in a body.
  const newPassword = keep('new password', 'N3w-horse-battery-staple');
  assert.equal((await call('/v1/user', { method: 'PUT', token: headerToken, json: { password: newPassword, current_password: PASSWORD } })).status, 200);

  assert.ok(captured.length > 0, 'something was logged');
  const lines = captured.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  for (const [label, secret] of secrets) {
    const at = captured.indexOf(secret);
    assert.equal(at, -1, `the ${label} is in the log: …${captured.slice(Math.max(0, at - 200), at + 60)}`);
  }
  for (const id of requestIds) assert.ok(lines.some((l) => l.reqId === id), `request ${id} is in the log`);
  assert.ok(captured.includes('[redacted]'), 'URLs that carried a secret show where it was');
  // One line per request, once answered: method, route pattern, scrubbed path, status, time, id.
  const requests = lines.filter((l) => l.msg === 'request');
  for (const id of requestIds) assert.equal(requests.filter((l) => l.reqId === id).length, 1, `one line for request ${id}`);
  for (const l of requests) {
    assert.equal(typeof l.method, 'string');
    assert.equal(typeof l.status, 'number');
    assert.equal(typeof l.ms, 'number');
  }
  assert.ok(requests.some((l) => l.method === 'PUT' && l.route === '/v1/user' && l.status === 200), 'the route is its pattern');
  const urls = requests.map((l) => l.url).filter((u): u is string => typeof u === 'string');
  assert.ok(urls.includes('/v1/user?access_token=[redacted]'));
  assert.ok(urls.includes('/v1/access_tokens/[redacted]'));
});

test('redactUrl', () => {
  const cases: Array<[string, string]> = [
    ['/v1/user', '/v1/user'],
    ['/v1/user?page=2&per_page=10', '/v1/user?page=2&per_page=10'],
    ['/v1/user?access_token=abc', '/v1/user?access_token=[redacted]'],
    ['/v1/user?page=2&access_token=abc&per_page=3', '/v1/user?page=2&access_token=[redacted]&per_page=3'],
    ['/v1/user?ACCESS_TOKEN=abc', '/v1/user?ACCESS_TOKEN=[redacted]'],
    ['/v1/user?access%5Ftoken=abc', '/v1/user?access%5Ftoken=[redacted]'],
    ['/v1/user?access_token=', '/v1/user?access_token=[redacted]'],
    ['/v1/user?access_token', '/v1/user?access_token'],
    ['/x?client_secret=s&password=p&refresh_token=r&mfa_token=m&otp=1&recovery_code=c&token=t', '/x?client_secret=[redacted]&password=[redacted]&refresh_token=[redacted]&mfa_token=[redacted]&otp=[redacted]&recovery_code=[redacted]&token=[redacted]'],
    ['/x?a=%zz&password=%zz', '/x?a=%zz&password=[redacted]'],
    ['/v1/access_tokens/abc123', '/v1/access_tokens/[redacted]'],
    ['/v1/access_tokens/abc123/', '/v1/access_tokens/[redacted]/'],
    ['/v1/access_tokens/abc123?x=1', '/v1/access_tokens/[redacted]?x=1'],
    ['/v1/access%5Ftokens/abc123', '/v1/access%5Ftokens/[redacted]'],
    ['/V1/ACCESS_TOKENS/abc123', '/V1/ACCESS_TOKENS/[redacted]'],
    ['/v1/access_tokens//abc123', '/v1/access_tokens//[redacted]'],
    ['/v1/access_tokens/abc;x=1', '/v1/access_tokens/[redacted]'],
    ['/v1/access_tokens/current', '/v1/access_tokens/current'],
    ['/v1/access_tokens/current?access_token=abc', '/v1/access_tokens/current?access_token=[redacted]'],
    ['/v1/access_tokens', '/v1/access_tokens'],
    ['/v1/access_tokens/', '/v1/access_tokens/'],
    ['/v1/clients/abc', '/v1/clients/abc'],
  ];
  for (const [input, expected] of cases) assert.equal(redactUrl(input), expected, input);
});

test("a caller's sane x-request-id is kept and logged; anything else gets a fresh id", async () => {
  const kept = await raw(`${url}/healthz`, { headers: { 'x-request-id': 'upstream-req.42' } });
  assert.equal(kept.headers.get('x-request-id'), 'upstream-req.42');
  assert.ok(captured.includes('"reqId":"upstream-req.42"'), 'the caller id is on the log lines');
  const ids = new Set<string>();
  for (const bad of ['has space', 'x'.repeat(65), 'semi;colon', '']) {
    const r = await raw(`${url}/healthz`, { headers: { 'x-request-id': bad } });
    const id = r.headers.get('x-request-id') ?? '';
    assert.match(id, /^[\w.-]{1,64}$/, `${JSON.stringify(bad)} is replaced by a sane id`);
    assert.notEqual(id, bad);
    ids.add(id);
  }
  // An unknown route (answered before any route hook) carries an id as well.
  const missing = await raw(`${url}/v1/no-such-route`);
  assert.equal(missing.status, 404);
  ids.add(missing.headers.get('x-request-id') ?? '');
  assert.equal(ids.size, 5, 'every generated id is different');
});

test('the per-request logger writes only what the level lets through, with the request id', () => {
  let out = '';
  const stream = new Writable({ write(chunk: Buffer, _e, done) { out += chunk.toString('utf8'); done(); } });
  const parent = pino({ ...(loggerOptions({ logLevel: 'warn' }, stream) as object), level: 'warn' }, stream);
  const child = lazyChildLogger.call(undefined as never, parent, { reqId: 'r-1' }, {}, undefined as never);
  child.info({ password: 'hunter2' }, 'not at warn');
  child.debug('nor this');
  assert.equal(out, '');
  child.warn({ password: 'hunter2' }, 'slow reader');
  child.error('failed');
  const lines = out.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(lines.map((l) => [l.reqId, l.msg]), [['r-1', 'slow reader'], ['r-1', 'failed']]);
  assert.equal(lines[0]?.password, '[redacted]');
  assert.equal(child.level, 'warn');
  const grand = child.child({ extra: 1 });
  grand.error('deeper');
  assert.match(out.trim().split('\n').at(-1) ?? '', /"reqId":"r-1".*"extra":1/);
});
