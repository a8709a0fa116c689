import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './helpers/server.js';
import { raw, type RawResponse } from './helpers/http.js';
import { provision } from './helpers/device.js';
import { eventually } from './helpers/eventually.js';
import { apiCalls, uploaded } from './helpers/firmware.js';
import { FIRMWARE_RELEASED, type FirmwareReleased } from '../src/services/firmware/index.js';

/**
 * Device groups (docs/firmware.md, "Groups"): the product's groups, a device's groups (absolute,
 * new names created), many devices' at once, the fleet list filtered by group, what is refused,
 * and the notices that tell the node holding a device its target may have changed.
 */
let server: TestServer;
const notices: FirmwareReleased[] = [];
before(async () => {
  server = await startTestServer();
  server.skyport.bus.listen(FIRMWARE_RELEASED, (n) => { notices.push(n as FirmwareReleased); });
});
after(async () => { await server.close(); });

const { call, ok, refused, team } = apiCalls(() => server);

const names = (r: RawResponse) => (r.json.groups as Array<{ name: string }>).map((g) => g.name);
const fleetIds = async (t: { token: string; base: string }, query: string) =>
  (await ok(call('GET', `${t.base}/devices?${query}`, t.token))).json.devices.map((d: { id: string }) => d.id).sort();

test('groups: create, list (with a name filter), get, edit, rename, delete; Particle\'s shape', async () => {
  const t = await team();
  const made = await ok(call('POST', `${t.base}/groups`, t.token, { name: 'europe', color: '#E74C3C', description: 'the EU fleet' }), 201);
  assert.deepEqual({ ...made.json.group, created_at: undefined, updated_at: undefined }, {
    name: 'europe', description: 'the EU fleet', color: '#e74c3c', fw_version: null, device_count: 0, created_at: undefined, updated_at: undefined,
  });
  await ok(raw(`${server.url}${t.base}/groups`, { method: 'POST', token: t.token, form: { name: 'asia_2', color: '#abc' } }), 201);
  await ok(call('POST', `${t.base}/groups`, t.token, { name: 'us-west' }), 201);
  assert.deepEqual(names(await ok(call('GET', `${t.base}/groups`, t.token))), ['asia_2', 'europe', 'us-west'], 'by name');
  assert.deepEqual(names(await ok(call('GET', `${t.base}/groups?name=u`, t.token))), ['europe', 'us-west'], 'name holds the filter');
  assert.equal((await ok(call('GET', `${t.base}/groups/europe`, t.token))).json.group.description, 'the EU fleet');

  const edited = await ok(call('PUT', `${t.base}/groups/europe`, t.token, { name: 'eu', color: null }));
  assert.deepEqual([edited.json.group.name, edited.json.group.color, edited.json.group.description], ['eu', null, 'the EU fleet']);
  await refused(call('GET', `${t.base}/groups/europe`, t.token), 404, 'not_found', /no group "europe"/);
  await refused(call('PUT', `${t.base}/groups/eu`, t.token, { name: 'us-west' }), 409, 'conflict');
  await refused(call('POST', `${t.base}/groups`, t.token, { name: 'eu' }), 409, 'conflict');
  await ok(call('DELETE', `${t.base}/groups/eu`, t.token), 204);
  await refused(call('DELETE', `${t.base}/groups/eu`, t.token), 404, 'not_found');
  assert.deepEqual(names(await ok(call('GET', `${t.base}/groups`, t.token))), ['asia_2', 'us-west']);

  // Another product's groups are its own.
  const other = await team();
  assert.deepEqual(names(await ok(call('GET', `${other.base}/groups`, other.token))), []);
  await refused(call('GET', `${t.base}/groups`, other.token), 403, 'Permission Denied');
});

test('bad names and fields are refused with what a name may hold', async () => {
  const t = await team();
  for (const name of ['Europe', 'with space', 'dot.ted', 'ü', 'x'.repeat(65), '']) {
    await refused(call('POST', `${t.base}/groups`, t.token, { name }), 400, 'invalid_request', name === '' ? /required/ : name.length > 64 ? /longer than 64/ : /lower-case letters a-z, digits, dashes and underscores/);
  }
  await ok(call('POST', `${t.base}/groups`, t.token, { name: 'x'.repeat(64) }), 201);
  await refused(call('POST', `${t.base}/groups`, t.token, { name: 'ok', color: 'red' }), 400, 'invalid_request', /hex colour/);
  await refused(call('POST', `${t.base}/groups`, t.token, {}), 400, 'invalid_request', /name is required/);
  await refused(call('PUT', `${t.base}/groups/${'x'.repeat(64)}`, t.token, {}), 400, 'invalid_request', /Nothing to change/);
  await refused(call('PUT', `${t.base}/groups/${'x'.repeat(64)}`, t.token, { name: 'Bad' }), 400, 'invalid_request');
  const d = await provision(server.url, t.token, t.product.id);
  await refused(call('PUT', `${t.base}/devices/${d.id}`, t.token, { groups: ['fine', 'Not-Fine'] }), 400, 'invalid_request', /groups\[1\] "Not-Fine"/);
  await refused(call('PUT', `${t.base}/devices/${d.id}`, t.token, { groups: 'Nope', name: 'renamed' }), 400, 'invalid_request');
  assert.equal((await ok(call('GET', `${t.base}/devices/${d.id}`, t.token))).json.name, null, 'a refused change writes nothing');
  await refused(call('GET', `${t.base}/devices?groups=Bad`, t.token), 400, 'invalid_request');
  assert.deepEqual(names(await ok(call('GET', `${t.base}/groups`, t.token))), ['x'.repeat(64)], 'nothing else was created');
});

test('a device\'s groups are absolute and create new names; the fleet list filters by group; a device that leaves the product leaves its groups', async () => {
  const t = await team();
  const [a, b, c] = await Promise.all([1, 2, 3].map(() => provision(server.url, t.token, t.product.id)));
  const set = await ok(call('PUT', `${t.base}/devices/${a!.id}`, t.token, { groups: ['beta', 'europe'] }));
  assert.deepEqual([set.json.id, set.json.groups], [a!.id, ['beta', 'europe']]);
  assert.deepEqual(names(await ok(call('GET', `${t.base}/groups`, t.token))), ['beta', 'europe'], 'created by the device change');
  await ok(raw(`${server.url}${t.base}/devices/${b!.id}`, { method: 'PUT', token: t.token, form: { 'groups[]': 'europe' } }));
  await ok(call('PUT', `${t.base}/devices/${c!.id}`, t.token, { groups: ['asia'], notes: 'shipped' }));
  assert.deepEqual((await ok(call('GET', `${t.base}/devices/${a!.id}`, t.token))).json.groups, ['beta', 'europe']);

  assert.deepEqual(await fleetIds(t, 'groups=europe'), [a!.id, b!.id].sort());
  assert.deepEqual(await fleetIds(t, 'groups=beta,asia'), [a!.id, c!.id].sort(), 'in any of the groups');
  assert.deepEqual(await fleetIds(t, 'groups=nowhere'), []);
  const page = await ok(call('GET', `${t.base}/devices?groups=europe&per_page=1`, t.token));
  assert.deepEqual([page.json.devices.length, page.json.meta.total], [1, 2], 'the total counts what the filter keeps');

  await ok(call('PUT', `${t.base}/devices/${a!.id}`, t.token, { groups: ['beta'] }));
  assert.deepEqual(await fleetIds(t, 'groups=europe'), [b!.id]);
  await ok(call('PUT', `${t.base}/devices/${a!.id}`, t.token, { groups: [] }));
  assert.deepEqual((await ok(call('GET', `${t.base}/devices/${a!.id}`, t.token))).json.groups, []);
  assert.equal((await ok(call('GET', `${t.base}/groups/europe`, t.token))).json.group.device_count, 1);

  await ok(call('DELETE', `${t.base}/devices/${b!.id}`, t.token), 204);
  assert.equal((await ok(call('GET', `${t.base}/groups/europe`, t.token))).json.group.device_count, 0, 'removed from the product, out of its groups');
  await ok(call('DELETE', `${t.base}/groups/asia`, t.token), 204);
  assert.deepEqual((await ok(call('GET', `${t.base}/devices/${c!.id}`, t.token))).json.groups, []);
});

test('many devices at once: groups added and removed; a device outside the product changes nothing', async () => {
  const t = await team();
  const ds = await Promise.all([1, 2, 3].map(() => provision(server.url, t.token, t.product.id)));
  const ids = ds.map((d) => d.id);
  await ok(call('PUT', `${t.base}/devices`, t.token, { action: 'groups', devices: ids, metadata: { add: ['fleet', 'canary'] } }));
  assert.deepEqual(await fleetIds(t, 'groups=canary'), [...ids].sort());
  await ok(call('PUT', `${t.base}/devices`, t.token, { action: 'groups', devices: ids.slice(1), metadata: { remove: ['canary'] } }));
  assert.deepEqual(await fleetIds(t, 'groups=canary'), [ids[0]]);
  assert.deepEqual(await fleetIds(t, 'groups=fleet'), [...ids].sort());

  const o = await team();
  const foreign = (await provision(server.url, o.token, o.product.id)).id;
  await refused(call('PUT', `${t.base}/devices`, t.token, { action: 'groups', devices: [ids[1], foreign], metadata: { add: ['more'] } }), 400, 'invalid_request', new RegExp(`Not devices of this product: ${foreign}`));
  assert.deepEqual(names(await ok(call('GET', `${t.base}/groups`, t.token))), ['canary', 'fleet'], 'nothing created');
  await refused(call('PUT', `${t.base}/devices`, t.token, { action: 'quarantine', devices: ids }), 400, 'invalid_request', /action must be "groups"/);
  await refused(call('PUT', `${t.base}/devices`, t.token, { action: 'groups', devices: [], metadata: { add: ['x'] } }), 400, 'invalid_request', /devices must be/);
  await refused(call('PUT', `${t.base}/devices`, t.token, { action: 'groups', devices: ids }), 400, 'invalid_request', /Nothing to change/);
  await refused(call('PUT', `${t.base}/devices`, t.token, { action: 'groups', devices: ids, metadata: { add: ['a'], remove: ['a'] } }), 400, 'invalid_request', /both added and removed/);
  await refused(call('PUT', `${t.base}/devices`, t.token, { action: 'groups', devices: ['nope'], metadata: { add: ['a'] } }), 400, 'invalid_request');
});

test('a group change tells the node holding the devices, at once when they now get an intelligent release; a group\'s release shows as fw_version', async () => {
  const t = await team();
  await uploaded(server.url, t.token, t.product.id, 2);
  await ok(call('POST', `${t.base}/groups`, t.token, { name: 'canary' }), 201);
  await ok(call('PUT', `${t.base}/firmware/release`, t.token, { version: 2, groups: ['canary'], intelligent: true }));
  assert.equal((await ok(call('GET', `${t.base}/groups/canary`, t.token))).json.group.fw_version, 2);
  const [d, e] = await Promise.all([1, 2].map(() => provision(server.url, t.token, t.product.id)));
  await ok(call('PUT', `${t.base}/devices/${d!.id}`, t.token, { groups: ['canary'] }));
  const joined = await eventually(() => notices.find((n) => n.deviceIds?.includes(d!.id)));
  assert.deepEqual(joined, { productId: t.product.id, deviceIds: [d!.id], immediate: true, cause: 'groups' });
  assert.equal((await ok(call('GET', `${t.base}/devices/${d!.id}`, t.token))).json.targeted_firmware_release_version, 2);

  await ok(call('PUT', `${t.base}/devices`, t.token, { action: 'groups', devices: [e!.id], metadata: { add: ['plain'] } }));
  const plain = await eventually(() => notices.find((n) => n.deviceIds?.includes(e!.id)));
  assert.equal(plain.immediate, false, 'a group with no release');

  await ok(call('DELETE', `${t.base}/groups/canary`, t.token), 204);
  await eventually(() => notices.filter((n) => n.deviceIds?.includes(d!.id)).length === 2 ? true : undefined);
  assert.equal((await ok(call('GET', `${t.base}/devices/${d!.id}`, t.token))).json.targeted_firmware_release_version, null, 'its group gone, nothing is released to it');
});

test('a device\'s view shows new groups and a new target at once, though its product was viewed while it had none', async () => {
  const t = await team();
  const [a, b] = await Promise.all([1, 2].map(() => provision(server.url, t.token, t.product.id)));
  const view = async (id: string) => (await ok(call('GET', `${t.base}/devices/${id}`, t.token))).json as { groups: string[]; targeted_firmware_release_version: number | null };
  // Viewed with no group, release or rollout in the product: this node remembers that (services/firmware/targets.ts).
  assert.deepEqual([(await view(a!.id)).groups, (await view(a!.id)).targeted_firmware_release_version], [[], null]);
  // A group created by a device change.
  await ok(call('PUT', `${t.base}/devices/${a!.id}`, t.token, { groups: ['field'] }));
  assert.deepEqual((await view(a!.id)).groups, ['field']);

  const other = await team();
  const [c] = await Promise.all([provision(server.url, other.token, other.product.id)]);
  const otherView = async () => (await ok(call('GET', `${other.base}/devices/${c!.id}`, other.token))).json as { groups: string[]; targeted_firmware_release_version: number | null };
  assert.deepEqual((await otherView()).groups, []);
  // A group made through the groups API, then a device added to it.
  await ok(call('POST', `${other.base}/groups`, other.token, { name: 'lab' }), 201);
  await ok(call('PUT', `${other.base}/devices`, other.token, { action: 'groups', devices: [c!.id], metadata: { add: ['lab'] } }));
  assert.deepEqual((await otherView()).groups, ['lab']);

  // A version released as the product default, in a product that had nothing of firmware.
  const third = await team();
  const [d] = await Promise.all([provision(server.url, third.token, third.product.id)]);
  const thirdView = async () => (await ok(call('GET', `${third.base}/devices/${d!.id}`, third.token))).json as { targeted_firmware_release_version: number | null };
  assert.equal((await thirdView()).targeted_firmware_release_version, null);
  await uploaded(server.url, third.token, third.product.id, 2);
  assert.equal((await thirdView()).targeted_firmware_release_version, null, 'uploaded, not released');
  await ok(call('PUT', `${third.base}/firmware/release`, third.token, { version: 2 }));
  assert.equal((await thirdView()).targeted_firmware_release_version, 2);
  assert.deepEqual((await view(b!.id)).groups, []);
});
