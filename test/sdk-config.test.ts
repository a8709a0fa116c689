import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, type TestServer } from './helpers/server.js';
import { raw } from './helpers/http.js';
import { engineSchema as engineSchemaOf, newProduct, signUp } from './helpers/fixtures.js';
import { bindEngine, provision, type Engine, type Identity } from './helpers/device.js';
import { eventually } from './helpers/eventually.js';
import { bind, ConfigStatus, createDevice, type Device } from '../src/sdk/index.js';
import { check } from '../src/sdk/config.js';

/**
 * Firmware-side configuration modules of the device SDK
 * (docs/particle-compatibility.md#configuration-on-the-device): bindings, the codes of refused
 * values, the saved file, and the custom schema example of Particle's tracker documentation
 * (docs/particle-compatibility.md#custom-schemas; an `engine` module
 * with an idle speed and a publish period) from the REST API down to the device and back after a
 * restart. Also: settings outside a device's firmware range are not sent to it.
 */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
let server: TestServer;
let dir: string;
before(async () => {
  server = await startTestServer({ env: { DEVICE_CALL_TIMEOUT_SECONDS: '2' } });
  dir = await mkdtemp(join(tmpdir(), 'skyport-config-'));
});
after(async () => {
  await server.close();
  await rm(dir, { recursive: true, force: true });
});

const engineSchema = (extra: Json = {}): string => JSON.stringify(engineSchemaOf(extra));

async function productWithSchema(schema: string) {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const put = await raw(`${server.url}/v1/products/${product.id}/config`, { method: 'PUT', token, body: schema, headers: { 'content-type': 'application/schema+json' } });
  assert.equal(put.status, 200, put.text);
  return { token, product };
}


/** An SDK device binding the engine module (idle up to `maxIdle` on this hardware) and rgb's type. */
async function engineDevice(who: Identity, configDir: string, options: { maxIdle?: number; firmwareVersion?: number } = {}) {
  const engine: Engine = { idle: 0, fastpub: 0 };
  const rgbTypes: number[] = [];
  let rgb = 0;
  const device = createDevice({ url: server.mqttUrl, id: who.id, secret: who.secret, reconnect: false, configDir, firmwareVersion: options.firmwareVersion });
  await bindEngine(device, engine, options.maxIdle);
  await device.configModule('rgb', {
    type: bind.enumeration({ off: 0, tracker: 1, particle: 2 }, { get: () => rgb, set: (v) => { rgb = v; rgbTypes.push(v); } }),
  });
  return { device, engine, rgbTypes, rgb: () => rgb };
}

const closeAll = (...devices: Device[]) => Promise.all(devices.map((d) => d.close()));

test('bindings check whole modules before applying any of them, with the codes of the protocol', () => {
  const target = { n: 5, f: 0.5 };
  let flag = false;
  let mode = 1;
  const bindings = {
    n: bind.integer(target, 'n', { min: 0, max: 10 }),
    f: bind.float(target, 'f', { max: 1 }),
    flag: bind.boolean({ get: () => flag, set: (v) => { flag = v; } }),
    name: bind.string({ get: () => 'x', set: () => undefined, maxLength: 4 }),
    mode: bind.enumeration({ low: 1, high: 2 }, { get: () => mode, set: (v) => { mode = v; } }),
    zone: bind.object({ r: bind.integer(target, 'n', { min: 1, max: 3 }) }),
  };
  assert.equal(check(bindings, { n: 10, f: -3.5, flag: true, name: 'abcd', mode: 'high', unknown: [1] }), ConfigStatus.ok);
  assert.equal(check(bindings, { n: 11 }), ConfigStatus.outOfRange);
  assert.equal(check(bindings, { f: 1.01 }), ConfigStatus.outOfRange);
  assert.equal(check(bindings, { n: '5' }), ConfigStatus.invalid);
  assert.equal(check(bindings, { n: null }), ConfigStatus.invalid);
  assert.equal(check(bindings, { flag: 1 }), ConfigStatus.invalid);
  assert.equal(check(bindings, { name: 'abcde' }), ConfigStatus.outOfRange);
  assert.equal(check(bindings, { mode: 'medium' }), ConfigStatus.invalid);
  assert.equal(check(bindings, { mode: 2 }), ConfigStatus.invalid, 'enumerations travel as strings');
  assert.equal(check(bindings, { zone: { r: 4 } }), ConfigStatus.outOfRange);
  assert.equal(check(bindings, { zone: 3 }), ConfigStatus.invalid);
  assert.equal(check(bindings, [1]), ConfigStatus.invalid);
});

test('the engine example of Particle\'s tracker documentation: a fleet write reaches the SDK device, is saved, and survives a restart', async () => {
  const { token, product } = await productWithSchema(engineSchema());
  const who = await provision(server.url, token, product.id);
  const configDir = join(dir, who.id);
  const status = async () => (await raw(`${server.url}/v1/products/${product.id}/config/${who.id}`, { token })).json as Json;

  const first = await engineDevice(who, configDir);
  const applied: string[] = [];
  first.device.on('config', (module: string) => applied.push(module));
  await first.device.connect();
  // At connect the device holds nothing: it is sent the schema defaults of the modules it binds.
  await eventually(() => (first.engine.idle === 1600 ? true : undefined));
  await eventually(() => (first.rgb() === 2 ? true : undefined));

  const put = await raw(`${server.url}/v1/products/${product.id}/config`, { method: 'PUT', token, json: { engine: { idle: 900, fastpub: 30000 }, rgb: { type: 'off' } } });
  assert.equal(put.status, 200, put.text);
  await eventually(() => (first.engine.idle === 900 && first.engine.fastpub === 30000 ? true : undefined));
  await eventually(() => (first.rgb() === 0 ? true : undefined));
  assert.deepEqual(first.rgbTypes, [2, 0], 'the setter heard each change');
  assert.deepEqual(first.device.configValue('rgb'), { type: 'off' }, 'stored cloud-side as the string');
  await eventually(async () => ((await status()).configuration.current.engine?.idle === 900 ? true : undefined));

  const saved = JSON.parse(await readFile(join(configDir, 'engine.json'), 'utf8')) as Json;
  assert.equal(saved.version, 1);
  assert.deepEqual(saved.value, { idle: 900, fastpub: 30000 });
  assert.match(saved.hash, /^[0-9a-f]{16}$/);
  assert.deepEqual((await readdir(configDir)).sort(), ['engine.json', 'rgb.json'], 'no temporary file is left behind');
  // Modules the device does not bind are refused with "unknown module", and not sent again on the fleet change.
  const s = await status();
  assert.equal(s.rejected.location, ConfigStatus.unknownModule);
  assert.ok(!applied.includes('location'));
  await first.device.close();

  // A restart: the saved values are back before connecting, and nothing is sent for them.
  const second = await engineDevice(who, configDir);
  assert.equal(second.engine.idle, 900);
  assert.equal(second.rgb(), 0);
  const received: string[] = [];
  second.device.on('config', (module: string) => received.push(module));
  await second.device.connect();
  const changed = await raw(`${server.url}/v1/products/${product.id}/config`, { method: 'PUT', token, json: { engine: { idle: 1000, fastpub: 30000 }, rgb: { type: 'off' } } });
  assert.equal(changed.status, 200);
  await eventually(() => (second.engine.idle === 1000 ? true : undefined));
  // A sentinel: a later write that changes rgb alone. A device's deliveries come in turn, so once
  // rgb is in, anything the first write sent has come before it.
  const sentinel = await raw(`${server.url}/v1/products/${product.id}/config`, { method: 'PUT', token, json: { engine: { idle: 1000, fastpub: 30000 }, rgb: { type: 'tracker' } } });
  assert.equal(sentinel.status, 200);
  // 'config' comes once the module is saved, just after it is applied.
  await eventually(() => (received.includes('rgb') ? true : undefined));
  assert.deepEqual(received, ['engine', 'rgb'], 'each write sent only the module that changed');
  await closeAll(second.device);
});

test('a value the device cannot take is refused with its code and changes nothing on the device', async () => {
  const { token, product } = await productWithSchema(engineSchema());
  const who = await provision(server.url, token, product.id);
  const dev = await raw(`${server.url}/v1/products/${product.id}/devices/${who.id}`, { method: 'PUT', token, json: { development: true } });
  assert.equal(dev.status, 200, dev.text);
  // This hardware idles at 5000 at most, less than the schema allows.
  const { device, engine } = await engineDevice(who, join(dir, who.id), { maxIdle: 5000 });
  await device.connect();
  try {
    await eventually(() => (engine.idle === 1600 ? true : undefined));
    const put = (config: Json) => raw(`${server.url}/v1/products/${product.id}/config/${who.id}`, { method: 'PUT', token, json: config });
    const refused = await put({ engine: { idle: 8000, fastpub: 10 } });
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.json.error, 'device_rejected_configuration');
    assert.deepEqual(refused.json.results.find((r: Json) => r.module === 'engine'), { module: 'engine', status: 'rejected', code: ConfigStatus.outOfRange });
    assert.deepEqual({ ...engine }, { idle: 1600, fastpub: 0 }, 'fastpub was fine, but the module is taken whole or not at all');
    // The same value again is not sent again, and the answer still says that the device refuses it.
    const again = await put({ engine: { idle: 8000, fastpub: 10 } });
    assert.equal(again.status, 400, again.text);
    assert.deepEqual(again.json.results.find((r: Json) => r.module === 'engine'), { module: 'engine', status: 'rejected', code: ConfigStatus.outOfRange });
    const taken = await put({ engine: { idle: 4000, fastpub: 10 } });
    assert.equal(taken.status, 200, taken.text);
    assert.deepEqual({ ...engine }, { idle: 4000, fastpub: 10 });
  } finally {
    await device.close();
  }
});

test('settings outside a device firmware range are not sent to it, and its read says so', async () => {
  const { token, product } = await productWithSchema(engineSchema({
    boost: { type: 'integer', title: 'Boost', description: '', default: 3, minimum: 0, maximum: 9, minimumFirmwareVersion: 20 },
  }));
  const oldWho = await provision(server.url, token, product.id);
  const newWho = await provision(server.url, token, product.id);
  const boosts: Record<string, number[]> = {};
  const devices = await Promise.all([[oldWho, 19], [newWho, 20]].map(async ([who, fw]) => {
    const id = (who as Identity).id;
    const engine = { idle: 0, fastpub: 0, boost: -1 };
    boosts[id] = [];
    const d = createDevice({ url: server.mqttUrl, id, secret: (who as Identity).secret, reconnect: false, firmwareVersion: fw as number });
    await d.configModule('engine', {
      idle: bind.integer(engine, 'idle'),
      fastpub: bind.integer(engine, 'fastpub'),
      boost: bind.integer(engine, 'boost'),
    });
    d.on('config', (_m: string, value: Json) => boosts[id]?.push(value.boost as number));
    await d.connect();
    return { d, engine };
  }));
  try {
    await eventually(() => (devices.every((x) => x.engine.idle === 1600) ? true : undefined));
    assert.equal(devices[0]?.engine.boost, -1, 'firmware 19 never gets boost');
    assert.equal(devices[1]?.engine.boost, 3);
    const read = async (who: Identity) => (await raw(`${server.url}/v1/products/${product.id}/config/${who.id}`, { token })).json as Json;
    // The device applies a write before its acknowledgement reaches the cloud: wait for that.
    const old = await eventually(async () => {
      const r = await read(oldWho);
      return r.configuration.current.engine ? r : undefined;
    });
    assert.deepEqual(old.outside_firmware_range, [{ path: '/engine/boost', minimumFirmwareVersion: 20 }]);
    assert.equal('boost' in old.configuration.current.engine, false);
    assert.deepEqual((await read(newWho)).outside_firmware_range, []);
  } finally {
    await closeAll(...devices.map((x) => x.d));
  }
});

test('a damaged saved file is reported and ignored: the device takes its configuration from the cloud again', async () => {
  const { token, product } = await productWithSchema(engineSchema());
  const who = await provision(server.url, token, product.id);
  const configDir = join(dir, `${who.id}-damaged`);
  const first = await engineDevice(who, configDir);
  await first.device.connect();
  await eventually(() => (first.engine.idle === 1600 ? true : undefined));
  await first.device.close();
  await writeFile(join(configDir, 'engine.json'), '{"version":1,"hash":');

  const device = createDevice({ url: server.mqttUrl, id: who.id, secret: who.secret, reconnect: false, configDir });
  const errors: Error[] = [];
  device.on('error', (e: Error) => errors.push(e));
  const engine = { idle: 0, fastpub: 0 };
  await device.configModule('engine', { idle: bind.integer(engine, 'idle'), fastpub: bind.integer(engine, 'fastpub') });
  assert.equal(errors.length, 1);
  assert.equal(engine.idle, 0);
  await device.connect();
  try {
    await eventually(() => (engine.idle === 1600 ? true : undefined));
  } finally {
    await device.close();
  }
  await assert.rejects(device.configModule('engine', {}), /already registered/);
  await assert.rejects(device.configModule('../etc', {}), /letters, digits or underscores/);
});
