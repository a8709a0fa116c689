import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { sign } from 'node:crypto';
import { startTestServer, type TestServer } from './helpers/server.js';
import { raw } from './helpers/http.js';
import { eventually } from './helpers/eventually.js';
import { provision } from './helpers/device.js';
import { newProduct, signUp } from './helpers/fixtures.js';
import { openEventStream } from './helpers/sse.js';
import { firmwareBinary, signingKeys, upload } from './helpers/firmware.js';
import { runSimulation } from '../src/sim/simulator.js';
import { createDevice } from '../src/sdk/index.js';

/**
 * Product firmware and its transfer together, as a product team uses them: a binary uploaded with
 * particle-api-js and released to a group reaches the group's simulated devices while the others
 * (the rest of the fleet, a locked and a development device) stay as they are; a signed release is
 * taken by a device given the product's key and refused by one given another key.
 */
let server: TestServer;
before(async () => { server = await startTestServer(); });
after(async () => { await server.close(); });

const updates = () => server.skyport.services.firmwareUpdates;

test('a release to a group updates the group\'s devices over MQTT; the rest of the fleet, a locked and a development device stay as they are', async () => {
  const { api, token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const base = `${server.url}/v1/products/${product.id}`;
  for (const version of [1, 2]) {
    const made = await api.uploadProductFirmware({ file: firmwareBinary(product.id, version, { dataSize: 30_000 }), version, title: `v${version}`, product: product.id, auth: token });
    assert.equal(made.statusCode, 201);
  }
  const [g1, g2, rest, locked, dev] = await Promise.all([1, 2, 3, 4, 5].map(() => provision(server.url, token, product.id)));
  const put = async (id: string, json: Record<string, unknown>) => assert.equal((await raw(`${base}/devices/${id}`, { method: 'PUT', token, json })).status, 200);
  for (const d of [g1!, g2!, locked!, dev!]) await put(d.id, { groups: ['beta'] });
  await put(locked!.id, { desired_firmware_version: 1 });
  await put(dev!.id, { development: true });
  assert.equal((await api.releaseProductFirmware({ version: 1, product: product.id, auth: token })).statusCode, 200);
  const fleet = [g1!, g2!, rest!, locked!, dev!];
  const stream = await openEventStream(`${base}/events`, token);
  const sim = await runSimulation({ mqttUrl: server.mqttUrl, identities: fleet, firmwareVersion: 1 });
  try {
    // Their hellos found them on the version they should run.
    await Promise.all(fleet.map((d) => updates().settled(d.id)));
    const released = await raw(`${base}/firmware/release`, { method: 'PUT', token, json: { version: 2, groups: ['beta'], intelligent: true } });
    assert.equal(released.status, 200, released.text);
    for (const d of [g1!, g2!]) {
      await eventually(async () => ((await updates().stateOf(d.id))?.state === 'succeeded' ? true : undefined), 10_000, `${d.id} updated`);
      const view = await raw(`${base}/devices/${d.id}`, { token });
      assert.deepEqual([view.json.firmware_version, view.json.targeted_firmware_release_version], [2, 2]);
    }
    await eventually(() => (stream.events.filter((e) => e.name === 'spark/flash/status' && e.data === 'success ').length === 2 ? true : undefined));
    for (const d of [rest!, locked!, dev!]) {
      assert.equal(await updates().stateOf(d.id), null, 'offered nothing');
      assert.equal((await raw(`${base}/devices/${d.id}`, { token })).json.firmware_version, 1);
    }
    assert.deepEqual(sim.updates, { offered: 2, applied: 2, refused: 0, checkFailed: 0, vanished: 0, reverted: 0 });
    assert.deepEqual(await updates().counts(product.id), [{ version: 2, state: 'succeeded', count: 2 }]);
  } finally {
    stream.close();
    await Promise.all(sim.devices.map((d) => d.close()));
  }
});

test('a signed release: the device given the product\'s key takes it; one given another key refuses it before applying anything', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const base = `${server.url}/v1/products/${product.id}`;
  const keys = signingKeys();
  const stranger = signingKeys();
  const pem = keys.publicKey.export({ format: 'pem', type: 'spki' }).toString();
  const key = await raw(`${base}/firmware/signing-key`, { method: 'PUT', token, json: { public_key: pem } });
  assert.equal(key.status, 200, key.text);
  const image = firmwareBinary(product.id, 7, { dataSize: 30_000 });
  const made = await upload(server.url, token, product.id, image, { version: '7', signature: sign(null, image, keys.privateKey).toString('base64') });
  assert.equal(made.status, 201, made.text);
  const [trusting, wary] = await Promise.all([1, 2].map(() => provision(server.url, token, product.id)));
  const applied: string[] = [];
  const devices = [[trusting!, key.json.public_key_base64 as string], [wary!, stranger.publicKey.export({ format: 'pem', type: 'spki' }).toString()]].map(([who, firmwareKey]) => {
    const d = createDevice({ url: server.mqttUrl, id: (who as { id: string }).id, secret: (who as { secret: string }).secret, firmwareVersion: 6, firmwareKey: firmwareKey as string, reconnect: { minMs: 20, maxMs: 100 } });
    d.onFirmwareUpdate(async (update) => { applied.push(d.id); await update.apply(); });
    return d;
  });
  try {
    await Promise.all(devices.map((d) => d.connect()));
    const released = await raw(`${base}/firmware/release`, { method: 'PUT', token, json: { version: 7, intelligent: true } });
    assert.equal(released.status, 200, released.text);
    await eventually(async () => ((await updates().stateOf(trusting!.id))?.state === 'succeeded' ? true : undefined), 10_000, 'the trusting device updated');
    const refused = await eventually(async () => {
      const s = await updates().stateOf(wary!.id);
      return s?.state === 'failed' ? s : undefined;
    }, 10_000, 'the wary device refused');
    assert.equal(refused.error, 'bad_signature');
    assert.deepEqual(applied, [trusting!.id]);
    assert.deepEqual(devices.map((d) => d.runningFirmwareVersion), [7, 6]);
  } finally {
    await Promise.all(devices.map((d) => d.close()));
  }
});
