import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { manualClock, startTestServer, type TestServer } from './helpers/server.js';
import { raw } from './helpers/http.js';
import { eventually } from './helpers/eventually.js';
import { provision, type Identity } from './helpers/device.js';
import { engineSchema, newProduct, signUp } from './helpers/fixtures.js';
import { openEventStream, type EventStream } from './helpers/sse.js';
import { sample, scrape } from './helpers/metrics.js';
import { startProxy } from './helpers/proxy.js';
import { firmwareBinary, sha256, signingKeys, testFirmware } from './helpers/firmware.js';
import { bind, createDevice, type Device, type DeviceOptions, type FirmwareUpdate } from '../src/sdk/index.js';
import { productVersionOf } from '../src/sim/module-info.js';
import { runSimulation } from '../src/sim/simulator.js';

/**
 * Firmware updates over the device's MQTT connection (docs/device-protocol.md, "Firmware
 * updates"), with SDK devices: the transfer, its resume, the device's checks, the outcome counted
 * when the device comes back (or does not), updates disabled and forced, and the events.
 */
const clock = manualClock(new Date());
const firmware = testFirmware();
let server: TestServer;
before(async () => { server = await startTestServer({ clock, firmware: firmware.source, env: { FIRMWARE_UPDATE_TIMEOUT_SECONDS: '60', FIRMWARE_TRANSFERS: '2', METRICS: 'open' } }); });
after(async () => { await server.close(); });

const updates = () => server.skyport.services.firmwareUpdates;

async function fleet(n = 1) {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const devices: Identity[] = [];
  for (let i = 0; i < n; i++) devices.push(await provision(server.url, token, product.id));
  const stream = await openEventStream(`${server.url}/v1/products/${product.id}/events`, token);
  return { token, product, devices, stream };
}

/** An SDK device on firmware `version` that applies what it receives by the module's product version. */
function sdkDevice(who: Identity, version: number, options: Partial<DeviceOptions> = {}, url = server.mqttUrl): Device {
  const device = createDevice({ url, id: who.id, secret: who.secret, firmwareVersion: version, reconnect: { minMs: 20, maxMs: 100 }, ...options });
  device.onFirmwareUpdate(async (update) => update.apply((await productVersionOf(update.image)) ?? undefined));
  return device;
}

const flashEvents = (stream: EventStream, id: string) => stream.events.filter((e) => e.coreid === id && (e.name === 'spark/flash/status' || e.name === 'spark/status' || e.name.startsWith('particle/device/updates/'))).map((e) => `${e.name} ${JSON.stringify(e.data)}`);

async function stateOf(id: string, state: string) {
  return eventually(async () => {
    const s = await updates().stateOf(id);
    return s?.state === state ? s : undefined;
  }, 10_000, `update of ${id} ${state}`);
}

test('a whole update: offered at hello, sent in chunks, checked, applied; counted once the device is back on the new version, with Particle\'s events', async () => {
  const { token, product, devices: [who], stream } = await fleet();
  const image = firmwareBinary(product.id, 2, { dataSize: 50_000 });
  firmware.target([who!.id], product.id, 2, image);
  const device = sdkDevice(who!, 1);
  const received: FirmwareUpdate[] = [];
  device.onFirmwareUpdate(async (update) => {
    received.push(update);
    await update.apply(2);
  });
  try {
    await device.connect();
    const done = await stateOf(who!.id, 'succeeded');
    assert.equal(received.length, 1);
    assert.ok(received[0]!.image.equals(image), 'the application gets the image, whole');
    assert.deepEqual({ ...received[0], image: undefined, apply: undefined }, { version: 2, size: image.length, sha256: sha256(image), signed: false, forced: false, image: undefined, apply: undefined });
    assert.equal(device.runningFirmwareVersion, 2);
    assert.deepEqual({ state: done.state, bytesSent: done.bytesSent, offset: done.offset, size: done.size, error: done.error }, { state: 'succeeded', bytesSent: image.length, offset: image.length, size: image.length, error: null });
    assert.ok(done.startedAt && done.finishedAt);
    const listed = await raw(`${server.url}/v1/products/${product.id}/devices/${who!.id}`, { token });
    assert.equal(listed.json.firmware_version, 2);
    await eventually(() => (flashEvents(stream, who!.id).includes('spark/flash/status "success "') ? true : undefined));
    assert.deepEqual(flashEvents(stream, who!.id).filter((e) => !e.startsWith('spark/status "o')), [
      'spark/status "auto-update"', 'spark/flash/status "started "', 'spark/flash/status "success "',
    ]);
    assert.deepEqual(await updates().counts(product.id), [{ version: 2, state: 'succeeded', count: 1 }]);
    const metrics = await scrape(server.url);
    assert.ok(sample(metrics, 'skyport_firmware_bytes_sent_total') >= image.length);
    assert.ok(sample(metrics, 'skyport_firmware_updates_total', 'outcome="succeeded"') >= 1);
    assert.equal(sample(metrics, 'skyport_firmware_transfers_in_progress'), 0);
  } finally {
    stream.close();
    await device.close();
  }
});

test('a transfer cut at 60 % resumes on the next connection from what the device holds: only the rest is sent', async () => {
  const { product, devices: [who], stream } = await fleet();
  const image = firmwareBinary(product.id, 3, { dataSize: 200_000 });
  firmware.target([who!.id], product.id, 3, image);
  const proxy = await startProxy({ host: '127.0.0.1', port: Number(new URL(server.mqttUrl).port) });
  const device = sdkDevice(who!, 2, {}, `mqtt://127.0.0.1:${proxy.port}`);
  let heldAtCut = 0;
  const offers: number[] = [];
  device.on('firmware-offer', () => offers.push(Date.now()));
  device.on('firmware-progress', (_offer: unknown, held: number) => {
    if (heldAtCut > 0 || held < image.length * 0.6) return;
    heldAtCut = held;
    // The network drops every connection through it; the device reconnects by itself.
    proxy.cut();
    proxy.restore();
  });
  try {
    await device.connect();
    const done = await stateOf(who!.id, 'succeeded');
    assert.ok(heldAtCut >= image.length * 0.6 && heldAtCut < image.length, `cut at ${heldAtCut} of ${image.length}`);
    assert.equal(offers.length, 2, 'offered again on the new connection');
    // Both transfers together sent the image once, and at most the window in flight when the cut came twice.
    const window = 8 * 4096;
    assert.ok(done.bytesSent >= image.length && done.bytesSent - image.length <= window, `sent ${done.bytesSent} for an image of ${image.length}`);
    assert.equal(device.runningFirmwareVersion, 3);
    // One update: started once, succeeded once.
    await eventually(() => (flashEvents(stream, who!.id).includes('spark/flash/status "success "') ? true : undefined));
    assert.deepEqual(flashEvents(stream, who!.id).filter((e) => e.startsWith('spark/flash')), ['spark/flash/status "started "', 'spark/flash/status "success "']);
  } finally {
    stream.close();
    await device.close();
    await proxy.close();
  }
});

test('a device given the product key refuses an image whose signature does not hold, or that carries none, before applying anything', async () => {
  const { product, devices: [good, forged, unsigned], stream } = await fleet(3);
  const keys = signingKeys();
  const other = signingKeys();
  const image = firmwareBinary(product.id, 5, { dataSize: 30_000 });
  firmware.target([good!.id], product.id, 5, image, { key: keys.privateKey });
  const applied: string[] = [];
  const devices = [good!, forged!, unsigned!].map((who) => {
    const d = sdkDevice(who, 4, { firmwareKey: keys.publicKey.export({ format: 'pem', type: 'spki' }).toString() });
    d.onFirmwareUpdate(async (update) => { applied.push(who.id); await update.apply(5); });
    return d;
  });
  try {
    await Promise.all(devices.map((d) => d.connect()));
    const ok = await stateOf(good!.id, 'succeeded');
    assert.equal(ok.version, 5);

    // The same image, released signed by another key, and unsigned.
    firmware.target([forged!.id], product.id, 6, firmwareBinary(product.id, 6, { dataSize: 30_000 }), { key: other.privateKey });
    firmware.target([unsigned!.id], product.id, 7, firmwareBinary(product.id, 7, { dataSize: 30_000 }));
    const failures: Array<[string, string]> = [];
    devices[1]!.on('firmware-failed', (_o: unknown, error: string) => failures.push([forged!.id, error]));
    devices[2]!.on('firmware-failed', (_o: unknown, error: string) => failures.push([unsigned!.id, error]));
    firmware.released(server.skyport.bus, product.id);
    const bad = await stateOf(forged!.id, 'failed');
    assert.equal(bad.error, 'bad_signature');
    assert.equal(bad.offset, bad.size, 'the whole image came, and was refused');
    assert.equal((await stateOf(unsigned!.id, 'failed')).error, 'unsigned');
    assert.deepEqual(applied, [good!.id], 'nothing of a refused image is applied');
    assert.deepEqual(failures.sort(), [[forged!.id, 'bad_signature'], [unsigned!.id, 'unsigned']].sort());
    assert.equal(devices[1]!.runningFirmwareVersion, 4);
    await eventually(() => (flashEvents(stream, forged!.id).includes('spark/flash/status "failed "') ? true : undefined));
  } finally {
    stream.close();
    await Promise.all(devices.map((d) => d.close()));
  }
});

test('a device back on its old version counts failed and is not offered the version again until a release names it; one that never comes back fails after the time-out', async () => {
  const { product, devices: [reverts, vanishes], stream } = await fleet(2);
  firmware.target([reverts!.id, vanishes!.id], product.id, 9, firmwareBinary(product.id, 9, { dataSize: 20_000 }));
  let reverting = true;
  const a = sdkDevice(reverts!, 8);
  a.onFirmwareUpdate((update) => update.apply(reverting ? 8 : 9));
  const b = sdkDevice(vanishes!, 8);
  // It holds the image and goes away for good (a device that bricked itself applying it).
  b.onFirmwareUpdate(() => b.close());
  try {
    await Promise.all([a.connect(), b.connect()]);
    const failed = await stateOf(reverts!.id, 'failed');
    assert.equal(failed.error, 'old_version');
    await eventually(() => (flashEvents(stream, reverts!.id).includes('spark/flash/status "failed "') ? true : undefined));

    // Its next connections bring nothing new: a failure is not repeated by itself.
    const offers: number[] = [];
    a.on('firmware-offer', () => offers.push(1));
    a.disableUpdates().enableUpdates();
    await stateOf(vanishes!.id, 'applying');
    // Until a release names it again.
    reverting = false;
    firmware.released(server.skyport.bus, product.id, [reverts!.id]);
    await stateOf(reverts!.id, 'succeeded');
    assert.equal(offers.length, 1);

    // The other said done and is gone: failed once the time-out has passed, by the clock.
    await updates().sweep();
    assert.equal((await updates().stateOf(vanishes!.id))?.state, 'applying');
    clock.advance(61_000);
    await updates().sweep();
    const lost = await stateOf(vanishes!.id, 'failed');
    assert.equal(lost.error, 'no_return');
    await eventually(() => (flashEvents(stream, vanishes!.id).includes('spark/flash/status "failed "') ? true : undefined));
    // Back after all, on the new version: it succeeded.
    const back = createDevice({ url: server.mqttUrl, id: vanishes!.id, secret: vanishes!.secret, firmwareVersion: 9, reconnect: false });
    await back.connect();
    await stateOf(vanishes!.id, 'succeeded');
    await back.close();
  } finally {
    stream.close();
    await Promise.all([a.close(), b.close()]);
  }
});

test('updates disabled: the update waits (pending) until the device takes updates again; forced updates go anyway', async () => {
  const { product, devices: [who, forcedWho], stream } = await fleet(2);
  firmware.target([who!.id, forcedWho!.id], product.id, 11, firmwareBinary(product.id, 11, { dataSize: 20_000 }));
  const device = sdkDevice(who!, 10, { updatesEnabled: false });
  const enabledOf = async (id: string) => (await server.skyport.db.query<{ e: boolean }>('SELECT firmware_updates_enabled AS e FROM devices WHERE id = $1', [id]))[0]?.e;
  try {
    await device.connect();
    await stateOf(who!.id, 'pending');
    assert.equal(await enabledOf(who!.id), false);
    await eventually(() => (flashEvents(stream, who!.id).includes('particle/device/updates/pending "true"') ? true : undefined));
    assert.ok(flashEvents(stream, who!.id).includes('particle/device/updates/enabled "false"'));

    device.enableUpdates();
    await stateOf(who!.id, 'succeeded');
    assert.equal(await enabledOf(who!.id), true);
    assert.ok(flashEvents(stream, who!.id).includes('particle/device/updates/enabled "true"'));

    // The product forces updates: a device that disabled them takes this one all the same.
    await server.skyport.db.query('UPDATE devices SET firmware_updates_forced = true WHERE id = $1', [forcedWho!.id]);
    const forced = sdkDevice(forcedWho!, 10, { updatesEnabled: false });
    const offers: boolean[] = [];
    forced.on('firmware-offer', (offer: { forced: boolean }) => offers.push(offer.forced));
    await forced.connect();
    await stateOf(forcedWho!.id, 'succeeded');
    assert.deepEqual(offers, [true]);
    await forced.close();
  } finally {
    stream.close();
    await device.close();
  }
});

test('many devices take one release: the node reads the image once, runs at most FIRMWARE_TRANSFERS at a time, and the others wait their turn', async () => {
  const { product, devices: whos } = await fleet(5);
  const image = firmwareBinary(product.id, 13, { dataSize: 40_000 });
  firmware.target(whos.map((w) => w.id), product.id, 13, image);
  const devices = whos.map((who) => sdkDevice(who, 12));
  let most = 0;
  const watch = setInterval(() => { most = Math.max(most, updates().inProgress()); }, 1);
  try {
    await Promise.all(devices.map((d) => d.connect()));
    for (const who of whos) await stateOf(who.id, 'succeeded');
    assert.deepEqual(firmware.loads.filter((l) => l === `${product.id}/13`), [`${product.id}/13`], 'read once for the five devices');
    assert.ok(most <= 2, `${most} transfers at once`);
    assert.deepEqual(await updates().counts(product.id), [{ version: 13, state: 'succeeded', count: 5 }]);
  } finally {
    clearInterval(watch);
    await Promise.all(devices.map((d) => d.close()));
  }
});

test('settings scoped to a firmware range follow the device\'s new version at once after the update', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const schema = engineSchema({ boost: { type: 'integer', title: 'Boost', description: '', default: 3, minimum: 0, maximum: 9, minimumFirmwareVersion: 21 } });
  const put = await raw(`${server.url}/v1/products/${product.id}/config`, { method: 'PUT', token, body: JSON.stringify(schema), headers: { 'content-type': 'application/schema+json' } });
  assert.equal(put.status, 200, put.text);
  const who = await provision(server.url, token, product.id);
  firmware.target([who.id], product.id, 21, firmwareBinary(product.id, 21, { dataSize: 20_000 }));
  const engine = { idle: 0, fastpub: 0, boost: -1 };
  const device = sdkDevice(who, 20);
  await device.configModule('engine', { idle: bind.integer(engine, 'idle'), fastpub: bind.integer(engine, 'fastpub'), boost: bind.integer(engine, 'boost') });
  const boosts: number[] = [];
  device.on('config', (module: string, value: Record<string, number>) => { if (module === 'engine') boosts.push(value.boost as number); });
  try {
    await device.connect();
    await stateOf(who.id, 'succeeded');
    // On firmware 20 the engine module came without boost; on 21, with it, on the connection after the restart.
    await eventually(() => (engine.boost === 3 ? true : undefined));
    assert.equal(engine.idle, 1600);
    assert.equal(device.runningFirmwareVersion, 21);
    const read = await raw(`${server.url}/v1/products/${product.id}/config/${who.id}`, { token });
    assert.deepEqual(read.json.outside_firmware_range, []);
  } finally {
    await device.close();
  }
});

test('simulated devices fail the shares of updates they are told to: refused, check failed, never back, back on the old version', async () => {
  const { product, devices: whos } = await fleet(5);
  firmware.target(whos.map((w) => w.id), product.id, 31, firmwareBinary(product.id, 31, { dataSize: 20_000 }));
  const draws = [0.1, 0.3, 0.5, 0.7, 0.9];
  const sim = await runSimulation({
    mqttUrl: server.mqttUrl, identities: whos, firmwareVersion: 30, random: () => draws.shift() ?? 0.99,
    updateFailures: { refuse: 0.2, check: 0.2, vanish: 0.2, revert: 0.2 },
  });
  try {
    const ended = async () => {
      const states = await Promise.all(whos.map((w) => updates().stateOf(w.id)));
      return states.every((s) => s?.state === 'failed' || s?.state === 'succeeded' || s?.state === 'applying') && states.filter((s) => s?.state === 'applying').length === 1 ? states : undefined;
    };
    await eventually(ended, 10_000, 'four outcomes and one device gone');
    clock.advance(61_000);
    await updates().sweep();
    const states = await Promise.all(whos.map((w) => updates().stateOf(w.id)));
    assert.deepEqual(states.map((s) => s?.error ?? s?.state).sort(), ['check_failed', 'no_return', 'old_version', 'refused', 'succeeded']);
    assert.deepEqual(sim.updates, { offered: 5, applied: 1, refused: 1, checkFailed: 1, vanished: 1, reverted: 1 });
  } finally {
    await Promise.all(sim.devices.map((d) => d.close()));
  }
});

test('a standard release reaches connected devices at their next connection; an intelligent one at once', async () => {
  const { product, devices: [later, now] } = await fleet(2);
  const a = sdkDevice(later!, 50);
  const b = sdkDevice(now!, 50);
  try {
    await Promise.all([a.connect(), b.connect()]);
    // Their hellos were looked at before there was anything to offer.
    await Promise.all([later!, now!].map((w) => updates().settled(w.id)));
    firmware.target([later!.id, now!.id], product.id, 51, firmwareBinary(product.id, 51, { dataSize: 20_000 }));
    firmware.released(server.skyport.bus, product.id, [later!.id], false);
    // The sentinel: an intelligent release for the other device, taken at once.
    firmware.released(server.skyport.bus, product.id, [now!.id], true);
    await stateOf(now!.id, 'succeeded');
    assert.equal(await updates().stateOf(later!.id), null, 'nothing offered before its next connection');
    await a.restart();
    await stateOf(later!.id, 'succeeded');
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('a release noticed while the transfer ends: the device is not offered the update again', async () => {
  const { product, devices: [who] } = await fleet();
  const image = firmwareBinary(product.id, 2, { dataSize: 4_000 });
  firmware.target([who!.id], product.id, 2, image);
  const device = sdkDevice(who!, 1);
  let offers = 0;
  let accept!: () => void;
  const accepted = new Promise<void>((resolve) => { accept = resolve; });
  let apply!: () => void;
  const applied = new Promise<void>((resolve) => { apply = resolve; });
  device.onFirmwareOffer(async () => {
    offers += 1;
    await accepted;
    return true;
  });
  device.onFirmwareUpdate(async (update) => {
    await applied;
    await update.apply(2);
  });
  const targetFor = firmware.source.targetFor;
  try {
    await device.connect();
    await eventually(() => (offers === 1 ? true : undefined), 10_000, 'the offer');
    // A release notice for the device: its look holds on reading the target, after it saw the
    // transfer under way...
    let entered!: () => void;
    const reading = new Promise<void>((resolve) => { entered = resolve; });
    let release!: () => void;
    const held = new Promise<void>((resolve) => { release = resolve; });
    firmware.source.targetFor = async (id) => {
      entered();
      await held;
      return targetFor(id);
    };
    firmware.released(server.skyport.bus, product.id, [who!.id]);
    await reading;
    // ...while the device takes the whole image and says `done` (it applies it later).
    accept();
    await stateOf(who!.id, 'applying');
    firmware.source.targetFor = targetFor;
    release();
    await updates().settled(who!.id);
    assert.equal(updates().inProgress(), 0, 'no second transfer started');
    apply();
    await stateOf(who!.id, 'succeeded');
    assert.equal(offers, 1);
  } finally {
    firmware.source.targetFor = targetFor;
    await device.close();
  }
});
