import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { email, manualClock, startTestServer, type TestServer } from './helpers/server.js';
import { basic, raw, type RawInit, type RawResponse } from './helpers/http.js';
import { newProduct, signUp } from './helpers/fixtures.js';
import { openEventStream, type EventStream } from './helpers/sse.js';
import { eventually } from './helpers/eventually.js';
import mqtt from 'mqtt';

/**
 * Per-address limits on request volume (docs/security.md, "Limits on request volume"): all
 * requests (RATE_LIMIT_REQUESTS), event streams opened (RATE_LIMIT_EVENT_STREAMS) and open at
 * once (RATE_LIMIT_OPEN_STREAMS), token creation (RATE_LIMIT_TOKENS), in windows of
 * RATE_LIMIT_WINDOW_SECONDS aligned to the clock. Time moves with the injected clock. Requests
 * come from the address the test names (inject's remote address, or a loopback address the
 * socket binds to for event streams).
 */

const WINDOW_MS = 300_000;
/** Ten seconds into a window: its answers say 290 s to go. */
const windowStart = () => new Date(Math.floor(Date.now() / WINDOW_MS) * WINDOW_MS + 10_000);
const OFF = { RATE_LIMIT_REQUESTS: '0', RATE_LIMIT_EVENT_STREAMS: '0', RATE_LIMIT_OPEN_STREAMS: '0', RATE_LIMIT_TOKENS: '0' };

const servers: TestServer[] = [];
const streams: EventStream[] = [];
after(async () => {
  for (const s of streams) s.close();
  await Promise.all(servers.map((s) => s.close()));
});

async function start(env: Record<string, string>) {
  const clock = manualClock(windowStart());
  const server = await startTestServer({ clock, env: { ...OFF, ...env } });
  servers.push(server);
  return { server, clock };
}

const METADATA = '/.well-known/oauth-authorization-server';
const get = (server: TestServer, from: string, path = METADATA, init: RawInit = {}) => raw(`${server.url}${path}`, { ...init, from });

/** The draft's headers of an answer: [limit, remaining, reset]. */
function rateLimit(r: RawResponse): [number, number, number] | null {
  const limit = r.headers.get('ratelimit-limit');
  if (limit === null) return null;
  return [Number(limit), Number(r.headers.get('ratelimit-remaining')), Number(r.headers.get('ratelimit-reset'))];
}

/** A 429 of the catalogue with Retry-After and the draft's headers; answers Retry-After. */
function isLimited(r: RawResponse, limit: number, label: string): number {
  assert.equal(r.status, 429, `${label}: ${r.text}`);
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/, label);
  assert.equal(r.json?.ok, false, label);
  assert.equal(r.json?.error, 'rate_limit_exceeded', label);
  assert.match(r.json?.error_description, /^Too many .* from this address/, label);
  assert.ok(r.headers.get('x-request-id'), `${label}: the request id`);
  const retryAfter = Number(r.headers.get('retry-after'));
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1, `${label}: Retry-After ${r.headers.get('retry-after')}`);
  const [max, remaining, reset] = rateLimit(r) ?? [NaN, NaN, NaN];
  assert.deepEqual([max, remaining], [limit, 0], `${label}: RateLimit-Limit and -Remaining`);
  assert.equal(reset, retryAfter, `${label}: RateLimit-Reset is Retry-After`);
  return retryAfter;
}

test('all requests: over RATE_LIMIT_REQUESTS an address gets 429 with the error body, Retry-After and RateLimit-* headers; allowed answers carry the headers; another address, /healthz and /metrics are not affected', async () => {
  const { server } = await start({ RATE_LIMIT_REQUESTS: '5', METRICS: 'open' });
  const a = '203.0.113.1';
  for (let i = 1; i <= 5; i++) {
    const r = await get(server, a);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(rateLimit(r), [5, 5 - i, 290], `request ${i}`);
  }
  assert.equal(isLimited(await get(server, a), 5, 'the sixth'), 290);
  isLimited(await get(server, a, '/v1/user'), 5, 'any route, before its token is looked at');
  isLimited(await get(server, a, '/no/such/path'), 5, 'a path no route serves');
  isLimited(await get(server, a, '/oauth/token', { method: 'POST', form: { grant_type: 'password' } }), 5, 'a form post');

  const b = await get(server, '198.51.100.1');
  assert.equal(b.status, 200, 'another address');
  assert.deepEqual(rateLimit(b), [5, 4, 290]);

  const health = await get(server, a, '/healthz');
  assert.equal(health.status, 200, 'probes see the truth');
  assert.equal(rateLimit(health), null, '/healthz is not counted');
  const metrics = await get(server, a, '/metrics');
  assert.equal(metrics.status, 200, 'scrapes too');
  assert.equal(rateLimit(metrics), null);
  assert.match(metrics.text, /^skyport_rate_limited_total\{limit="requests"\} 4$/m, 'the refusals, counted by limit');
});

test('the window ends at the next multiple of RATE_LIMIT_WINDOW_SECONDS: refused until the injected clock passes it, counted from zero after', async () => {
  const { server, clock } = await start({ RATE_LIMIT_REQUESTS: '2' });
  const a = '203.0.113.2';
  await get(server, a);
  await get(server, a);
  isLimited(await get(server, a), 2, 'over the limit');
  clock.advance(289_000);
  assert.equal(isLimited(await get(server, a), 2, 'a second before the end'), 1);
  clock.advance(1_000);
  const next = await get(server, a);
  assert.equal(next.status, 200, next.text);
  assert.deepEqual(rateLimit(next), [2, 1, 300], 'a new window, the whole of it to go');
});

test('addresses are counted as the library folds them: an IPv4-mapped IPv6 address is its IPv4 address, IPv6 counts per /64', async () => {
  const { server } = await start({ RATE_LIMIT_REQUESTS: '2' });
  await get(server, '203.0.113.3');
  await get(server, '::ffff:203.0.113.3');
  isLimited(await get(server, '203.0.113.3'), 2, 'the IPv4 address, counted twice');
  await get(server, '2001:db8:1:2::1');
  await get(server, '2001:db8:1:2:ffff:ffff:ffff:5');
  isLimited(await get(server, '2001:db8:1:2:aaaa::9'), 2, 'the same /64');
  assert.equal((await get(server, '2001:db8:1:3::1')).status, 200, 'the next /64');
});

test('token creation: POST /oauth/token of every grant, granted or not, and customer creation with client credentials count against RATE_LIMIT_TOKENS; a customer created with a team token does not', async () => {
  const { server } = await start({ RATE_LIMIT_REQUESTS: '1000', RATE_LIMIT_TOKENS: '4' });
  // Set up from another address (127.0.0.1, the test's own): an account, a product, its clients.
  const owner = await signUp(server.url);
  const product = await newProduct(server.url, owner.token);
  const client = await raw(`${server.url}/v1/products/${product.id}/clients`, { method: 'POST', token: owner.token, json: { name: 'server' } });
  assert.equal(client.status, 201, client.text);
  const { id, secret } = client.json.client as { id: string; secret: string };

  const a = '203.0.113.4';
  const token = (form: Record<string, string>, headers: Record<string, string> = {}) => raw(`${server.url}/oauth/token`, { method: 'POST', form, headers, from: a });
  const customer = (from = a) => raw(`${server.url}/v1/products/${product.id}/customers`, { method: 'POST', headers: { authorization: basic(id, secret) }, form: { email: email('customer'), no_password: 'true' }, from });

  const granted = await token({ grant_type: 'client_credentials' }, { authorization: basic(id, secret) });
  assert.equal(granted.status, 200, granted.text);
  assert.deepEqual(rateLimit(granted), [4, 3, 290], 'the tighter limit is the one the headers tell');
  const refused = await token({ grant_type: 'password', username: owner.username, password: 'wrong horse', client_id: 'particle-api', client_secret: 'particle-api' });
  assert.equal(refused.status, 400, 'a wrong password counts as well');
  assert.deepEqual(rateLimit(refused), [4, 2, 290]);
  const made = await customer();
  assert.equal(made.status, 201, made.text);
  assert.ok(made.json.access_token, 'customer creation with client credentials answers a token');
  assert.deepEqual(rateLimit(made), [4, 1, 290]);
  assert.equal((await token({ grant_type: 'refresh_token', refresh_token: String(granted.json.refresh_token) }, { authorization: basic(id, secret) })).status, 200);

  isLimited(await token({ grant_type: 'client_credentials' }, { authorization: basic(id, secret) }), 4, 'the fifth token request');
  isLimited(await customer(), 4, 'customer creation with client credentials');
  const byTeam = await raw(`${server.url}/v1/products/${product.id}/customers`, { method: 'POST', token: owner.token, json: { email: email('by-team'), no_password: true }, from: a });
  assert.equal(byTeam.status, 201, `a team token creates a customer record, not a token: ${byTeam.text}`);
  assert.deepEqual(rateLimit(byTeam), [1000, 1000 - 7, 290], 'only the limit on all requests');
  const read = await get(server, a, '/v1/user', { token: owner.token });
  assert.equal(read.status, 200, 'other routes go on');
  assert.equal((await customer('198.51.100.4')).status, 201, 'another address');
});

test('sign-up counts with token creation: one address cannot keep the server hashing passwords', async () => {
  const { server } = await start({ RATE_LIMIT_REQUESTS: '1000', RATE_LIMIT_TOKENS: '2' });
  const a = '203.0.113.9';
  const signUpFrom = (from: string) => raw(`${server.url}/v1/users`, { method: 'POST', json: { username: email('signup'), password: 'a long password' }, from });
  assert.equal((await signUpFrom(a)).status, 201);
  const second = await signUpFrom(a);
  assert.equal(second.status, 201, second.text);
  assert.deepEqual(rateLimit(second), [2, 0, 290]);
  isLimited(await signUpFrom(a), 2, 'the third sign-up');
  assert.equal((await signUpFrom('198.51.100.9')).status, 201, 'another address');
});

test('event streams: opening one counts against RATE_LIMIT_EVENT_STREAMS, on every stream route, granted or not', async () => {
  const { server } = await start({ RATE_LIMIT_EVENT_STREAMS: '3' });
  const owner = await signUp(server.url);
  const product = await newProduct(server.url, owner.token);
  const from = '127.0.0.2';
  const open = (path: string, token = owner.token) => raw(`${server.url}${path}`, { token, from });
  const first = await open('/v1/devices/events');
  assert.equal(first.status, 200, first.text);
  assert.equal(first.text, ':ok\n\n');
  assert.deepEqual(rateLimit(first), [3, 2, 290], 'a stream carries the headers too');
  assert.equal((await open(`/v1/products/${product.id}/events/temp`)).status, 200, "a product's stream");
  assert.equal((await open('/v1/devices/events', 'not-a-token')).status, 401, 'a refused one counts too');
  isLimited(await open('/v1/devices/events'), 3, 'the fourth');
  isLimited(await open(`/v1/products/${product.id}/devices/0123456789abcdef01234567/events`), 3, 'any stream route');
  const published = await raw(`${server.url}/v1/devices/events`, { method: 'POST', token: owner.token, json: { name: 'temp', data: '21' }, from });
  assert.equal(published.status, 200, 'publishing is no stream');
  assert.equal((await raw(`${server.url}/v1/devices/events`, { token: owner.token, from: '127.0.0.3' })).status, 200, 'another address');
});

test('open streams at once: over RATE_LIMIT_OPEN_STREAMS refused while they are open, allowed again once one closes', async () => {
  const { server } = await start({ RATE_LIMIT_OPEN_STREAMS: '2' });
  const owner = await signUp(server.url);
  const from = '127.0.0.4';
  const url = `${server.url}/v1/devices/events`;
  const first = await openEventStream(url, owner.token, { from });
  streams.push(first, await openEventStream(`${url}/temp`, owner.token, { from }));
  const third = await raw(url, { token: owner.token, from });
  assert.equal(isLimited(third, 2, 'a third stream open at once'), 30);
  assert.match(third.json.error_description, /at most 2 at once/);
  streams.push(await openEventStream(url, owner.token, { from: '127.0.0.5' }));
  first.close();
  const again = await eventually(async () => {
    const r = await raw(url, { token: owner.token, from });
    return r.status === 200 ? r : undefined;
  }, 5000, 'a stream allowed once one of the two closed');
  assert.equal(again.text, ':ok\n\n');
});

test('0 turns each limit off: no count, no header', async () => {
  const { server } = await start({});
  const owner = await signUp(server.url);
  const made = await raw(`${server.url}/v1/clients`, { method: 'POST', token: owner.token, json: { name: 'back-end' } });
  const { id, secret } = made.json.client as { id: string; secret: string };
  const from = '203.0.113.6';
  for (let i = 0; i < 120; i++) {
    const r = await get(server, from, '/oauth/token', { method: 'POST', form: { grant_type: 'client_credentials' }, headers: { authorization: basic(id, secret) } });
    assert.equal(r.status, 200, `token ${i}: ${r.text}`);
    assert.equal(rateLimit(r), null);
  }
  for (let i = 0; i < 3; i++) streams.push(await openEventStream(`${server.url}/v1/devices/events`, owner.token, { from: '127.0.0.6' }));
  assert.equal(rateLimit(await get(server, from)), null);
});

test('behind a proxy TRUST_PROXY names, X-Forwarded-For decides the address (its right-most entry not of a proxy); without it, a spoofed X-Forwarded-For changes nothing', async () => {
  const { server: proxied } = await start({ RATE_LIMIT_REQUESTS: '2', TRUST_PROXY: '10.0.0.5' });
  const proxy = '10.0.0.5';
  const via = (forwarded: string, from = proxy) => get(proxied, from, METADATA, { headers: { 'x-forwarded-for': forwarded } });
  await via('203.0.113.7');
  await via('203.0.113.7');
  isLimited(await via('203.0.113.7'), 2, 'the client the proxy names');
  assert.equal((await via('203.0.113.8')).status, 200, 'another client behind the same proxy');
  isLimited(await via('198.51.100.99, 203.0.113.7'), 2, 'what the client wrote to the left of it counts for nothing');
  assert.equal((await via('203.0.113.7, 203.0.113.9')).status, 200, 'the right-most address not of a proxy');
  await via('203.0.113.10', '192.0.2.1');
  await via('203.0.113.11', '192.0.2.1');
  isLimited(await via('203.0.113.12', '192.0.2.1'), 2, 'a sender that is not a named proxy is counted as itself');

  const { server: direct } = await start({ RATE_LIMIT_REQUESTS: '2' });
  const spoofed = (forwarded: string) => get(direct, '203.0.113.13', METADATA, { headers: { 'x-forwarded-for': forwarded } });
  await spoofed('198.51.100.1');
  await spoofed('198.51.100.2');
  isLimited(await spoofed('198.51.100.3'), 2, 'without TRUST_PROXY, X-Forwarded-For is not read');
});

test("MQTT over WebSocket takes the device's address by the same rule: failed connects count under the right-most X-Forwarded-For entry not of a named proxy", async () => {
  const { server } = await start({ TRUST_PROXY: 'loopback', MQTT_WS_PORT: '0', IP_MAX_FAILURES: '3' });
  assert.ok(server.wsUrl);
  /** The CONNACK code of a connect with a wrong secret, sent through the "proxy" with this X-Forwarded-For. */
  const wrongSecret = (forwarded: string) => new Promise<number>((resolve) => {
    const client = mqtt.connect(server.wsUrl as string, {
      clientId: '0123456789abcdef01234567', username: '0123456789abcdef01234567', password: 'wrong', reconnectPeriod: 0,
      wsOptions: { headers: { 'x-forwarded-for': forwarded } },
    });
    client.once('connect', () => { client.end(true); resolve(0); });
    client.once('error', (err) => { client.end(true); resolve(Number((err as { code?: number }).code)); });
  });
  const codes: number[] = [];
  for (let i = 0; i < 4; i++) codes.push(await wrongSecret(`198.51.100.${i}, 203.0.113.80`));
  assert.deepEqual(codes.slice(0, 2), [4, 4], 'bad user name or password');
  assert.equal(codes[3], 5, 'not authorized: the address the proxy named is over IP_MAX_FAILURES, whatever the client wrote before it');
  assert.equal(await wrongSecret('203.0.113.81'), 4, 'another address behind the same proxy');
});
