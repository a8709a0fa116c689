import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from './helpers/server.js';
import { raw } from './helpers/http.js';
import { eventually } from './helpers/eventually.js';
import { provision } from './helpers/device.js';
import { newProduct, signUp } from './helpers/fixtures.js';
import { uploaded } from './helpers/firmware.js';
import { runSimulation } from '../src/sim/simulator.js';
import { NO_FAILURES } from '../src/sim/updates.js';

/**
 * GET /v1/products/:p/firmware/updates: a product's firmware updates counted by version and by
 * where each stands, as the console's Firmware page and `skyport firmware progress` show them.
 */
let server: TestServer;
before(async () => { server = await startTestServer(); });
after(async () => { await server.close(); });

test('the update progress of a release: succeeded, waiting for a device that takes no updates, refused; every state counted, nothing for another product', async () => {
  const { token } = await signUp(server.url);
  const product = await newProduct(server.url, token);
  const other = await newProduct(server.url, token, 'Other');
  const base = `${server.url}/v1/products/${product.id}`;
  const progress = async (at = base) => {
    const r = await raw(`${at}/firmware/updates`, { token });
    assert.equal(r.status, 200, r.text);
    return r.json.versions as Array<{ version: number; total: number; states: Record<string, number> }>;
  };
  assert.deepEqual(await progress(), [], 'no update yet');

  await uploaded(server.url, token, product.id, 1);
  await uploaded(server.url, token, product.id, 2);
  const [a, b, c, d] = await Promise.all([1, 2, 3, 4].map(() => provision(server.url, token, product.id)));
  const sims = await Promise.all([
    runSimulation({ mqttUrl: server.mqttUrl, identities: [a!, b!], firmwareVersion: 1 }),
    // Takes no updates now: its update waits.
    runSimulation({ mqttUrl: server.mqttUrl, identities: [c!], firmwareVersion: 1, updatesEnabled: false }),
    // Refuses every update.
    runSimulation({ mqttUrl: server.mqttUrl, identities: [d!], firmwareVersion: 1, updateFailures: { ...NO_FAILURES, refuse: 1 } }),
  ]);
  try {
    const released = await raw(`${base}/firmware/release`, { method: 'PUT', token, json: { version: 2, intelligent: true } });
    assert.equal(released.status, 200, released.text);
    const states = { pending: 1, downloading: 0, applying: 0, succeeded: 2, failed: 1 };
    await eventually(async () => {
      const now = await progress();
      return now[0]?.states.succeeded === 2 && now[0].states.failed === 1 && now[0].states.pending === 1 ? true : undefined;
    }, 15_000, 'the release\'s devices settled');
    assert.deepEqual(await progress(), [{ version: 2, total: 4, states }]);
    assert.deepEqual(await progress(`${server.url}/v1/products/${other.id}`), [], 'another product\'s updates are its own');
  } finally {
    await Promise.all(sims.flatMap((s) => s.devices.map((dev) => dev.close())));
  }
});

test('a product the caller does not manage: 403, as every product route', async () => {
  const owner = await signUp(server.url);
  const stranger = await signUp(server.url);
  const product = await newProduct(server.url, owner.token);
  const r = await raw(`${server.url}/v1/products/${product.id}/firmware/updates`, { token: stranger.token });
  assert.equal(r.status, 403, r.text);
});
