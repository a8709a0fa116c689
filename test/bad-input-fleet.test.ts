import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, email, type TestServer } from './helpers/server.js';
import { particle } from './helpers/particle.js';
import { basic, raw, type RawResponse } from './helpers/http.js';

let server: TestServer;
let token: string;
let product: { id: number; slug: string };
let deviceId: string;
let client: { id: string; secret: string };
before(async () => {
  server = await startTestServer();
  const api = particle(server.url);
  const username = email();
  await api.createUser({ username, password: 'correct horse' });
  token = (await api.login({ username, password: 'correct horse' })).body.access_token;
  product = (await raw(`${server.url}/v1/user/products`, { method: 'POST', token, json: { product: { name: 'Bad input', platform_id: 13 } } })).json.product;
  deviceId = (await api.provisionDevice({ productId: product.id, auth: token })).body.id;
  client = (await api.createOAuthClient({ name: 'server', product: product.id, auth: token })).body.client;
});
after(async () => { await server.close(); });

function clear(r: RawResponse, status: number, label: string): void {
  assert.equal(r.status, status, `${label}: ${r.text}`);
  assert.equal(typeof r.json?.error, 'string', label);
  assert.ok(r.status < 500, label);
}

async function fleetSnapshot() {
  return (await raw(`${server.url}/v1/products/${product.id}/devices?per_page=100`, { token })).json;
}

test('products: wrong shapes and unknown ids', async () => {
  const create = (json: unknown) => raw(`${server.url}/v1/user/products`, { method: 'POST', token, json });
  clear(await create({ product: { name: '', platform_id: 6 } }), 400, 'empty name');
  clear(await create({ product: { name: 'x', platform_id: 'six' } }), 400, 'platform id text');
  clear(await create({ product: { name: 'x', platform_id: -1 } }), 400, 'negative platform');
  clear(await create({ product: { name: ['x'], platform_id: 6 } }), 400, 'name array');
  clear(await create({ product: 'x' }), 400, 'product string');
  for (const p of ['999999999', 'no-such-slug', '0', '%00', 'x'.repeat(101)]) {
    const r = await raw(`${server.url}/v1/products/${p}`, { token });
    assert.ok(r.status === 403 || r.status === 400, `${p}: ${r.status}`);
  }
  const before = (await raw(`${server.url}/v1/products/${product.id}`, { token })).json;
  clear(await raw(`${server.url}/v1/products/${product.id}`, { method: 'PUT', token, json: { name: 7 } }), 400, 'rename to a number');
  assert.deepEqual((await raw(`${server.url}/v1/products/${product.id}`, { token })).json, before);
});

test('devices: wrong ids, foreign ids, wrong types; nothing changes', async () => {
  const before = await fleetSnapshot();
  for (const id of ['xyz', 'f'.repeat(25), 'g'.repeat(24), '%20']) {
    const r = await raw(`${server.url}/v1/devices/${id}`, { token });
    clear(r, 403, `device ${id}`);
  }
  clear(await raw(`${server.url}/v1/products/${product.id}/devices/nothex`, { token }), 404, 'product device of the wrong shape');
  const put = (json: unknown) => raw(`${server.url}/v1/products/${product.id}/devices/${deviceId}`, { method: 'PUT', token, json });
  clear(await put({ name: 'has spaces' }), 400, 'bad name');
  clear(await put({ name: 'x'.repeat(64) }), 400, 'long name');
  clear(await put({ development: 'maybe' }), 400, 'development not a boolean');
  clear(await put({ desired_firmware_version: -3 }), 400, 'negative firmware');
  clear(await put({ desired_firmware_version: 'latest' }), 400, 'firmware text');
  clear(await put({ notes: 'x'.repeat(1001) }), 400, 'long notes');
  clear(await put({}), 400, 'nothing to change');
  clear(await raw(`${server.url}/v1/devices`, { method: 'POST', token, json: { product_id: 'nope' } }), 403, 'provision into an unknown product');
  clear(await raw(`${server.url}/v1/devices`, { method: 'POST', token, json: {} }), 400, 'neither id nor product_id');
  clear(await raw(`${server.url}/v1/products/${product.id}/device_identities`, { method: 'POST', token, json: { quantity: 0 } }), 400, 'zero quantity');
  clear(await raw(`${server.url}/v1/products/${product.id}/device_identities`, { method: 'POST', token, json: { quantity: 10001 } }), 400, 'too many');
  clear(await raw(`${server.url}/v1/products/${product.id}/devices?sortDir=sideways`, { token }), 400, 'bad sortDir');
  clear(await raw(`${server.url}/v1/products/${product.id}/devices?per_page=0`, { token }), 400, 'per_page 0');
  clear(await raw(`${server.url}/v1/products/${product.id}/devices?deviceId=zz`, { token }), 400, 'deviceId not hex');
  assert.deepEqual(await fleetSnapshot(), before, 'refused requests change nothing');
});

test('imports: malformed bodies, malformed multipart, huge files', async () => {
  const before = await fleetSnapshot();
  const post = (init: RequestInit & { json?: unknown }) => raw(`${server.url}/v1/products/${product.id}/devices`, { method: 'POST', token, ...init });
  clear(await post({ json: {} }), 400, 'no ids');
  clear(await post({ json: { ids: 'abc' } }), 400, 'ids not an array');
  clear(await post({ json: { ids: [1, 2] } }), 400, 'ids of numbers');
  clear(await post({ json: { id: 'a', ids: ['b'] } }), 400, 'both id and ids');
  clear(await post({ body: '--x\r\nContent-Disposition: form-data; name="file"\r\n\r\nabc', headers: { 'content-type': 'multipart/form-data; boundary=x' } }), 400, 'truncated multipart');
  clear(await post({ body: 'garbage', headers: { 'content-type': 'multipart/form-data' } }), 400, 'multipart without boundary');
  const wrongField = new FormData();
  wrongField.append('notfile', new Blob([deviceId]), 'ids.txt');
  clear(await post({ body: wrongField }), 400, 'file under another name');
  const many = new FormData();
  many.append('file', new Blob([Array.from({ length: 10_001 }, (_, i) => i.toString(16).padStart(24, '0')).join('\n')]), 'ids.txt');
  clear(await post({ body: many }), 413, 'more than 10,000 ids');
  const huge = new FormData();
  huge.append('file', new Blob(['a'.repeat(2 * 1024 * 1024)]), 'ids.txt');
  const r = await post({ body: huge });
  assert.ok(r.status === 413 || r.status === 400, `a 2 MiB file: ${r.status} ${r.text}`);
  assert.equal(typeof r.json?.error, 'string');
  assert.deepEqual(await fleetSnapshot(), before, 'refused imports change nothing');
});

test('customers: duplicate e-mails in any case, bad e-mails, wrong types, unknown customers', async () => {
  const create = (form: Record<string, string>) => raw(`${server.url}/v1/products/${product.id}/customers`, { method: 'POST', headers: { authorization: basic(client.id, client.secret) }, form });
  const e = email('dup');
  assert.equal((await create({ email: e, no_password: 'true' })).status, 201);
  clear(await create({ email: e.toUpperCase(), no_password: 'true' }), 409, 'upper-case duplicate');
  clear(await create({ email: 'not-an-email', no_password: 'true' }), 400, 'bad e-mail');
  clear(await create({ email: email(), password: 'short' }), 400, 'short password');
  clear(await create({ email: email(), no_password: 'perhaps' }), 400, 'no_password not a flag');
  const json = await raw(`${server.url}/v1/products/${product.id}/customers`, { method: 'POST', headers: { authorization: basic(client.id, client.secret) }, json: { email: 12, no_password: true } });
  clear(json, 400, 'e-mail as a number');
  clear(await raw(`${server.url}/v1/products/${product.id}/customers/${encodeURIComponent(email('nobody'))}`, { method: 'DELETE', token }), 404, 'unknown customer');
  clear(await raw(`${server.url}/v1/products/999999/customers`, { method: 'POST', headers: { authorization: basic(client.id, client.secret) }, form: { email: email(), no_password: 'true' } }), 400, 'unknown product');
  const list = await raw(`${server.url}/v1/products/${product.id}/customers`, { token });
  assert.equal(list.json.meta.total, 1, 'only the one good customer exists');
});
