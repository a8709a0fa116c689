import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { manualClock, startTestServer, type TestServer } from './helpers/server.js';
import { eventually } from './helpers/eventually.js';
import { openEventStream, type EventStream } from './helpers/sse.js';
import { inGroup, rolloutProduct, updatingDevice, type Fate, type RolloutProduct } from './helpers/rollouts.js';
import type { Identity } from './helpers/device.js';
import type { Device } from '../src/sdk/index.js';
import mqtt from 'mqtt';
import { firmwareBinary, upload } from './helpers/firmware.js';

/**
 * Staged rollouts (docs/firmware.md, "Staged rollouts") with SDK devices that take updates as the
 * simulator does: waves that start by themselves once the success threshold is met, an error
 * threshold that pauses, resume and abort, manual advance, the rate on the injected clock, locked
 * and development devices left alone. Ticks are the test's (the background one is an hour away),
 * as the leader's would be.
 */
const clock = manualClock(new Date());
let server: TestServer;
const devices: Device[] = [];
before(async () => { server = await startTestServer({ clock, env: { FIRMWARE_ROLLOUT_TICK_SECONDS: '3600' } }); });
after(async () => {
  await Promise.all(devices.map((d) => d.close()));
  await server.close();
});

const tick = () => server.skyport.services.firmware.rollouts.tick();

/** Connects an SDK device on `version` with a fate for its updates. */
async function connect(who: Identity, version: number, fate: Fate = 'apply'): Promise<Device> {
  const d = updatingDevice(server.mqttUrl, who, version, fate);
  devices.push(d);
  await d.connect();
  return d;
}

async function product(n: number, versions?: number[]) {
  const p = await rolloutProduct(server.url, n, versions);
  const stream = await openEventStream(`${server.url}${p.base}/events`, p.token);
  return { ...p, stream };
}

type Rollout = { id: number; state: string; reason: { code: string; message: string } | null; current_wave: number; awaiting_advance: boolean; waves: Array<{ devices: number; state: string; progress: Record<string, number> }>; progress: Record<string, number>; excluded: Record<string, number> };
const get = async (p: RolloutProduct, id: number): Promise<Rollout> => (await p.call('GET', `/firmware/rollouts/${id}`)).json as Rollout;

/** Ticks until the rollout's answer satisfies `ok` (devices update meanwhile). */
async function tickUntil(p: RolloutProduct, id: number, ok: (r: Rollout) => boolean, what: string): Promise<Rollout> {
  return eventually(async () => {
    // A tick every 100 ms at most, as a leader's would be, not one per poll.
    await new Promise((resolve) => setTimeout(resolve, 100));
    await tick();
    const r = await get(p, id);
    return ok(r) ? r : undefined;
  }, 20_000, what);
}

const rolloutEvents = (stream: EventStream) => stream.events.filter((e) => e.name === 'particle/firmware/rollout').map((e) => {
  const d = JSON.parse(e.data as string) as { action: string; wave?: number; reason?: string };
  return d.wave === undefined ? d.action : `${d.action} ${d.wave}`;
});
const targetOf = async (p: RolloutProduct, id: string) => (await p.call('GET', `/devices/${id}`)).json.targeted_firmware_release_version as number | null;

test('two waves: the second starts by itself once the first meets the success threshold; then the version is released to the fleet', async () => {
  const p = await product(4);
  await inGroup(p, [p.devices[0]!.id, p.devices[1]!.id], 'first');
  const fleet: Device[] = [];
  for (const who of p.devices) fleet.push(await connect(who, 1));
  const made = await p.call('POST', '/firmware/rollouts', { version: 2, waves: [{ group: 'first' }, { percent: 100 }], success_threshold: 100 }, 201);
  const id = made.json.id as number;
  assert.deepEqual([made.json.state, made.json.current_wave, made.json.waves.map((w: { devices: number }) => w.devices)], ['running', 1, [2, 2]]);

  await tick();
  // The second wave's devices are left alone meanwhile: still targeted at nothing.
  assert.deepEqual((await get(p, id)).waves[1]!.progress.not_started, 2);
  assert.equal(await targetOf(p, p.devices[2]!.id), null);
  assert.equal(await targetOf(p, p.devices[0]!.id), 2);
  const first = await tickUntil(p, id, (r) => r.current_wave === 2, 'the second wave started');
  assert.deepEqual(first.waves[0]!.progress.succeeded, 2);
  const done = await tickUntil(p, id, (r) => r.state === 'completed', 'completed');
  assert.deepEqual(done.progress, { not_started: 0, pending: 0, downloading: 0, applying: 0, succeeded: 4, failed: 0, excluded: 0 });
  assert.deepEqual(done.waves.map((w) => w.state), ['done', 'done']);
  assert.deepEqual(fleet.map((d) => d.runningFirmwareVersion), [2, 2, 2, 2]);
  const firmware = (await p.call('GET', '/firmware/2')).json;
  assert.equal(firmware.product_default, true, 'completed: the version is the product default');
  await eventually(() => (rolloutEvents(p.stream).includes('completed') ? true : undefined));
  assert.deepEqual(rolloutEvents(p.stream), ['started 1', 'wave_started 2', 'completed']);
  assert.ok(p.stream.events.some((e) => e.name === 'particle/firmware/release'));
  p.stream.close();
});

test('failures past the error threshold pause the rollout, saying why; resume counts from then; abort leaves devices not yet updated as they are', async () => {
  const p = await product(8);
  const [refuses, failsCheck, applies, applies2, second, offline, offline2, third] = p.devices as Identity[] as [Identity, Identity, Identity, Identity, Identity, Identity, Identity, Identity];
  await inGroup(p, [refuses.id, failsCheck.id, applies.id, applies2.id], 'canary');
  await inGroup(p, [second.id, offline.id, offline2.id], 'second');
  await connect(refuses, 1, 'refuse');
  await connect(failsCheck, 1, 'check');
  await connect(second, 1);
  await connect(third, 1);
  // Two canaries connect later: the first wave's outcome waits for them, so the two failures come first.
  const made = await p.call('POST', '/firmware/rollouts', {
    version: 2, waves: [{ group: 'canary' }, { group: 'second' }], success_threshold: 40, error_threshold: { count: 2 },
  }, 201);
  const id = made.json.id as number;
  assert.equal(made.json.waves.length, 3, 'what the waves leave is a last wave');

  const paused = await tickUntil(p, id, (r) => r.state === 'paused', 'paused by the error threshold');
  assert.equal(paused.reason?.code, 'error_threshold');
  assert.match(paused.reason?.message ?? '', /2 of 2 finished updates failed: the error threshold is 2 failures/);
  assert.deepEqual([paused.waves[0]!.progress.failed, paused.waves[0]!.progress.pending, paused.current_wave], [2, 2, 1]);
  // Paused: ticks start nothing, and the devices started get their update all the same.
  await connect(applies, 1);
  await connect(applies2, 1);
  await eventually(async () => ((await get(p, id)).waves[0]!.progress.succeeded === 2 ? true : undefined), 15_000, 'the other canaries updated');
  await tick();
  assert.equal((await get(p, id)).waves[1]!.progress.not_started, 3);
  await p.call('POST', `/firmware/rollouts/${id}/pause`, undefined, 409);

  clock.advance(1000);
  const resumed = await p.call('POST', `/firmware/rollouts/${id}/resume`);
  assert.deepEqual([resumed.json.state, resumed.json.reason], ['running', null]);
  // The failures before the resume no longer count: the first wave's 50 % meets 40 %, the second starts
  // (and stays, at 33 %, its two offline devices pending).
  const running = await tickUntil(p, id, (r) => r.waves[1]!.progress.succeeded === 1, 'the second wave under way');
  assert.deepEqual([running.state, running.current_wave, running.waves[1]!.progress.pending], ['running', 2, 2], 'the offline devices are started, and pending');
  assert.equal(await targetOf(p, offline.id), 2);

  const aborted = await p.call('POST', `/firmware/rollouts/${id}/abort`, { reason: 'bad batch' });
  assert.deepEqual([aborted.json.state, aborted.json.reason], ['aborted', { code: 'aborted', message: 'bad batch' }]);
  await tick();
  assert.equal((await get(p, id)).waves[2]!.progress.not_started, 1, 'nothing is started after an abort');
  // The device not yet updated follows the releases again (none: it is given nothing when it connects);
  // the updated ones keep the version until the next release.
  assert.equal(await targetOf(p, offline.id), null);
  assert.equal(await targetOf(p, second.id), 2);
  const late = await connect(offline, 1);
  const offers: unknown[] = [];
  late.on('firmware-offer', (o: unknown) => offers.push(o));
  await server.skyport.services.firmwareUpdates.settled(offline.id);
  assert.deepEqual(offers, []);
  assert.equal(await targetOf(p, third.id), null);
  await eventually(() => (rolloutEvents(p.stream).includes('aborted') ? true : undefined));
  assert.deepEqual(rolloutEvents(p.stream), ['started 1', 'paused', 'resumed', 'wave_started 2', 'aborted']);
  const pausedEvent = p.stream.events.find((e) => e.name === 'particle/firmware/rollout' && e.data?.includes('paused'));
  assert.match(pausedEvent?.data ?? '', /error threshold/);
  await p.call('POST', `/firmware/rollouts/${id}/abort`, undefined, 409);
  // Going back is a release: the devices the rollout updated follow it.
  await p.call('PUT', '/firmware/release', { version: 1, product_default: true });
  assert.equal(await targetOf(p, second.id), 1);
  p.stream.close();
});

test('an abort stops a transfer under way at its next step: no more chunks, the device told the transfer is gone, the update failed', async () => {
  const p = await product(1, [1]);
  const r = await upload(server.url, p.token, p.product.id, firmwareBinary(p.product.id, 2, { dataSize: 100_000 }), { version: '2', title: 'big' });
  assert.equal(r.status, 201, r.text);
  const who = p.devices[0]!;
  // A device of plain MQTT that takes the offer and then acknowledges nothing: the cloud sends a window and waits.
  const c = await mqtt.connectAsync(server.mqttUrl, { clientId: who.id, username: who.id, password: who.secret, reconnectPeriod: 0 });
  const seen: Array<{ leaf: string; payload: Buffer }> = [];
  c.on('message', (topic, payload) => {
    const leaf = topic.slice(`devices/${who.id}/cloud/`.length);
    seen.push({ leaf, payload });
    if (leaf === 'ota/begin') void c.publishAsync(`devices/${who.id}/ota/ready`, JSON.stringify({ id: JSON.parse(payload.toString()).id, offset: 0 }), { qos: 1 });
  });
  try {
    await c.subscribeAsync(`devices/${who.id}/cloud/#`, { qos: 1 });
    await c.publishAsync(`devices/${who.id}/hello`, JSON.stringify({ functions: [], variables: {}, firmware_version: 1 }), { qos: 1 });
    const id = (await p.call('POST', '/firmware/rollouts', { version: 2 }, 201)).json.id as number;
    await tick();
    const chunks = () => seen.filter((m) => m.leaf === 'ota/chunk').length;
    await eventually(() => (chunks() === 8 ? true : undefined), 10_000, 'a window of chunks');
    const offer = JSON.parse(seen.find((m) => m.leaf === 'ota/begin')!.payload.toString()) as { id: string; chunk_size: number };
    await p.call('POST', `/firmware/rollouts/${id}/abort`);
    // The node holding the device stops the transfer: the update failed, `superseded` (the abort itself marks it `aborted`).
    const failed = await eventually(async () => {
      const s = await server.skyport.services.firmwareUpdates.stateOf(who.id);
      return s?.error === 'superseded' ? s : undefined;
    }, 10_000, 'the transfer stopped');
    assert.equal(failed.state, 'failed');
    assert.equal(server.skyport.services.firmwareUpdates.inProgress(), 0);
    // Its next step: the acknowledgement that would open the window is refused, and nothing more comes.
    await c.publishAsync(`devices/${who.id}/ota/ack`, JSON.stringify({ id: offer.id, offset: 8 * offer.chunk_size }), { qos: 1 });
    const refusal = await eventually(() => seen.find((m) => m.leaf === 'error'), 5000, 'cloud/error');
    assert.equal(JSON.parse(refusal.payload.toString()).error, 'unknown_transfer');
    assert.equal(chunks(), 8);
    assert.equal(await targetOf(p, who.id), null, 'it follows the releases again');
  } finally {
    await c.endAsync();
    p.stream.close();
  }
});

test('manual advance: the next wave waits for a person, even with the threshold met', async () => {
  const p = await product(2);
  for (const who of p.devices) await connect(who, 1);
  const id = (await p.call('POST', '/firmware/rollouts', { version: 2, waves: [{ count: 1 }], advance: 'manual' }, 201)).json.id as number;
  const waiting = await tickUntil(p, id, (r) => r.awaiting_advance, 'awaiting advance');
  assert.deepEqual([waiting.current_wave, waiting.waves[0]!.progress.succeeded, waiting.waves[1]!.progress.not_started], [1, 1, 1]);
  await tick();
  assert.equal((await get(p, id)).current_wave, 1, 'a tick does not advance it');
  const next = await p.call('POST', `/firmware/rollouts/${id}/next`);
  assert.equal(next.json.current_wave, 2);
  await tickUntil(p, id, (r) => r.state === 'completed', 'completed');
  await p.call('POST', `/firmware/rollouts/${id}/next`, undefined, 409);
  await p.call('POST', `/firmware/rollouts/${id}/pause`, undefined, 409);
  p.stream.close();
});

test('the rate: at most rate_per_minute devices started in any minute, by the injected clock; offline devices count pending', async () => {
  const p = await product(5);
  const id = (await p.call('POST', '/firmware/rollouts', { version: 2, rate_per_minute: 2 }, 201)).json.id as number;
  const started = async () => {
    await tick();
    const r = await get(p, id);
    return r.progress.pending;
  };
  assert.equal(await started(), 2);
  assert.equal(await started(), 2, 'the same minute: no more');
  clock.advance(30_000);
  assert.equal(await started(), 2);
  clock.advance(31_000);
  assert.equal(await started(), 4, 'a minute after the first two');
  clock.advance(61_000);
  assert.equal(await started(), 5);
  const r = await get(p, id);
  assert.deepEqual([r.state, r.progress.not_started], ['running', 0]);
  await p.call('POST', `/firmware/rollouts/${id}/abort`);
  p.stream.close();
});

test('locked and development devices, and devices a group release keeps elsewhere, are left out and said so; they keep what they run', async () => {
  const p = await product(4, [1, 2, 3]);
  const [dev, locked, grouped, plain] = p.devices as [Identity, Identity, Identity, Identity];
  await p.call('PUT', `/devices/${dev.id}`, { development: true });
  await p.call('PUT', `/devices/${locked.id}`, { desired_firmware_version: 1 });
  await inGroup(p, [grouped.id], 'beta');
  await p.call('PUT', '/firmware/release', { version: 3, groups: ['beta'], product_default: false });
  const d = [await connect(dev, 1), await connect(locked, 1), await connect(grouped, 3), await connect(plain, 1)];
  const offers: string[] = [];
  d.slice(0, 3).forEach((x, i) => x.on('firmware-offer', () => offers.push(['dev', 'locked', 'grouped'][i]!)));
  const made = await p.call('POST', '/firmware/rollouts', { version: 2 }, 201);
  assert.deepEqual(made.json.excluded, { development: 1, locked: 1, other_release: 1 });
  assert.equal(made.json.waves[0].devices, 1);
  const done = await tickUntil(p, made.json.id as number, (r) => r.state === 'completed', 'completed');
  assert.equal(done.progress.succeeded, 1);
  await Promise.all([dev, locked, grouped].map((w) => server.skyport.services.firmwareUpdates.settled(w.id)));
  assert.deepEqual(offers, []);
  assert.deepEqual(d.map((x) => x.runningFirmwareVersion), [1, 1, 3, 2]);
  p.stream.close();
});

test('bad requests answer 400, 404 or 409 with a clear error, never 500', async () => {
  const p = await product(1);
  const bad = async (json: unknown, status: number, match: RegExp) => {
    const r = await p.call('POST', '/firmware/rollouts', json, status);
    assert.match(r.json.error_description ?? r.json.message ?? r.text, match);
  };
  await bad({ version: 9 }, 404, /no firmware version 9/);
  await bad({ version: 2, waves: [] }, 400, /waves/);
  await bad({ version: 2, waves: [{ percent: 0 }] }, 400, /percent/);
  await bad({ version: 2, waves: [{ group: 'nope' }] }, 400, /no group "nope"/);
  await bad({ version: 2, error_threshold: {} }, 400, /error_threshold needs/);
  await bad({ version: 2, advance: 'sometimes' }, 400, /advance/);
  await bad({ version: 2, rate_per_minute: 0 }, 400, /rate_per_minute/);
  await p.call('POST', '/firmware/rollouts', { version: 2 }, 201);
  await bad({ version: 2 }, 409, /under way/);
  const kept = await p.call('DELETE', '/firmware/2', undefined, 409);
  assert.match(kept.json.error_description, /released or rolled out/, 'a version rolled out is kept as a released one is');
  await p.call('GET', '/firmware/rollouts/999999', undefined, 404);
  const list = await p.call('GET', '/firmware/rollouts');
  assert.equal(list.json.rollouts.length, 1);
  p.stream.close();
});

test('PUT …/firmware/release with `rollout` starts a rollout instead of a release', async () => {
  const p = await product(1);
  const r = await p.call('PUT', '/firmware/release', { version: 2, product_default: true, rollout: { waves: ['50%'], rate_per_minute: 10 } });
  assert.equal(r.json.product_default, false, 'not released yet');
  assert.deepEqual([r.json.rollout.state, r.json.rollout.fleet, r.json.rollout.rate_per_minute, r.json.rollout.waves[0].percent], ['running', true, 10, 50]);
  await p.call('PUT', '/firmware/release', { version: 2, product_default: true, groups: ['x'], rollout: {} }, 400);
  p.stream.close();
});
