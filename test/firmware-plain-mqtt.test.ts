import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import mqtt from 'mqtt';
import { startTestServer, type TestServer } from './helpers/server.js';
import { eventually } from './helpers/eventually.js';
import { provision, type Identity } from './helpers/device.js';
import { newProduct, signUp } from './helpers/fixtures.js';
import { firmwareBinary, testFirmware } from './helpers/firmware.js';

/**
 * A device written from docs/device-protocol.md ("Firmware updates") alone, with plain mqtt.js:
 * the offer, `ready`, binary chunks, batched acknowledgements, a cut at 60 % and the resume that
 * sends only the rest, `done`, the restart; and what the cloud answers to messages it refuses.
 */
const firmware = testFirmware();
let server: TestServer;
before(async () => { server = await startTestServer({ firmware: firmware.source }); });
after(async () => { await server.close(); });

type Json = Record<string, unknown>;

/** A plain device: connected, subscribed to everything the cloud sends it, recording it. */
async function plainDevice(who: Identity, hello: Json, subscribe = `devices/${who.id}/cloud/#`) {
  const c = await mqtt.connectAsync(server.mqttUrl, { clientId: who.id, username: who.id, password: who.secret, reconnectPeriod: 0 });
  const messages: Array<{ topic: string; payload: Buffer }> = [];
  const waiting: Array<() => void> = [];
  c.on('message', (topic, payload) => {
    messages.push({ topic, payload });
    for (const w of waiting.splice(0)) w();
  });
  await c.subscribeAsync(subscribe, { qos: 1 });
  await c.publishAsync(`devices/${who.id}/hello`, JSON.stringify(hello), { qos: 1 });
  /** The next message on `leaf` (after `from`, an index into `messages`). */
  const next = async (leaf: string, from = 0): Promise<{ at: number; payload: Buffer }> => {
    const until = Date.now() + 5000;
    for (;;) {
      const at = messages.findIndex((m, i) => i >= from && m.topic === `devices/${who.id}/cloud/${leaf}`);
      if (at >= 0) return { at, payload: (messages[at] as { payload: Buffer }).payload };
      if (Date.now() > until) throw new Error(`no ${leaf}`);
      await new Promise<void>((resolve) => { waiting.push(resolve); setTimeout(resolve, 50); });
    }
  };
  const send = (leaf: string, body: Json | string) => c.publishAsync(`devices/${who.id}/${leaf}`, typeof body === 'string' ? body : JSON.stringify(body), { qos: 1 });
  return { c, messages, next, send };
}

/**
 * Receives chunks of the offer from `held` on into `image`, acknowledging every four (half the
 * window), until `stopAt` bytes; answers what is held and the image bytes received.
 */
async function receive(dev: Awaited<ReturnType<typeof plainDevice>>, offer: Json, image: Buffer, held: number, stopAt: number, from: number, chunkSize = offer.chunk_size as number) {
  let at = from;
  let got = 0;
  let acked = held;
  while (held < stopAt) {
    const chunk = await dev.next('ota/chunk', at);
    at = chunk.at + 1;
    const p = chunk.payload;
    assert.equal(p.toString('latin1', 0, 8), offer.id);
    assert.equal(p.readUInt32BE(8), held, 'chunks come in order from the offset of ready');
    const bytes = p.subarray(12);
    assert.ok(bytes.length <= chunkSize);
    bytes.copy(image, held);
    held += bytes.length;
    got += bytes.length;
    if (held - acked >= 4 * chunkSize || held === offer.size) {
      acked = held;
      await dev.send('ota/ack', { id: offer.id, offset: held });
    }
  }
  return { held, got, at };
}

test('a plain MQTT device takes an update from the protocol document: cut at 60 %, it receives only the rest, then restarts on the new version', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const who = await provision(server.url, token, product.id);
  const release = firmwareBinary(product.id, 2, { dataSize: 100_000 });
  firmware.target([who.id], product.id, 2, release);

  const first = await plainDevice(who, { firmware_version: 1, updates_enabled: true });
  const offer = JSON.parse((await first.next('ota/begin')).payload.toString()) as Json;
  assert.deepEqual(Object.keys(offer).sort(), ['chunk_size', 'forced', 'id', 'sha256', 'signature', 'size', 'version', 'window']);
  assert.deepEqual({ version: offer.version, size: offer.size, signature: offer.signature, forced: offer.forced }, { version: 2, size: release.length, signature: null, forced: false });
  const image = Buffer.alloc(release.length);
  await first.send('ota/ready', { id: offer.id, offset: 0 });
  const cut = await receive(first, offer, image, 0, Math.ceil(release.length * 0.6), 0);
  first.c.end(true);

  // On the next connection the same image (same sha256) is offered again, under a new id.
  const second = await plainDevice(who, { firmware_version: 1 });
  const again = JSON.parse((await second.next('ota/begin')).payload.toString()) as Json;
  assert.equal(again.sha256, offer.sha256);
  assert.notEqual(again.id, offer.id);
  await second.send('ota/ready', { id: again.id, offset: cut.held });
  const rest = await receive(second, again, image, cut.held, release.length, 0);
  assert.equal(rest.got, release.length - cut.held, 'only the rest is sent');
  assert.ok(image.equals(release));
  assert.equal(createHash('sha256').update(image).digest('hex'), offer.sha256);
  await second.send('ota/done', { id: again.id });
  await eventually(async () => ((await server.skyport.services.firmwareUpdates.stateOf(who.id))?.state === 'applying' ? true : undefined));
  second.c.end(true);

  // Restarted on the new version.
  const restarted = await plainDevice(who, { firmware_version: 2 });
  const done = await eventually(async () => {
    const s = await server.skyport.services.firmwareUpdates.stateOf(who.id);
    return s?.state === 'succeeded' ? s : undefined;
  });
  assert.equal(done.offset, release.length);
  await restarted.c.endAsync();
});

test('what the cloud refuses on the firmware topics is answered on cloud/error, and the transfer goes on; a device that refuses for want of updates waits', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const who = await provision(server.url, token, product.id);
  const release = firmwareBinary(product.id, 4, { dataSize: 60_000 });
  const dev = await plainDevice(who, { firmware_version: 3 });
  const errors = async (from: number) => JSON.parse((await dev.next('error', from)).payload.toString()) as Json;

  // No transfer under way; malformed messages.
  const bad: Array<[string, Json | string, string]> = [
    ['ota/ready', 'not json', 'bad_payload'],
    ['ota/ready', { id: 'short', offset: 0 }, 'bad_payload'],
    ['ota/ready', { id: 'abcdefgh', offset: -1 }, 'bad_payload'],
    ['ota/ready', { id: 'abcdefgh', offset: 0, chunk_size: 8 }, 'bad_payload'],
    ['ota/ack', { id: 'abcdefgh' }, 'bad_payload'],
    ['ota/done', { id: 'abcdefgh', error: 'Not A Name!' }, 'bad_payload'],
    ['ota/ack', { id: 'abcdefgh', offset: 10 }, 'unknown_transfer'],
    ['ota/done', { id: 'abcdefgh' }, 'unknown_transfer'],
  ];
  for (const [leaf, body, error] of bad) {
    const from = dev.messages.length;
    await dev.send(leaf, body);
    const said = await errors(from);
    assert.deepEqual({ topic: said.topic, error: said.error }, { topic: `devices/${who.id}/${leaf}`, error }, `${leaf} ${JSON.stringify(body)}`);
  }

  // A transfer under way: an acknowledgement beyond what was sent is refused; a `ready` again goes back.
  firmware.target([who.id], product.id, 4, release);
  firmware.released(server.skyport.bus, product.id);
  const offer = JSON.parse((await dev.next('ota/begin')).payload.toString()) as Json;
  await dev.send('ota/ready', { id: offer.id, offset: 0, chunk_size: 1024 });
  const firstChunk = await dev.next('ota/chunk');
  assert.equal(firstChunk.payload.length, 12 + 1024, 'the smaller chunks the device asked for');
  let from = dev.messages.length;
  await dev.send('ota/ack', { id: offer.id, offset: release.length });
  assert.equal((await errors(from)).error, 'bad_payload');
  from = dev.messages.length;
  await dev.send('ota/ready', { id: offer.id, offset: 2048 });
  const image = Buffer.alloc(release.length);
  release.copy(image, 0, 0, 2048);
  // Chunks already on their way before the new ready are skipped: the first at 2048 after it.
  let at = from;
  for (;;) {
    const c = await dev.next('ota/chunk', at);
    at = c.at + 1;
    if (c.payload.readUInt32BE(8) !== 2048) continue;
    c.payload.subarray(12).copy(image, 2048);
    break;
  }
  const rest = await receive(dev, offer, image, 2048 + 1024, release.length, at, 1024);
  assert.equal(rest.held, release.length);
  assert.ok(image.equals(release));
  // Its check failed: the update fails with the device's error.
  await dev.send('ota/done', { id: offer.id, error: 'check_failed' });
  const failed = await eventually(async () => {
    const s = await server.skyport.services.firmwareUpdates.stateOf(who.id);
    return s?.state === 'failed' ? s : undefined;
  });
  assert.equal(failed.error, 'check_failed');

  // Released again; the device does not take updates now: the update waits, and the device is taken at its word.
  firmware.released(server.skyport.bus, product.id, [who.id]);
  const offer2 = JSON.parse((await dev.next('ota/begin', at)).payload.toString()) as Json;
  await dev.send('ota/ready', { id: offer2.id, error: 'updates_disabled' });
  await eventually(async () => ((await server.skyport.services.firmwareUpdates.stateOf(who.id))?.state === 'pending' ? true : undefined));
  const rows = await server.skyport.db.query<{ e: boolean }>('SELECT firmware_updates_enabled AS e FROM devices WHERE id = $1', [who.id]);
  assert.equal(rows[0]?.e, false);
  // Still connected and answered.
  assert.equal(dev.c.connected, true);
  await dev.c.endAsync();
});

test('a device not subscribed to the firmware topics is not sent anything: its update fails at once, not_subscribed', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const who = await provision(server.url, token, product.id);
  firmware.target([who.id], product.id, 2, firmwareBinary(product.id, 2, { dataSize: 10_000 }));
  const dev = await plainDevice(who, { firmware_version: 1 }, `devices/${who.id}/cloud/call`);
  const failed = await eventually(async () => {
    const s = await server.skyport.services.firmwareUpdates.stateOf(who.id);
    return s?.state === 'failed' ? s : undefined;
  });
  assert.deepEqual({ error: failed.error, bytesSent: failed.bytesSent, startedAt: failed.startedAt }, { error: 'not_subscribed', bytesSent: 0, startedAt: null });
  assert.equal(server.skyport.services.firmwareUpdates.inProgress(), 0);
  await dev.c.endAsync();
});
