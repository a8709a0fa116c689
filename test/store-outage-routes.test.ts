import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import mqtt from 'mqtt';
import { startTestServer, email, type TestServer } from './helpers/server.js';
import { basic, raw, type RawResponse } from './helpers/http.js';
import { faultyDb, type FaultyDb } from './helpers/faults.js';
import { newProduct, signUp } from './helpers/fixtures.js';
import { fakeDevice, provision, type FakeDevice } from './helpers/device.js';
import { eventually } from './helpers/eventually.js';

/**
 * Whatever the route, a request that needs the store while it is unreachable answers 503
 * `service_unavailable` with Retry-After, never 500 (docs/operations.md, "When the store goes
 * away"); what the node answers from what it knows (a cached token, a connected device) goes on.
 * Every route of the OpenAPI document is sent while every statement fails as a refused
 * connection would; then the store comes back and everything answers again by itself.
 */

let server: TestServer;
let faulty: FaultyDb;
before(async () => { server = await startTestServer({ wrapDb: (db) => (faulty = faultyDb(db)) }); });
after(async () => { await server.close(); });

const url = (path: string) => `${server.url}${path}`;

test('every route answers 503 with Retry-After, or what it knows without the store, while the store is unreachable', async () => {
  const owner = await signUp(server.url);
  const product = await newProduct(server.url, owner.token);
  const created = await raw(url(`/v1/products/${product.id}/clients`), { method: 'POST', token: owner.token, json: { name: 'back end', type: 'installed' } });
  const client = created.json.client as { id: string; secret: string };
  const customer = email('customer');
  const made = await raw(url(`/v1/products/${product.id}/customers`), { method: 'POST', json: { email: customer, password: 'a long password' }, headers: { authorization: basic(client.id, client.secret) } });
  assert.equal(made.status, 201, made.text);
  const who = await provision(server.url, owner.token, product.id);
  const device: FakeDevice = await fakeDevice(server.mqttUrl, who, { functions: { led: () => 1 }, variables: { temp: ['int32', 21] } });
  // The connect's and the hello's writes drop the device's cached record once stored: wait for
  // both to show, so that the record cached below is the one that stays.
  await eventually(async () => {
    const d = (await raw(url(`/v1/devices/${who.id}`), { token: owner.token })).json as { functions?: string[]; last_ip_address?: string | null };
    return (d.functions?.includes('led') && Boolean(d.last_ip_address)) || undefined;
  }, 5_000, 'the connect and the hello stored');
  // Known to the node before the store goes: the owner's token, the device, the owner's team.
  assert.equal((await raw(url(`/v1/devices/${who.id}/led`), { method: 'POST', token: owner.token, json: { arg: 'on' } })).status, 200);
  assert.equal((await raw(url(`/v1/products/${product.id}/devices/${who.id}/temp`), { token: owner.token })).status, 200);

  const params: Record<string, string> = {
    productIdOrSlug: String(product.id), deviceId: who.id, clientId: client.id, email: customer, username: owner.username,
    token: owner.token, id: 'a-token-id', name: 'led', version: '1', prefix: 'tick',
  };
  const doc = (await raw(url('/v1/openapi.json'))).json as { paths: Record<string, Record<string, unknown>> };
  const routes = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((method) => ({ method: method.toUpperCase(), path })));
  assert.ok(routes.length > 60, `the document lists the routes (${routes.length})`);

  faulty.unreachable = true;
  // What needs no store: the device is called and read, events stream. (Before the sweep below,
  // whose writes to the device drop its cached record before they fail.)
  assert.equal((await raw(url(`/v1/devices/${who.id}/led`), { method: 'POST', token: owner.token, json: { arg: 'on' } })).status, 200);
  assert.equal((await raw(url(`/v1/products/${product.id}/devices/${who.id}/temp`), { token: owner.token })).status, 200);
  const stream = await raw(url(`/v1/products/${product.id}/events`), { token: owner.token });
  assert.equal(stream.status, 200, stream.text);

  const unexpected: string[] = [];
  const answered = new Map<number, number>();
  for (const { method, path } of routes) {
    if (path === '/healthz' || path.includes('/events')) continue; // below
    const concrete = path.replace(/\{(\w+)\}/g, (_m, p: string) => encodeURIComponent(params[p] ?? 'x'));
    const r: RawResponse = path.startsWith('/oauth/')
      ? await raw(url(concrete), { method, form: { grant_type: 'client_credentials', token: owner.token }, headers: { authorization: basic(client.id, client.secret) } })
      : await raw(url(concrete), { method, token: owner.token, ...(method === 'GET' || method === 'DELETE' ? {} : { json: {} }) });
    answered.set(r.status, (answered.get(r.status) ?? 0) + 1);
    if (r.status >= 500 && (r.status !== 503 || r.json?.error !== 'service_unavailable' || r.headers.get('retry-after') !== '5')) {
      unexpected.push(`${method} ${path}: ${r.status} ${r.text.slice(0, 120)}`);
    }
  }
  assert.deepEqual(unexpected, [], 'no 5xx but 503 service_unavailable with Retry-After');
  assert.ok((answered.get(503) ?? 0) > routes.length / 2, `most routes need the store: ${JSON.stringify(Object.fromEntries(answered))}`);

  // A token that the node has not seen, a login, a revocation through the path: 503, never a
  // refusal that would make a client drop a good credential.
  const fresh = await raw(url('/v1/user'), { token: 'f'.repeat(40) });
  assert.equal(fresh.status, 503, fresh.text);
  const login = await raw(url('/oauth/token'), { method: 'POST', form: { grant_type: 'password', username: owner.username, password: owner.password }, headers: { authorization: basic('particle-api', 'particle-api') } });
  assert.equal(login.status, 503, login.text);
  const revoke = await raw(url(`/v1/access_tokens/${owner.token}`), { method: 'DELETE' });
  assert.equal(revoke.status, 503, revoke.text);
  const introspect = await raw(url('/oauth/introspect'), { method: 'POST', form: { token: owner.token }, headers: { authorization: basic(client.id, client.secret) } });
  assert.equal(introspect.status, 503, `introspection must not call a live token inactive: ${introspect.text}`);
  const health = await raw(url('/healthz'));
  assert.equal(health.status, 503);
  assert.equal(health.json.checks.storage, 'down');


  // Back: nobody restarts anything.
  faulty.unreachable = false;
  await eventually(async () => (await raw(url('/healthz'))).status === 200 || undefined, 5_000, '/healthz 200 again');
  assert.equal((await raw(url('/v1/user'), { token: owner.token })).status, 200);
  const token = await raw(url('/oauth/token'), { method: 'POST', form: { grant_type: 'client_credentials' }, headers: { authorization: basic(client.id, client.secret) } });
  assert.equal(token.status, 200, token.text);
  await device.close();
});

test('a device that leaves while the store is away is stored offline once it is back', async () => {
  faulty.unreachable = false;
  const owner = await signUp(server.url);
  const product = await newProduct(server.url, owner.token);
  const who = await provision(server.url, owner.token, product.id);
  const device = await fakeDevice(server.mqttUrl, who, {});
  // What the store says (the API answers a device's presence from the gateway where it can).
  const online = async () => (await server.skyport.db.query<{ online: boolean }>('SELECT online FROM devices WHERE id = $1', [who.id]))[0]?.online;
  await eventually(async () => (await online()) === true || undefined, 5_000, 'the device online');

  faulty.unreachable = true;
  const refused = faulty.refusal(/^\s*UPDATE devices d SET\s+online/);
  await device.close();
  await refused;
  assert.equal(await online().catch(() => 'unreachable'), 'unreachable');
  server.skyport.services.devicesRepo.forget(who.id);
  // A device that connects meanwhile is told "server unavailable" (3), not "bad credentials" (4 or 5): it retries.
  const refusedConnect = await mqtt.connectAsync(server.mqttUrl, { clientId: who.id, username: who.id, password: who.secret, reconnectPeriod: 0 }).then(
    (c) => { void c.endAsync(); return 'accepted'; },
    (err: { code?: number }) => err.code,
  );
  assert.equal(refusedConnect, 3);
  const meanwhile = await raw(url(`/v1/products/${product.id}/devices/${who.id}`), { token: owner.token });
  assert.equal(meanwhile.status, 503, meanwhile.text);

  faulty.unreachable = false;
  await eventually(async () => (await online().catch(() => undefined)) === false || undefined, 5_000, 'the device stored offline once the store is back');
});
