import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshStore, manualClock, startTestServer, STORE, type TestServer } from './helpers/server.js';
import { faultyDb, type FaultyDb } from './helpers/faults.js';
import { eventually } from './helpers/eventually.js';
import { rolloutProduct, updatingDevice, type RolloutProduct } from './helpers/rollouts.js';
import { FIRMWARE_RELEASED, type FirmwareReleased } from '../src/services/firmware/index.js';
import type { Device } from '../src/sdk/index.js';

/**
 * A rollout's state is in the store (docs/firmware.md, "Staged rollouts"): a node that dies in
 * the middle of a tick loses nothing, and another Skyport on the same store takes the rollout on
 * without starting any device twice; a tick whose notice never reached the nodes is made good by a
 * later one.
 */
const ENV = { FIRMWARE_ROLLOUT_TICK_SECONDS: '3600' };

type Progress = Record<string, number>;
const progressOf = async (p: RolloutProduct, id: number): Promise<{ state: string; progress: Progress }> => (await p.call('GET', `/firmware/rollouts/${id}`)).json;

test('a node killed in the middle of a tick: a second Skyport on the same store goes on; nothing is lost, no device is started twice', async () => {
  const clock = manualClock(new Date());
  const dir = STORE === 'embedded' ? await mkdtemp(join(tmpdir(), 'skyport-rollout-')) : undefined;
  const store = await freshStore(dir ? { dataDir: dir } : {});
  let db: FaultyDb | undefined;
  const devices: Device[] = [];
  let a: TestServer | undefined;
  let b: TestServer | undefined;
  try {
    a = await startTestServer({ store, clock, env: ENV, wrapDb: (d) => (db = faultyDb(d)) });
    const p = await rolloutProduct(a.url, 4);
    for (const who of p.devices) devices.push(updatingDevice(a.mqttUrl, who, 1));
    await Promise.all(devices.map((d) => d.connect()));
    const id = (await p.call('POST', '/firmware/rollouts', { version: 2, rate_per_minute: 2 }, 201)).json.id as number;
    await a.skyport.services.firmware.rollouts.tick();
    await eventually(async () => ((await progressOf(p, id)).progress.succeeded === 2 ? true : undefined), 15_000, 'the first two updated');
    const first = p.devices.filter((_, i) => devices[i]!.runningFirmwareVersion === 2).map((w) => w.id);
    assert.equal(first.length, 2);

    // The next minute's tick dies as it marks the next devices started: its transaction is gone whole.
    clock.advance(61_000);
    db!.crashAt(/UPDATE firmware_rollout_devices rd SET started_at/);
    await a.skyport.services.firmware.rollouts.tick();
    assert.equal(db!.crashed, true);
    assert.deepEqual((await progressOf(p, id)).progress.not_started, 2);
    await Promise.all(devices.map((d) => d.close()));
    await a.close();
    a = undefined;

    // Another Skyport on the same store: the devices come back to it, on what they run.
    b = await startTestServer({ store, clock, env: ENV });
    const told: string[] = [];
    b.skyport.bus.listen(FIRMWARE_RELEASED, (n) => { told.push(...((n as FirmwareReleased).deviceIds ?? [])); });
    const again = p.devices.map((who) => updatingDevice(b!.mqttUrl, who, first.includes(who.id) ? 2 : 1));
    const offers: string[] = [];
    again.forEach((d, i) => d.on('firmware-offer', () => offers.push(p.devices[i]!.id)));
    devices.splice(0, devices.length, ...again);
    await Promise.all(again.map((d) => d.connect()));
    await b.skyport.services.firmware.rollouts.tick();
    await eventually(async () => {
      await b!.skyport.services.firmware.rollouts.tick();
      return (await progressOfAt(b!, p, id)).state === 'completed' ? true : undefined;
    }, 20_000, 'completed on the second Skyport');
    const rest = p.devices.map((w) => w.id).filter((i) => !first.includes(i));
    assert.deepEqual(told.sort(), [...rest].sort(), 'the second Skyport started only the two not started');
    assert.deepEqual(offers.sort(), [...rest].sort(), 'each device was offered the update once');
    const rows = await b.skyport.db.query<{ device_id: string; n: number | string }>('SELECT device_id, count(*) AS n FROM firmware_updates WHERE rollout_id = $1 GROUP BY device_id', [id]);
    assert.deepEqual(rows.map((r) => Number(r.n)), [1, 1, 1, 1]);
  } finally {
    await Promise.all(devices.map((d) => d.close()));
    await a?.close();
    await b?.close();
    await store.drop();
    if (dir) await rm(dir, { recursive: true, force: true });
  }
});

/** The rollout as another server answers it (the product's token works on any server of the store). */
async function progressOfAt(server: TestServer, p: RolloutProduct, id: number): Promise<{ state: string; progress: Progress }> {
  const r = await fetch(`${server.url}${p.base}/firmware/rollouts/${id}`, { headers: { authorization: `Bearer ${p.token}` } });
  return (await r.json()) as { state: string; progress: Progress };
}

test('a tick whose notice reached no node: a later tick tells the connected devices it started again', async () => {
  const clock = manualClock(new Date());
  const server = await startTestServer({ clock, env: ENV });
  const devices: Device[] = [];
  try {
    const p = await rolloutProduct(server.url, 2);
    for (const who of p.devices) devices.push(updatingDevice(server.mqttUrl, who, 1));
    await Promise.all(devices.map((d) => d.connect()));
    // Each device's hello has been looked at (nothing to update yet) before the rollout starts:
    // a look still under way would find the device started and begin its update, telling it.
    await Promise.all(p.devices.map((w) => server.skyport.services.firmwareUpdates.settled(w.id)));
    const id = (await p.call('POST', '/firmware/rollouts', { version: 2 }, 201)).json.id as number;
    // The node dies between the commit and its notice: nobody hears of the devices started.
    const bus = server.skyport.bus;
    const notify = bus.notify.bind(bus);
    bus.notify = (topic, payload) => (topic === FIRMWARE_RELEASED ? undefined : notify(topic, payload));
    await server.skyport.services.firmware.rollouts.tick();
    bus.notify = notify;
    await Promise.all(p.devices.map((w) => server.skyport.services.firmwareUpdates.settled(w.id)));
    assert.equal((await progressOf(p, id)).progress.pending, 2, 'started, not told');
    await server.skyport.services.firmware.rollouts.tick();
    assert.equal((await progressOf(p, id)).progress.pending, 2, 'not told again at once');
    clock.advance(61_000);
    await eventually(async () => {
      await server.skyport.services.firmware.rollouts.tick();
      return (await progressOf(p, id)).state === 'completed' ? true : undefined;
    }, 20_000, 'completed');
    assert.deepEqual(devices.map((d) => d.runningFirmwareVersion), [2, 2]);
  } finally {
    await Promise.all(devices.map((d) => d.close()));
    await server.close();
  }
});
