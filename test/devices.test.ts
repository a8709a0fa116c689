import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, email, type TestServer } from './helpers/server.js';
import { particle } from './helpers/particle.js';
import { basic, raw } from './helpers/http.js';
import { newProduct, signUp } from './helpers/fixtures.js';

let server: TestServer;
before(async () => { server = await startTestServer(); });
after(async () => { await server.close(); });

async function team() {
  const account = await signUp(server.url);
  return { ...account, product: await newProduct(server.url, account.token, 'Fleet') };
}

test('provision with particle-api-js; the secret is shown once; device records carry Particle\'s device fields', async () => {
  const { api, token, product } = await team();
  const made = await api.provisionDevice({ productId: product.id, auth: token });
  assert.equal(made.statusCode, 201);
  assert.match(made.body.id, /^[0-9a-f]{24}$/);
  assert.equal(typeof made.body.device_secret, 'string');
  const got = await api.getDevice({ deviceId: made.body.id, product: product.id, auth: token });
  assert.equal(got.body.device_secret, undefined);
  for (const key of ['cellular', 'connected', 'current_build_target', 'default_build_target', 'denied', 'development', 'firmware_product_id', 'firmware_updates_enabled', 'firmware_updates_forced', 'groups', 'id', 'last_handshake_at', 'last_heard', 'last_ip_address', 'mobile_secret', 'name', 'online', 'owner', 'platform_id', 'product_id', 'quarantined', 'serial_number', 'system_firmware_version', 'targeted_firmware_release_version']) {
    assert.ok(key in got.body, `device detail has ${key}`);
  }
  assert.equal(got.body.product_id, product.id);
  assert.equal(got.body.platform_id, 26);
  assert.equal(got.body.online, false);
  assert.equal(got.body.connected, false);
});

test('bulk provisioning as CSV and JSON; import by id, by ids and by file (all result arrays present); list with paging and filters', async () => {
  const { api, token, product } = await team();
  const other = await team();
  const csv = await raw(`${server.url}/v1/products/${product.id}/device_identities`, { method: 'POST', token, json: { quantity: 3 }, headers: { accept: 'text/csv' } });
  assert.equal(csv.status, 201);
  const lines = csv.text.trim().split('\n');
  assert.equal(lines[0], 'device_id,device_secret');
  assert.equal(lines.length, 4);
  const json = await raw(`${server.url}/v1/products/${product.id}/device_identities`, { method: 'POST', token, json: { quantity: 2 } });
  assert.equal(json.json.devices.length, 2);

  // Devices of another product can be imported only by someone who manages both... here: not at all.
  const foreign = (await other.api.provisionDevice({ productId: other.product.id, auth: other.token })).body.id as string;
  const mine = lines.slice(1).map((l) => l.split(',')[0] as string);
  const byId = await api.addDeviceToProduct({ deviceId: mine[0], product: product.id, auth: token });
  assert.deepEqual(byId.body, { updated: 0, updatedDeviceIds: [], existingDeviceIds: [mine[0]], nonmemberDeviceIds: [], invalidDeviceIds: [], protectedDeviceIds: [] });
  const dir = mkdtempSync(join(tmpdir(), 'skyport-import-'));
  const file = join(dir, 'ids.txt');
  writeFileSync(file, `${mine[1]}\n${foreign}\nnot-a-device\n${'0'.repeat(24)}\n`);
  const viaFile = await api.addDeviceToProduct({ file, product: product.slug, auth: token });
  assert.deepEqual(viaFile.body.existingDeviceIds, [mine[1]]);
  assert.deepEqual(viaFile.body.nonmemberDeviceIds, [foreign]);
  assert.deepEqual(viaFile.body.invalidDeviceIds.sort(), ['0'.repeat(24), 'not-a-device'].sort());
  const ids = await raw(`${server.url}/v1/products/${product.id}/devices`, { method: 'POST', token, json: { ids: ['abc'] } });
  assert.deepEqual(ids.json.invalidDeviceIds, ['abc']);

  await raw(`${server.url}/v1/products/${product.id}/devices/${mine[2]}`, { method: 'PUT', token, json: { name: 'truck_7' } });
  const page = await api.listDevices({ product: product.id, perPage: 2, page: 1, auth: token });
  assert.equal(page.body.devices.length, 2);
  assert.deepEqual(page.body.meta, { page: 1, per_page: 2, total: 5, total_pages: 3 });
  const byName = await api.listDevices({ product: product.id, deviceName: 'truck_7', auth: token });
  assert.deepEqual(byName.body.devices.map((d: { id: string }) => d.id), [mine[2]]);
  const byPrefix = await api.listDevices({ product: product.id, deviceId: (mine[0] as string).slice(0, 10), auth: token });
  assert.ok(byPrefix.body.devices.some((d: { id: string }) => d.id === mine[0]));
  const sorted = await api.listDevices({ product: product.id, sortAttr: 'id', sortDir: 'desc', auth: token });
  const got = sorted.body.devices.map((d: { id: string }) => d.id);
  assert.deepEqual(got, [...got].sort().reverse());
  assert.equal((await raw(`${server.url}/v1/products/${product.id}/devices?sortAttr=bogus`, { token })).status, 400);

  // The product is remembered between pages, the fleet's size is not: a removal shows at once,
  // on a page past the end too, and a filtered list counts what matches.
  assert.equal((await api.removeDevice({ deviceId: mine[2], product: product.id, auth: token })).statusCode, 204);
  const after = await api.listDevices({ product: product.id, perPage: 2, page: 1, auth: token });
  assert.deepEqual(after.body.meta, { page: 1, per_page: 2, total: 4, total_pages: 2 });
  const past = await api.listDevices({ product: product.id, perPage: 2, page: 9, auth: token });
  assert.deepEqual([past.body.devices, past.body.meta.total], [[], 4]);
  const prefix = await raw(`${server.url}/v1/products/${product.id}/devices?deviceId=${(mine[0] as string).slice(0, 20)}`, { token });
  assert.deepEqual([prefix.json.devices.map((d: { id: string }) => d.id), prefix.json.meta.total], [[mine[0]], 1]);
});

test('product device changes: development mode, firmware lock, remove from product; unknown or foreign devices', async () => {
  const { api, token, product } = await team();
  const id = (await api.provisionDevice({ productId: product.id, auth: token })).body.id as string;
  const dev = await api.markAsDevelopmentDevice({ deviceId: id, product: product.id, auth: token });
  assert.equal(dev.body.development, true);
  // A lock names a version the product has (test/firmware-api.test.ts locks to uploaded ones).
  const lock = await raw(`${server.url}/v1/products/${product.id}/devices/${id}`, { method: 'PUT', token, json: { desired_firmware_version: 3 } });
  assert.deepEqual([lock.status, lock.json.error_description], [400, 'desired_firmware_version: the product has no firmware version 3; upload it first']);
  const unlock = await raw(`${server.url}/v1/products/${product.id}/devices/${id}`, { method: 'PUT', token, json: { desired_firmware_version: null } });
  assert.equal(unlock.json.desired_firmware_version, null);
  const notes = await api.setDeviceNotes({ deviceId: id, notes: 'blue box', product: product.id, auth: token });
  assert.equal(notes.body.notes, 'blue box');

  const stranger = await team();
  const denied = await raw(`${server.url}/v1/devices/${id}`, { token: stranger.token });
  const unknown = await raw(`${server.url}/v1/devices/${'f'.repeat(24)}`, { token: stranger.token });
  assert.equal(denied.status, 403);
  assert.equal(denied.json.error, 'Permission Denied');
  assert.deepEqual(denied.json, unknown.json, 'unknown and foreign devices answer alike');
  const notHere = await raw(`${server.url}/v1/products/${stranger.product.id}/devices/${id}`, { token: stranger.token });
  assert.deepEqual([notHere.status, notHere.json.error_description], [404, 'Device not found for this product']);

  const removed = await api.removeDevice({ deviceId: id, product: product.id, auth: token });
  assert.equal(removed.statusCode, 204);
  assert.equal((await raw(`${server.url}/v1/products/${product.id}/devices/${id}`, { token })).status, 404);
});

test('claim codes and claiming: a customer claims with a code and then reaches only its own device', async () => {
  const { api, token, product } = await team();
  const client = (await api.createOAuthClient({ name: 'app', scope: 'customers:create', product: product.id, auth: token })).body.client;
  const app = particle(server.url, { clientId: client.id, clientSecret: client.secret });
  const aliceEmail = email('alice');
  const alice = (await app.createCustomer({ email: aliceEmail, password: 'alice password', product: product.id })).body.access_token as string;
  const bob = (await app.createCustomer({ email: email('bob'), password: 'bob password', product: product.id })).body.access_token as string;
  const id = (await api.provisionDevice({ productId: product.id, auth: token })).body.id as string;

  const code = await app.getClaimCode({ product: product.id, auth: alice });
  assert.match(code.body.claim_code, /^[A-Za-z0-9]{48}$/);
  assert.deepEqual(code.body.device_ids, []);
  // The device side presents the code (the device gateway calls this service operation).
  await server.skyport.services.claims.redeem(id, code.body.claim_code);
  await assert.rejects(server.skyport.services.claims.redeem(id, code.body.claim_code), /unknown, used or expired/, 'single use');

  assert.equal((await raw(`${server.url}/v1/devices/${id}`, { token: alice })).status, 200);
  assert.equal((await raw(`${server.url}/v1/devices/${id}`, { token: bob })).status, 403);
  const aliceDevices = await raw(`${server.url}/v1/devices`, { token: alice });
  assert.deepEqual(aliceDevices.json.map((d: { id: string }) => d.id), [id]);
  assert.deepEqual((await raw(`${server.url}/v1/devices`, { token: bob })).json, []);
  const listed = await api.listDevices({ product: product.id, auth: token });
  assert.equal(listed.body.customers.length, 1);
  const owned = listed.body.devices.find((d: { id: string }) => d.id === id);
  assert.equal(owned.owner, aliceEmail, 'the page names the owning customer by e-mail');
  assert.equal(listed.body.customers[0].username, aliceEmail);

  // A user token cannot ask for a product claim code; a customer cannot ask for another product's.
  assert.equal((await raw(`${server.url}/v1/products/${product.id}/device_claims`, { method: 'POST', token, json: {} })).status, 403);
  // The team releases the owner; then Alice no longer reaches it.
  assert.equal((await api.removeDeviceOwner({ deviceId: id, product: product.id, auth: token })).statusCode, 204);
  assert.equal((await raw(`${server.url}/v1/devices/${id}`, { token: alice })).status, 403);
});

test('a user claims by id, renames, unclaims; another user meets "belongs to someone else"', async () => {
  const owner = await team();
  const id = (await owner.api.provisionDevice({ productId: owner.product.id, auth: owner.token })).body.id as string;
  const claimed = await owner.api.claimDevice({ deviceId: id, auth: owner.token });
  assert.deepEqual(claimed.body, { ok: true, deviceID: id, claimed: true });
  const mineList = await owner.api.listDevices({ auth: owner.token });
  assert.deepEqual(mineList.body.map((d: { id: string }) => d.id), [id]);
  const renamed = await owner.api.renameDevice({ deviceId: id, name: 'porch', auth: owner.token });
  assert.equal(renamed.body.name, 'porch');
  assert.equal((await owner.api.getDevice({ deviceId: 'porch', auth: owner.token })).body.id, id, 'by name, for its owner');
  assert.equal((await owner.api.getDevice({ deviceId: id, auth: owner.token })).body.owner, owner.username);

  const other = await team();
  const taken = await raw(`${server.url}/v1/devices`, { method: 'POST', token: other.token, json: { id, request_transfer: true } });
  assert.equal(taken.status, 403);
  assert.match(taken.json.error, /belongs to someone else/);
  const missing = await raw(`${server.url}/v1/devices`, { method: 'POST', token: other.token, json: { id: 'a'.repeat(24) } });
  assert.deepEqual([missing.status, missing.json.error_description], [404, 'device not found']);

  assert.deepEqual((await owner.api.removeDevice({ deviceId: id, auth: owner.token })).body, { ok: true });
  assert.deepEqual((await owner.api.listDevices({ auth: owner.token })).body, []);
  // Still a product device: a product token reaches it, by the product routes.
  const client = (await owner.api.createOAuthClient({ name: 'backend', product: owner.product.id, auth: owner.token })).body.client;
  const cc = await raw(`${server.url}/oauth/token`, { method: 'POST', headers: { authorization: basic(client.id, client.secret) }, form: { grant_type: 'client_credentials' } });
  assert.equal((await raw(`${server.url}/v1/devices/${id}`, { token: cc.json.access_token })).status, 200);
  assert.equal((await raw(`${server.url}/v1/devices/${id}`, { token: other.token })).status, 403);
});

test('routes whose body is optional take a request without one (a bare POST, the token in the query)', async () => {
  const { token } = await signUp(server.url);
  const bare = await fetch(`${server.url}/v1/device_claims?access_token=${token}`, { method: 'POST' });
  assert.equal(bare.status, 200, await bare.clone().text());
  assert.match(((await bare.json()) as { claim_code: string }).claim_code, /^[0-9A-Za-z]{10,}$/);
  const bearer = await fetch(`${server.url}/v1/device_claims`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  assert.equal(bearer.status, 200);
});
