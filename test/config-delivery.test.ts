import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './helpers/server.js';
import { raw } from './helpers/http.js';
import { engineSchema, newProduct, signUp } from './helpers/fixtures.js';
import { configDevice as deviceSpeakingConfig, provision, type Holdings, type Identity } from './helpers/device.js';
import { eventually } from './helpers/eventually.js';

/**
 * Configuration delivery to a plain mqtt.js device written from docs/device-protocol.md
 * ("Configuration"): hashes at connect, one module per message, acknowledgements, and the
 * answers of a device write (200 applied, 400 refused, 408 no answer, 202 offline).
 */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
let server: TestServer;
before(async () => { server = await startTestServer({ env: { DEVICE_CALL_TIMEOUT_SECONDS: '1' } }); });
after(async () => { await server.close(); });

const configDevice = (who: Identity, held: Holdings, answer?: (module: string) => number | 'silent') => deviceSpeakingConfig(server.mqttUrl, who, held, answer);

test('a device takes its configuration at connect, fleet changes at once, and reports only what differs after a reconnect', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const who = await provision(server.url, token, product.id);
  const status = async () => (await raw(`${server.url}/v1/products/${product.id}/config/${who.id}`, { token })).json as Json;
  const held = new Map<string, { value: Json; hash: string }>();

  const first = await configDevice(who, held);
  await eventually(async () => (Object.keys((await status()).configuration.pending).length === 0 ? true : undefined));
  assert.equal(held.size, 9, 'every module of the default schema');
  assert.deepEqual((await status()).configuration.current.rgb, { type: 'particle' });

  const fleet = await raw(`${server.url}/v1/products/${product.id}/config`, { method: 'PUT', token, json: { rgb: { type: 'off' } } });
  assert.equal(fleet.status, 200);
  await eventually(() => (held.get('rgb')?.value.type === 'off' ? true : undefined));
  await eventually(async () => ((await status()).configuration.current.rgb?.type === 'off' ? true : undefined));
  await first.client.endAsync();

  // Offline: the write is held (202) and delivered at the next connect; nothing else is resent.
  await eventually(async () => ((await raw(`${server.url}/v1/products/${product.id}/devices/${who.id}`, { token })).json.online === false ? true : undefined));
  const offline = await raw(`${server.url}/v1/products/${product.id}/config/${who.id}`, { method: 'PUT', token, json: { geofence: { interval: 60 } } });
  assert.equal(offline.status, 202, offline.text);
  assert.equal(offline.json.configuration.pending.geofence.interval, 60);
  const second = await configDevice(who, held);
  await eventually(() => (held.get('geofence')?.value.interval === 60 ? true : undefined));
  assert.deepEqual(second.received, ['geofence']);
  await second.client.endAsync();
});

test('devices connecting together are each answered for what they hold; what one holds unrecorded is recorded, not sent again', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const [holdsAll, holdsNothing, holdsAllButRgb] = await Promise.all([provision(server.url, token, product.id), provision(server.url, token, product.id), provision(server.url, token, product.id)]);
  const status = async (who: Identity) => (await raw(`${server.url}/v1/products/${product.id}/config/${who.id}`, { token })).json as Json;
  // What each module's hash will be, from the device read (delivery.desired_hash), before any device connected.
  const desired = Object.fromEntries(Object.entries((await status(holdsAll)).delivery as Record<string, { desired_hash: string }>).map(([m, d]) => [m, d.desired_hash]));
  assert.equal(Object.keys(desired).length, 9);
  const holding = (except: string[]) => new Map(Object.entries(desired).filter(([m]) => !except.includes(m)).map(([m, hash]) => [m, { value: {}, hash }]));
  const devices = await Promise.all([
    configDevice(holdsAll, holding([])),
    configDevice(holdsNothing, new Map()),
    configDevice(holdsAllButRgb, new Map([...holding(['rgb']), ['rgb', { value: {}, hash: '0000000000000000' }]])),
  ]);
  for (const who of [holdsAll, holdsNothing, holdsAllButRgb]) {
    await eventually(async () => (Object.values((await status(who)).delivery as Record<string, { state: string }>).every((d) => d.state === 'in_sync') ? true : undefined));
  }
  const [all, nothing, allButRgb] = devices;
  assert.deepEqual(all!.received, [], 'a device that holds everything is sent nothing, and its holdings are recorded');
  assert.equal(nothing!.received.length, 9);
  assert.deepEqual(allButRgb!.received, ['rgb']);
  await Promise.all(devices.map((d) => d.client.endAsync()));
});

test('device writes answer 200 when applied, 400 with the codes when refused, and a timeout when unanswered', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const who = await provision(server.url, token, product.id);
  const held = new Map<string, { value: Json; hash: string }>();
  let mode: 'ok' | 'refuse' | 'silent' = 'ok';
  const dev = await configDevice(who, held, (module) => (mode === 'refuse' && module === 'geofence' ? -33 : mode === 'silent' ? 'silent' : 0));
  try {
    const put = (config: Json) => raw(`${server.url}/v1/products/${product.id}/config/${who.id}`, { method: 'PUT', token, json: config });
    await eventually(() => (held.size === 9 ? true : undefined));
    const applied = await put({ geofence: { interval: 5 } });
    assert.equal(applied.status, 200, applied.text);
    assert.equal(applied.json.configuration.current.geofence.interval, 5);

    mode = 'refuse';
    const refused = await put({ geofence: { interval: 7 } });
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.json.error, 'device_rejected_configuration');
    assert.deepEqual(refused.json.results, [{ module: 'geofence', status: 'rejected', code: -33 }]);
    const afterRefusal = (await raw(`${server.url}/v1/products/${product.id}/config/${who.id}`, { token })).json as Json;
    assert.equal(afterRefusal.rejected.geofence, -33);
    assert.equal(afterRefusal.delivery.geofence.state, 'rejected');
    assert.equal(afterRefusal.delivery.geofence.code, -33);
    assert.equal(afterRefusal.delivery.geofence.held_hash, applied.json.delivery.geofence.desired_hash, 'the device still holds the value it took');
    assert.notEqual(afterRefusal.delivery.geofence.desired_hash, afterRefusal.delivery.geofence.held_hash);
    assert.deepEqual({ ...afterRefusal.delivery.rgb, since: undefined, desired_hash: undefined, held_hash: undefined }, { state: 'in_sync', code: null, since: undefined, desired_hash: undefined, held_hash: undefined });

    mode = 'silent';
    const unanswered = await put({ geofence: { interval: 9 } });
    assert.equal(unanswered.status, 408, unanswered.text);
    assert.match(unanswered.json.error_description, /stays pending/);
    const waiting = (await raw(`${server.url}/v1/products/${product.id}/config/${who.id}`, { token })).json as Json;
    assert.equal(waiting.configuration.pending.geofence.interval, 9);
    assert.deepEqual(waiting.own, { geofence: { interval: 9 } }, 'the own values as written, nothing filled in');
    assert.equal(waiting.delivery.geofence.state, 'pending');
    assert.ok(Date.now() - Date.parse(waiting.delivery.geofence.since) < 60_000, 'pending since the write');
  } finally {
    await dev.client.endAsync();
  }
});

test('a schema change reaches connected devices at once: a new module and new defaults are sent without a reconnect', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const who = await provision(server.url, token, product.id);
  const held: Holdings = new Map();
  const dev = await configDevice(who, held);
  try {
    await eventually(() => (held.size === 9 ? true : undefined));
    const schema = engineSchema();
    const saved = await raw(`${server.url}/v1/products/${product.id}/config`, { method: 'PUT', token, headers: { 'content-type': 'application/schema+json' }, body: JSON.stringify(schema) });
    assert.equal(saved.status, 200, saved.text);
    await eventually(() => (held.get('engine')?.value.idle === 1600 ? true : undefined));
    assert.deepEqual(dev.received.slice(9), ['engine'], 'only what the schema changed is sent');
  } finally {
    await dev.client.endAsync();
  }
});

test('a connected device that becomes a development device takes its own values at once', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const who = await provision(server.url, token, product.id);
  const device = `${server.url}/v1/products/${product.id}/devices/${who.id}`;
  const config = `${server.url}/v1/products/${product.id}/config`;
  const held: Holdings = new Map();
  const dev = await configDevice(who, held);
  try {
    await eventually(() => (held.size === 9 ? true : undefined));
    // Own values of a fleet module, written while a development device; then back to regular,
    // and a fleet write: the fleet's value wins again.
    assert.equal((await raw(device, { method: 'PUT', token, json: { development: true } })).status, 200);
    assert.equal((await raw(`${config}/${who.id}`, { method: 'PUT', token, json: { rgb: { type: 'tracker' } } })).status, 200);
    assert.equal((await raw(device, { method: 'PUT', token, json: { development: false } })).status, 200);
    assert.equal((await raw(config, { method: 'PUT', token, json: { rgb: { type: 'off' } } })).status, 200);
    await eventually(() => (held.get('rgb')?.value.type === 'off' ? true : undefined));

    // A development device again: its own value wins, and reaches it without a reconnect.
    assert.equal((await raw(device, { method: 'PUT', token, json: { development: true } })).status, 200);
    await eventually(() => (held.get('rgb')?.value.type === 'tracker' ? true : undefined));
    // The device holds the value before its acknowledgement reaches the cloud: wait for that.
    const status = await eventually(async () => {
      const s = (await raw(`${config}/${who.id}`, { token })).json as Json;
      return Object.keys(s.configuration.pending).length === 0 ? s : undefined;
    });
    assert.equal(status.sources.rgb, 'device');
  } finally {
    await dev.client.endAsync();
  }
});

test('a connected device imported into another product takes that fleet\'s next change at once', async () => {
  const { token } = await signUp(server.url);
  const [from, to] = await Promise.all([newProduct(server.url, token), newProduct(server.url, token)]);
  const who = await provision(server.url, token, from.id);
  const held = new Map<string, { value: Json; hash: string }>();
  const device = await configDevice(who, held);
  try {
    await eventually(async () => (Object.keys(((await raw(`${server.url}/v1/products/${from.id}/config/${who.id}`, { token })).json as Json).configuration.pending).length === 0 ? true : undefined));
    assert.equal((await raw(`${server.url}/v1/products/${from.id}/devices/${who.id}`, { method: 'DELETE', token })).status, 204);
    const imported = await raw(`${server.url}/v1/products/${to.id}/devices`, { method: 'POST', token, json: { id: who.id } });
    assert.equal(imported.status, 200, imported.text);
    assert.deepEqual(imported.json.updatedDeviceIds, [who.id]);
    // The fan-out goes to the devices this node's connections hold in the product: the import's
    // notice moved the connection before the write's.
    assert.equal((await raw(`${server.url}/v1/products/${to.id}/config`, { method: 'PUT', token, json: { rgb: { type: 'off' } } })).status, 200);
    await eventually(() => (held.get('rgb')?.value.type === 'off' ? true : undefined));
    await eventually(async () => (((await raw(`${server.url}/v1/products/${to.id}/config/${who.id}`, { token })).json as Json).configuration.current.rgb?.type === 'off' ? true : undefined));
  } finally {
    await device.client.endAsync();
  }
});
