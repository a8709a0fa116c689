import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './helpers/server.js';
import { raw } from './helpers/http.js';
import { newProduct, signUp } from './helpers/fixtures.js';
import { faultyDb, type FaultyDb } from './helpers/faults.js';
import { configDevice, provision, type Holdings, type Identity } from './helpers/device.js';
import { eventually, within } from './helpers/eventually.js';

/**
 * A fleet write's fan-out reads the fleet's devices in shares and sends each share its values
 * while the next is read (services/config/delivery.ts, `fanOut`). Shares of 2, then 3: a fleet of
 * 8 is read as 2 + 3 + 3. The order is forced by holding a share's read back, never by sleeping.
 */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** What a fan-out reads of each share: what its devices hold (device-config-state.repository.ts, `heldBy`). */
const HELD_READ = /JOIN device_config_state s ON s\.device_id = i\.id/;
const FLEET = 8;

let db: FaultyDb | undefined;
let server: TestServer;
before(async () => {
  server = await startTestServer({ wrapDb: (d) => (db = faultyDb(d)), seams: { fanOutShares: { first: 2, each: 3 } } });
});
after(async () => { await server.close(); });

/** A product whose fleet of 8 is connected and in sync. */
async function connectedFleet() {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const base = `${server.url}/v1/products/${product.id}/config`;
  const ids = await Promise.all(Array.from({ length: FLEET }, () => provision(server.url, token, product.id)));
  const holdings = ids.map((): Holdings => new Map());
  const devices = await Promise.all(ids.map((who, i) => configDevice(server.mqttUrl, who, holdings[i] as Holdings)));
  const rollout = async () => (await raw(`${base}/rollout`, { token })).json as Json;
  await eventually(async () => ((await rollout()).in_sync === FLEET ? true : undefined), 30_000);
  for (const d of devices) d.values.length = 0;
  const having = (type: string) => holdings.filter((h) => h.get('rgb')?.value.type === type).length;
  return { token, base, ids, holdings, devices, rollout, having };
}

test('a fleet read in shares: the first share is sent the write while the next is read, and every device takes it once', async () => {
  const fleet = await connectedFleet();
  try {
    const held = (db as FaultyDb).pauseAt(HELD_READ, 1);
    const put = await raw(fleet.base, { method: 'PUT', token: fleet.token, json: { rgb: { type: 'off' } } });
    assert.equal(put.status, 200, put.text);
    await within(held.reached, 10_000, () => 'the second share\'s read was not reached within 10 s');
    // The second share's read is held, and the third is read only after it: the first share alone has the write.
    await eventually(() => (fleet.having('off') === 2 ? true : undefined), 10_000, 'the first share');
    assert.equal(fleet.having('off'), 2, 'only the first share was sent the write before the next share was read');
    held.release();
    await eventually(() => (fleet.having('off') === FLEET ? true : undefined), 10_000, 'every share');
    fleet.devices.forEach((d, i) => assert.deepEqual(d.values.map((v) => v.module), ['rgb'], `device ${i} was sent the changed module once`));
    await eventually(async () => ((await fleet.rollout()).in_sync === FLEET ? true : undefined));
  } finally {
    await Promise.all(fleet.devices.map((d) => d.client.endAsync()));
  }
});

test('a share whose read fails leaves out its own devices only; they take the write when they next connect', async () => {
  const fleet = await connectedFleet();
  try {
    (db as FaultyDb).crashAt(HELD_READ, 1);
    const put = await raw(fleet.base, { method: 'PUT', token: fleet.token, json: { rgb: { type: 'off' } } });
    assert.equal(put.status, 200, put.text);
    // The first and the third share (2 + 3 devices); the third is sent only after the second's read failed.
    await eventually(() => (fleet.having('off') === 5 ? true : undefined), 10_000, 'the shares read');
    assert.ok((db as FaultyDb).crashed, 'the second share\'s read failed');
    // Acknowledgements are stored in batches: the status may lag what the devices hold.
    const rollout = await eventually(async () => { const r = await fleet.rollout(); return r.in_sync === 5 ? r : undefined; }, 10_000, 'the acknowledgements stored');
    assert.equal(rollout.modules.rgb.pending, 3, JSON.stringify(rollout));
    const left = fleet.ids.flatMap((who, i) => (fleet.holdings[i]?.get('rgb')?.value.type === 'off' ? [] : [i]));
    assert.equal(left.length, 3);
    for (const i of left) {
      await fleet.devices[i]?.client.endAsync();
      const again = await configDevice(server.mqttUrl, fleet.ids[i] as Identity, fleet.holdings[i] as Holdings);
      fleet.devices[i] = again;
    }
    await eventually(() => (fleet.having('off') === FLEET ? true : undefined), 10_000, 'the devices left out, once reconnected');
    await eventually(async () => ((await fleet.rollout()).in_sync === FLEET ? true : undefined));
  } finally {
    await Promise.all(fleet.devices.map((d) => d.client.endAsync()));
  }
});
