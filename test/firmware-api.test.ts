import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import { startTestServer, type TestServer } from './helpers/server.js';
import { raw } from './helpers/http.js';
import { newProduct, rejection, signUp } from './helpers/fixtures.js';
import { provision } from './helpers/device.js';
import { eventually } from './helpers/eventually.js';
import { apiCalls, firmwareBinary, reportVersion, upload, uploaded } from './helpers/firmware.js';
import { FIRMWARE_RELEASED, type FirmwareReleased } from '../src/services/firmware/index.js';
import type { CloudEvent } from '../src/bus/bus.js';

/**
 * Product firmware (docs/firmware.md): uploads and the module checks, what is refused and why,
 * releases and their events and notices, which version each device is given (each of Particle's
 * rules), locks, forced updates, the impact of a change, the signing key, and particle-api-js's
 * calls unchanged. Groups: test/groups-api.test.ts.
 */
let server: TestServer;
const events: CloudEvent[] = [];
const notices: FirmwareReleased[] = [];
before(async () => {
  // Firmware may be larger than other bodies (BODY_LIMIT_BYTES, 1 MiB).
  server = await startTestServer({ env: { FIRMWARE_MAX_BYTES: String(2 * 1024 * 1024) } });
  server.skyport.bus.subscribe((e) => { events.push(e); });
  server.skyport.bus.listen(FIRMWARE_RELEASED, (n) => { notices.push(n as FirmwareReleased); });
});
after(async () => { await server.close(); });

const { call, ok, refused, team } = apiCalls(() => server);

/** The target a device's view shows, and the one the node holding it is given. */
async function targetOf(t: { token: string; base: string }, id: string): Promise<[number | null, number | null]> {
  const view = await ok(call('GET', `${t.base}/devices/${id}`, t.token));
  const target = await server.skyport.services.firmware.targets.targetFor(id);
  return [view.json.targeted_firmware_release_version, target?.version ?? null];
}

describe('images', () => {
  test('an upload answers Particle\'s fields; list, get and edit show them; the download is the binary; a version is uploaded once; an unreleased version is deleted', async () => {
    const t = await team();
    const image = firmwareBinary(t.product.id, 3);
    const made = await ok(upload(server.url, t.token, t.product.id, image, { version: '3', title: 'First', description: 'it blinks' }), 201);
    assert.deepEqual({ ...made.json, uploaded_at: undefined, uploaded_on: undefined, updated_at: undefined }, {
      version: 3, title: 'First', description: 'it blinks', name: 'firmware.bin', size: image.length,
      sha256: createHash('sha256').update(image).digest('hex'), platform_id: 26, product_id: t.product.id,
      device_count: 0, current: false, product_default: false, groups: [], intelligent: false, released_at: null, signed: false,
      uploaded_at: undefined, uploaded_on: undefined, updated_at: undefined, uploaded_by: { username: t.username, kind: 'user', id: made.json.uploaded_by.id },
    });
    assert.equal(made.json.uploaded_at, made.json.uploaded_on);
    const created = events.find((e) => e.name === 'particle/firmware/create' && e.productId === t.product.id);
    assert.deepEqual([created?.data, created?.coreid], ['{"version":"3"}', 'api'], 'particle/firmware/create, as Particle sends it');

    await ok(upload(server.url, t.token, t.product.id, firmwareBinary(t.product.id, 4), { version: '4', title: 'Second' }, 'binary'), 201);
    const list = await ok(call('GET', `${t.base}/firmware`, t.token));
    assert.deepEqual(list.json.map((f: { version: number }) => f.version), [4, 3], 'newest first');
    const edited = await ok(call('PUT', `${t.base}/firmware/3`, t.token, { title: 'Renamed', description: null }));
    assert.deepEqual([edited.json.title, edited.json.description], ['Renamed', '']);
    assert.equal((await ok(call('GET', `${t.base}/firmware/3`, t.token))).json.title, 'Renamed');

    // Over the network: inject's answers are text.
    const bin = await fetch(`${server.url}${t.base}/firmware/3/binary`, { headers: { authorization: `Bearer ${t.token}` } });
    assert.equal(bin.status, 200);
    assert.equal(bin.headers.get('content-type'), 'application/octet-stream');
    assert.ok(Buffer.from(await bin.arrayBuffer()).equals(image), 'the bytes uploaded');

    await refused(upload(server.url, t.token, t.product.id, firmwareBinary(t.product.id, 3), { version: '3' }), 409, 'conflict', /uploaded once/);
    assert.equal((await ok(call('DELETE', `${t.base}/firmware/4`, t.token), 204)).text, '');
    await refused(call('GET', `${t.base}/firmware/4`, t.token), 404, 'not_found');
    await refused(call('DELETE', `${t.base}/firmware/4`, t.token), 404, 'not_found');
    await refused(call('GET', `${t.base}/firmware/4/binary`, t.token), 404, 'not_found');
  });

  test('the module checks: each refusal says which check failed', async () => {
    const t = await team();
    const id = t.product.id;
    const check = async (image: Buffer, version: string, reason: string, text: RegExp) => {
      const r = await refused(upload(server.url, t.token, id, image, { version }), 400, 'invalid_firmware', text);
      assert.equal(r.json.reason, reason);
    };
    await check(Buffer.from('not firmware at all, just some text of a file '.repeat(4)), '1', 'format', /not a Particle module binary/);
    const damaged = firmwareBinary(id, 1);
    damaged[100] = (damaged[100] as number) ^ 0xff;
    await check(damaged, '1', 'crc', /CRC-32 does not hold/);
    await check(firmwareBinary(id, 1, { moduleFunction: 4 }), '1', 'module_function', /not application firmware/);
    await check(firmwareBinary(id, 1, { platformId: 6 }), '1', 'platform', /platform 6; this product's devices are platform 26/);
    await check(firmwareBinary(id + 1, 1), '1', 'product_id', new RegExp(`names product ${id + 1}; this is product ${id}`));
    await check(firmwareBinary(id, 2), '1', 'product_version', /says product version 2; the upload says version 1/);
    await check(firmwareBinary(0xffff, 1), '1', 'product_id', /names no product/);
    assert.deepEqual((await ok(call('GET', `${t.base}/firmware`, t.token))).json, [], 'nothing was stored');
  });

  test('bad input answers 4xx with what to send, never 500', async () => {
    const t = await team();
    const id = t.product.id;
    await refused(call('POST', `${t.base}/firmware`, t.token, { version: 1 }), 415, 'unsupported_media_type', /multipart/);
    const fields = new FormData();
    fields.append('version', '1');
    await refused(raw(`${server.url}${t.base}/firmware`, { method: 'POST', token: t.token, body: fields }), 400, 'invalid_request', /No binary/);
    await refused(upload(server.url, t.token, id, firmwareBinary(id, 1), { version: '1' }, 'image'), 400, 'invalid_request', /"file" or "binary", not "image"/);
    for (const version of ['', '0', 'latest', '65536', '1.5']) {
      await refused(upload(server.url, t.token, id, firmwareBinary(id, 1), { version }), 400, 'invalid_request', /version must be a whole number/);
    }
    await refused(upload(server.url, t.token, id, firmwareBinary(id, 1), { version: '1', title: 'x'.repeat(101) }), 400, 'invalid_request', /title is at most 100/);
    await refused(upload(server.url, t.token, id, firmwareBinary(id, 1, { dataSize: 2 * 1024 * 1024 }), { version: '1' }), 413, 'payload_too_large', /2097152 bytes/);
    const large = firmwareBinary(id, 9, { dataSize: 1536 * 1024 });
    assert.equal((await ok(upload(server.url, t.token, id, large, { version: '9' }), 201)).json.size, large.length, 'FIRMWARE_MAX_BYTES, not BODY_LIMIT_BYTES, limits a binary');
    const malformed = await raw(`${server.url}${t.base}/firmware`, { method: 'POST', token: t.token, headers: { 'content-type': 'multipart/form-data; boundary=xyz' }, body: '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nabc' });
    assert.ok(malformed.status >= 400 && malformed.status < 500, malformed.text);
    await refused(call('GET', `${t.base}/firmware/abc`, t.token), 400, 'invalid_request');
    await refused(call('PUT', `${t.base}/firmware/1`, t.token, { title: 'x' }), 404, 'not_found');
    await uploaded(server.url, t.token, id, 1);
    await refused(call('PUT', `${t.base}/firmware/1`, t.token, {}), 400, 'invalid_request', /Nothing to change/);
    await refused(call('PUT', `${t.base}/firmware/1`, t.token, { title: '' }), 400, 'invalid_request', /title is required/);
  });
});

describe('releases', () => {
  test('a release to the fleet: the answer warns when no device runs the version, the event and the notice go out; a released version is not deleted', async () => {
    const t = await team();
    await uploaded(server.url, t.token, t.product.id, 1);
    await uploaded(server.url, t.token, t.product.id, 2);
    const d = await provision(server.url, t.token, t.product.id);
    await reportVersion(server.url, server.mqttUrl, t.token, t.product.id, d, 1);

    const first = await ok(call('PUT', `${t.base}/firmware/release`, t.token, { version: 1, product_default: true, intelligent: true }));
    assert.deepEqual([first.json.product_default, first.json.current, first.json.intelligent, first.json.device_count, first.json.warnings], [true, true, true, 1, []]);
    assert.ok(first.json.released_at);
    const second = await ok(call('PUT', `${t.base}/firmware/release`, t.token, { version: 2, product_default: true }));
    assert.equal(second.json.warnings.length, 1);
    assert.match(second.json.warnings[0], /No device of the product runs version 2 yet\. Particle refuses/);
    const release = events.filter((e) => e.name === 'particle/firmware/release' && e.productId === t.product.id).map((e) => e.data);
    assert.deepEqual(release, ['{"immediate":true,"version":1}', '{"immediate":false,"version":2}']);
    await eventually(() => (notices.filter((n) => n.productId === t.product.id && n.cause === 'release').length === 2 ? true : undefined));
    assert.deepEqual(notices.filter((n) => n.productId === t.product.id).map((n) => [n.deviceIds, n.immediate]), [[null, true], [null, false]]);

    const list = await ok(call('GET', `${t.base}/firmware`, t.token));
    assert.deepEqual(list.json.map((f: { version: number; product_default: boolean }) => [f.version, f.product_default]), [[2, true], [1, false]], 'one default at a time');
    assert.deepEqual(await targetOf(t, d.id), [2, 2]);
    await refused(call('DELETE', `${t.base}/firmware/1`, t.token), 409, 'firmware_in_use', /has been released/);

    // Released no more (neither the default nor to any group), it is still never deleted.
    await ok(call('PUT', `${t.base}/firmware/release`, t.token, { version: 2, product_default: false }));
    assert.deepEqual(await targetOf(t, d.id), [null, null]);
    await refused(call('DELETE', `${t.base}/firmware/2`, t.token), 409, 'firmware_in_use');
    await refused(call('PUT', `${t.base}/firmware/release`, t.token, { version: 9, product_default: true }), 404, 'not_found', /upload it first/);
    await refused(call('PUT', `${t.base}/firmware/release`, t.token, { version: 1, groups: ['nowhere'] }), 400, 'invalid_request', /no group "nowhere"/);
    await refused(call('PUT', `${t.base}/firmware/release`, t.token, { version: 1, product_default: 'maybe' }), 400, 'invalid_request');
    await refused(call('PUT', `${t.base}/firmware/release`, t.token, { product_default: true }), 400, 'invalid_request');
  });

  test('what is left out stays: a version alone is released as the default (particle-api-js), groups alone keep the default; a form body\'s groups[]', async () => {
    const t = await team();
    await uploaded(server.url, t.token, t.product.id, 5);
    await ok(call('POST', `${t.base}/groups`, t.token, { name: 'beta' }), 201);
    assert.equal((await ok(call('PUT', `${t.base}/firmware/release`, t.token, { version: 5 }))).json.product_default, true);
    const r = await ok(raw(`${server.url}${t.base}/firmware/release`, { method: 'PUT', token: t.token, form: { version: '5', 'groups[]': 'beta' } }));
    assert.deepEqual([r.json.product_default, r.json.groups], [true, ['beta']]);
    const off = await ok(call('PUT', `${t.base}/firmware/release`, t.token, { version: 5, product_default: false }));
    assert.deepEqual([off.json.product_default, off.json.groups], [false, ['beta']]);
    assert.equal((await ok(call('GET', `${t.base}/groups/beta`, t.token))).json.group.fw_version, 5);
  });

  test('which version each device is given: development none, locked its lock, in groups the highest of theirs, else the default, else none', async () => {
    const t = await team();
    for (const v of [1, 2, 3, 4]) await uploaded(server.url, t.token, t.product.id, v);
    const [plain, dev, locked, grouped, inEmptyGroup] = await Promise.all([1, 2, 3, 4, 5].map(() => provision(server.url, t.token, t.product.id)));
    const ids = [plain, dev, locked, grouped, inEmptyGroup].map((d) => d!.id);
    const targets = async () => Promise.all(ids.map((id) => targetOf(t, id)));
    assert.deepEqual(await targets(), ids.map(() => [null, null]), 'nothing released: none');

    await ok(call('PUT', `${t.base}/devices/${dev!.id}`, t.token, { development: true }));
    await ok(call('PUT', `${t.base}/devices/${locked!.id}`, t.token, { desired_firmware_version: 2 }));
    await ok(call('PUT', `${t.base}/devices/${grouped!.id}`, t.token, { groups: ['a', 'b'] }));
    await ok(call('PUT', `${t.base}/devices/${inEmptyGroup!.id}`, t.token, { groups: ['c'] }));
    await ok(call('PUT', `${t.base}/firmware/release`, t.token, { version: 1, product_default: true }));
    await ok(call('PUT', `${t.base}/firmware/release`, t.token, { version: 3, groups: ['a'] }));
    await ok(call('PUT', `${t.base}/firmware/release`, t.token, { version: 4, groups: ['b'] }));
    assert.deepEqual(await targets(), [[1, 1], [null, null], [2, 2], [4, 4], [1, 1]]);

    // A development device stays untouched even when locked; back in the fleet, its lock applies.
    const devLock = await ok(call('PUT', `${t.base}/devices/${dev!.id}`, t.token, { desired_firmware_version: 3, flash: true }));
    assert.match(devLock.json.warnings[0], /development device/);
    assert.deepEqual(await targetOf(t, dev!.id), [null, null]);
    await ok(call('PUT', `${t.base}/devices/${dev!.id}`, t.token, { development: false }));
    assert.deepEqual(await targetOf(t, dev!.id), [3, 3]);

    // Releasing 4 to group a replaces 3 there; unlocking returns a device to the default.
    await ok(call('PUT', `${t.base}/firmware/release`, t.token, { version: 4, groups: ['a', 'b'] }));
    assert.deepEqual((await ok(call('GET', `${t.base}/firmware/3`, t.token))).json.groups, []);
    await ok(call('PUT', `${t.base}/devices/${locked!.id}`, t.token, { desired_firmware_version: null }));
    assert.deepEqual(await targetOf(t, locked!.id), [1, 1]);
    const target = await server.skyport.services.firmware.targets.targetFor(grouped!.id);
    const four = (await ok(call('GET', `${t.base}/firmware/4`, t.token))).json;
    assert.deepEqual(target, { productId: t.product.id, version: 4, sha256: four.sha256, size: four.size, signature: null });
    const bytes = await server.skyport.services.firmware.targets.image(t.product.id, 4);
    assert.equal(createHash('sha256').update(bytes).digest('hex'), four.sha256, 'the image the node holding devices sends');
    // A device that leaves the product leaves its groups and is given nothing.
    await ok(call('DELETE', `${t.base}/devices/${grouped!.id}`, t.token), 204);
    assert.equal(await server.skyport.services.firmware.targets.targetFor(grouped!.id), null);
  });

  test('locks: to a version the product has; flash tells the node holding the device; a locked version is not deleted', async () => {
    const t = await team();
    const d = await provision(server.url, t.token, t.product.id);
    await refused(call('PUT', `${t.base}/devices/${d.id}`, t.token, { desired_firmware_version: 7 }), 400, 'invalid_request', /no firmware version 7/);
    await uploaded(server.url, t.token, t.product.id, 7);
    await refused(call('PUT', `${t.base}/devices/${d.id}`, t.token, { desired_firmware_version: null, flash: true }), 400, 'invalid_request', /flash/);
    await refused(call('PUT', `${t.base}/devices/${d.id}`, t.token, { flash: 'soon' }), 400, 'invalid_request');
    const lock = await ok(call('PUT', `${t.base}/devices/${d.id}`, t.token, { desired_firmware_version: 7, flash: true }));
    assert.deepEqual([lock.json.id, lock.json.desired_firmware_version, lock.json.warnings], [d.id, 7, undefined]);
    const notice = await eventually(() => notices.find((n) => n.deviceIds?.[0] === d.id && n.cause === 'lock'));
    assert.deepEqual(notice, { productId: t.product.id, deviceIds: [d.id], immediate: true, cause: 'lock' });
    await refused(call('DELETE', `${t.base}/firmware/7`, t.token), 409, 'firmware_in_use', /1 device is locked to version 7/);
    await ok(call('PUT', `${t.base}/devices/${d.id}`, t.token, { desired_firmware_version: null }));
    await ok(call('DELETE', `${t.base}/firmware/7`, t.token), 204);
  });

  test('forced updates: set on the product device, shown in its view, said in particle/device/updates/forced, and told to the node holding it', async () => {
    const t = await team();
    const d = await provision(server.url, t.token, t.product.id);
    const view = await ok(call('GET', `${t.base}/devices/${d.id}`, t.token));
    assert.deepEqual([view.json.firmware_updates_enabled, view.json.firmware_updates_forced], [true, false]);
    const on = await ok(call('PUT', `${t.base}/devices/${d.id}`, t.token, { firmware_updates_forced: true }));
    assert.equal(on.json.firmware_updates_forced, true);
    assert.equal((await ok(call('GET', `${t.base}/devices/${d.id}`, t.token))).json.firmware_updates_forced, true);
    await ok(raw(`${server.url}${t.base}/devices/${d.id}`, { method: 'PUT', token: t.token, form: { firmware_updates_forced: 'false' } }));
    const said = events.filter((e) => e.name === 'particle/device/updates/forced' && e.coreid === d.id).map((e) => [e.data, e.productId]);
    assert.deepEqual(said, [['true', t.product.id], ['false', t.product.id]]);
    const told = await eventually(() => notices.find((n) => n.deviceIds?.[0] === d.id && n.cause === 'forced'));
    assert.equal(told.immediate, true);
    await refused(call('PUT', `${t.base}/devices/${d.id}`, t.token, { firmware_updates_forced: 'yes' }), 400, 'invalid_request');
    // Outside the product route, firmware fields are not the caller's to change.
    await refused(call('PUT', `/v1/devices/${d.id}`, t.token, { firmware_updates_forced: true }), 400, 'invalid_request', /Nothing to change/);
  });

  test('the impact of a release and of a group change: devices it would update, by the version they run', async () => {
    const t = await team();
    for (const v of [1, 2]) await uploaded(server.url, t.token, t.product.id, v);
    const ds = await Promise.all([1, 2, 3, 4].map(() => provision(server.url, t.token, t.product.id)));
    await reportVersion(server.url, server.mqttUrl, t.token, t.product.id, ds[0]!, 1);
    await reportVersion(server.url, server.mqttUrl, t.token, t.product.id, ds[1]!, 2);
    await ok(call('PUT', `${t.base}/devices/${ds[2]!.id}`, t.token, { development: true }));
    await ok(call('PUT', `${t.base}/devices/${ds[3]!.id}`, t.token, { groups: ['canary'] }));
    const impact = async (q: string) => (await ok(call('GET', `${t.base}/impact?${q}`, t.token))).json.devices.firmware_update;
    assert.deepEqual(await impact('action=edit_groups_for_firmware&firmware_version=2&product_default=true'), { total: 2, by_version: [{ version: 0, total: 1 }, { version: 1, total: 1 }] },
      'all but the development device and the one running 2');
    assert.deepEqual(await impact('action=edit_groups_for_firmware&firmware_version=2&groups=canary'), { total: 1, by_version: [{ version: 0, total: 1 }] });
    await ok(call('PUT', `${t.base}/firmware/release`, t.token, { version: 2, groups: ['canary'] }));
    assert.deepEqual(await impact('action=edit_groups_for_firmware&firmware_version=2&groups=canary'), { total: 0, by_version: [] }, 'already released there');
    assert.deepEqual(await impact(`action=edit_device_groups&devices=${ds[0]!.id},${ds[1]!.id}&groups=canary`), { total: 1, by_version: [{ version: 1, total: 1 }] });
    await refused(call('GET', `${t.base}/impact?action=everything`, t.token), 400, 'invalid_request', /action must be/);
    await refused(call('GET', `${t.base}/impact?action=edit_groups_for_firmware&firmware_version=9`, t.token), 404, 'not_found');
    await refused(call('GET', `${t.base}/impact?action=edit_groups_for_firmware&firmware_version=1&groups=Nope`, t.token), 400, 'invalid_request');
    await refused(call('GET', `${t.base}/impact?action=edit_device_groups&devices=xyz&groups=canary`, t.token), 400, 'invalid_request', /devices must be/);
  });
});

describe('signing key', () => {
  test('with a key, uploads and releases carry a signature it verifies; its PEM and raw forms; removed, signatures are optional again', async () => {
    const t = await team();
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    const other = generateKeyPairSync('ed25519');
    await uploaded(server.url, t.token, t.product.id, 1);
    await ok(call('PUT', `${t.base}/firmware/release`, t.token, { version: 1, product_default: true }));
    await refused(call('GET', `${t.base}/firmware/signing-key`, t.token), 404, 'not_found');

    const pem = publicKey.export({ format: 'pem', type: 'spki' }).toString();
    const set = await ok(call('PUT', `${t.base}/firmware/signing-key`, t.token, { public_key: pem }));
    assert.equal(set.json.public_key, pem);
    assert.equal(Buffer.from(set.json.public_key_base64, 'base64').length, 32);
    assert.match(set.json.fingerprint, /^SHA256:/);
    assert.match(set.json.warnings[0], /Released version 1 carries no signature this key verifies/);
    const raw32 = (await ok(call('PUT', `${t.base}/firmware/signing-key`, t.token, { public_key: set.json.public_key_base64 }))).json;
    assert.equal(raw32.fingerprint, set.json.fingerprint, 'the same key as base64 of its 32 bytes');

    const image = firmwareBinary(t.product.id, 2);
    const signature = sign(null, image, privateKey).toString('base64');
    await refused(upload(server.url, t.token, t.product.id, image, { version: '2' }), 400, 'invalid_signature', /send `signature`/);
    await refused(upload(server.url, t.token, t.product.id, image, { version: '2', signature: sign(null, image, other.privateKey).toString('base64') }), 400, 'invalid_signature', /not the product's signing key's signature/);
    await refused(upload(server.url, t.token, t.product.id, image, { version: '2', signature: 'bm90IGEgc2lnbmF0dXJl' }), 400, 'invalid_signature', /64 bytes/);
    const signed = await ok(upload(server.url, t.token, t.product.id, image, { version: '2', signature }), 201);
    assert.equal(signed.json.signed, true);
    await ok(call('PUT', `${t.base}/firmware/release`, t.token, { version: 2, product_default: true }));
    const d = await provision(server.url, t.token, t.product.id);
    assert.equal((await server.skyport.services.firmware.targets.targetFor(d.id))?.signature?.toString('base64'), signature);

    // Version 1 was uploaded before the key: releasing it again needs a signature now.
    await refused(call('PUT', `${t.base}/firmware/release`, t.token, { version: 1, product_default: true }), 400, 'invalid_signature', /uploaded without a signature/);
    await refused(call('PUT', `${t.base}/devices/${d.id}`, t.token, { desired_firmware_version: 1 }), 400, 'invalid_signature');
    const one = (await fetch(`${server.url}${t.base}/firmware/1/binary`, { headers: { authorization: `Bearer ${t.token}` } }));
    const sig1 = sign(null, Buffer.from(await one.arrayBuffer()), privateKey).toString('base64');
    assert.equal((await ok(call('PUT', `${t.base}/firmware/release`, t.token, { version: 1, product_default: true, signature: sig1 }))).json.signed, true);
    await ok(call('PUT', `${t.base}/devices/${d.id}`, t.token, { desired_firmware_version: 1 }));

    for (const bad of ['', 'not a key', other.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'pem', type: 'spki' }).toString(), Buffer.alloc(31).toString('base64')]) {
      await refused(call('PUT', `${t.base}/firmware/signing-key`, t.token, { public_key: bad }), 400, bad === '' ? 'invalid_request' : 'invalid_signature');
    }
    assert.equal((await ok(call('GET', `${t.base}/firmware/signing-key`, t.token))).json.fingerprint, set.json.fingerprint, 'refusals changed nothing');
    await ok(call('DELETE', `${t.base}/firmware/signing-key`, t.token), 204);
    await refused(call('DELETE', `${t.base}/firmware/signing-key`, t.token), 404, 'not_found');
    await ok(upload(server.url, t.token, t.product.id, firmwareBinary(t.product.id, 3), { version: '3' }), 201);
  });
});

test('a product with firmware, releases, groups, members and a key is deleted whole', async () => {
  const t = await team();
  await uploaded(server.url, t.token, t.product.id, 1);
  const d = await provision(server.url, t.token, t.product.id);
  await ok(call('PUT', `${t.base}/devices/${d.id}`, t.token, { groups: ['g'], desired_firmware_version: 1 }));
  await ok(call('PUT', `${t.base}/firmware/release`, t.token, { version: 1, product_default: true, groups: ['g'] }));
  await ok(call('PUT', `${t.base}/firmware/signing-key`, t.token, { public_key: generateKeyPairSync('ed25519').publicKey.export({ format: 'pem', type: 'spki' }).toString() }));
  await ok(call('DELETE', t.base, t.token), 204);
  assert.equal(await server.skyport.services.firmware.targets.targetFor(d.id), null);
  const left = await server.skyport.db.query<{ n: number | string }>('SELECT (SELECT count(*) FROM product_firmware WHERE product_id = $1) + (SELECT count(*) FROM device_groups WHERE product_id = $1) AS n', [t.product.id]);
  assert.equal(Number(left[0]?.n), 0);
});

describe('particle-api-js', () => {
  test('uploads, lists, gets, edits, downloads and releases firmware, locks and unlocks a device, updates it, and lists the fleet by group', async () => {
    const { api, token } = await signUp(server.url);
    const product = await newProduct(server.url, token);
    const base = `/v1/products/${product.id}`;
    const image = firmwareBinary(product.id, 1);
    const made = await api.uploadProductFirmware({ file: image, version: 1, title: 'Blinky', description: 'first', product: product.id, auth: token });
    assert.equal(made.statusCode, 201);
    assert.deepEqual([made.body.version, made.body.title, made.body.size, made.body.current], [1, 'Blinky', image.length, false]);
    const list = await api.listProductFirmware({ product: product.id, auth: token });
    assert.deepEqual(list.body.map((f: { version: number }) => f.version), [1]);
    for (const key of ['version', 'title', 'description', 'size', 'device_count', 'current', 'uploaded_at']) assert.ok(key in list.body[0], `ProductFirmwareInfo.${key}`);
    const one = await api.getProductFirmware({ version: 1, product: product.slug, auth: token });
    assert.equal(one.body.description, 'first');
    const edited = await api.updateProductFirmware({ version: 1, title: 'Blinky 1', description: 'renamed', product: product.id, auth: token });
    assert.deepEqual([edited.body.title, edited.body.description], ['Blinky 1', 'renamed']);
    const bytes = await api.downloadProductFirmware({ version: 1, product: product.id, auth: token });
    assert.ok(Buffer.from(bytes).equals(image), 'the binary as uploaded');

    const d = await provision(server.url, token, product.id);
    const released = await api.releaseProductFirmware({ version: 1, product: product.id, auth: token });
    assert.deepEqual([released.body.product_default, released.body.warnings.length], [true, 1], 'a version alone: the product default, with Skyport\'s warning');
    const lock = await api.lockDeviceProductFirmware({ deviceId: d.id, desiredFirmwareVersion: 1, flash: true, product: product.id, auth: token });
    assert.equal(lock.body.desired_firmware_version, 1);
    assert.equal((await ok(call('GET', `${base}/devices/${d.id}`, token))).json.targeted_firmware_release_version, 1);
    const unlock = await api.unlockDeviceProductFirmware({ deviceId: d.id, product: product.id, auth: token });
    assert.equal(unlock.body.desired_firmware_version, null);
    const updated = await api.updateDevice({ deviceId: d.id, name: 'lamp-1', notes: 'hall', development: true, product: product.id, auth: token });
    assert.deepEqual([updated.body.name, updated.body.notes, updated.body.development], ['lamp-1', 'hall', true]);

    await ok(call('PUT', `${base}/devices/${d.id}`, token, { groups: ['hall'] }));
    await provision(server.url, token, product.id);
    const byGroup = await api.listDevices({ product: product.id, groups: ['hall'], auth: token });
    assert.deepEqual(byGroup.body.devices.map((x: { id: string; groups: string[] }) => [x.id, x.groups]), [[d.id, ['hall']]]);
    const all = await api.listDevices({ product: product.id, auth: token });
    assert.equal(all.body.devices.length, 2);

    const dup = await rejection(api.uploadProductFirmware({ file: image, version: 1, title: 'again', product: product.id, auth: token }));
    assert.equal(dup.statusCode, 409);
    const bad = await rejection(api.uploadProductFirmware({ file: firmwareBinary(product.id, 3), version: 2, title: 'mismatch', product: product.id, auth: token }));
    assert.deepEqual([bad.statusCode, bad.body.reason], [400, 'product_version']);
  });
});
