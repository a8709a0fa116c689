import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { raw } from '../helpers/http.js';
import { engineSchema, newProduct, signUp } from '../helpers/fixtures.js';
import { configDevice, provision, type Holdings } from '../helpers/device.js';
import { eventually } from '../helpers/eventually.js';

/**
 * The NATS server killed and restarted under traffic (docs/operations.md, "Cluster mode"):
 * meanwhile, what needs another node answers a clear 503 and what needs only PostgreSQL goes on;
 * after, every node recovers by itself, and nothing acknowledged is lost: a configuration write
 * accepted during the outage reaches the device that stayed connected throughout.
 */
let cluster: TestCluster;
before(async () => { cluster = await startCluster(['api', 'gateway'], { env: { DEVICE_CALL_TIMEOUT_SECONDS: '2' } }); });
after(async () => { await cluster.close(); });

test('NATS killed and restarted under traffic: clear errors meanwhile, recovery after, nothing acknowledged lost', async () => {
  const [api, gateway] = cluster.nodes as [(typeof cluster.nodes)[0], (typeof cluster.nodes)[0]];
  const { token } = await signUp(api.url);
  const product = await newProduct(api.url, token, 'Outage');
  const schema = await raw(`${api.url}/v1/products/${product.id}/config`, { method: 'PUT', token, body: JSON.stringify(engineSchema()), headers: { 'content-type': 'application/schema+json' } });
  assert.equal(schema.status, 200, schema.text);
  const who = await provision(api.url, token, product.id);
  const held: Holdings = new Map();
  const device = await configDevice(gateway.mqttUrl, who, held);
  const ping = () => raw(`${api.url}/v1/devices/${who.id}/ping`, { method: 'PUT', token });
  try {
    await eventually(async () => (await ping()).json.online === true || undefined, 10_000, 'the device reachable from the API node');

    // Traffic all along: pings from the API node to the device on the gateway node.
    const statuses: number[] = [];
    let running = true;
    const traffic = (async () => {
      while (running) {
        statuses.push((await ping()).status);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    try {
      await cluster.nats.kill('SIGKILL');
      await eventually(() => api.skyport.bus.state() === 'down' || undefined, 10_000, 'the API node to see NATS gone');
      const during = await raw(`${api.url}/v1/devices/${who.id}/ping`, { method: 'PUT', token });
      assert.equal(during.status, 503, during.text);
      assert.equal(during.json.error, 'service_unavailable');
      const health = await raw(`${api.url}/healthz`);
      assert.equal(health.status, 503, health.text);
      // PostgreSQL is still there: a configuration write is accepted and stored.
      const write = await raw(`${api.url}/v1/products/${product.id}/config`, { method: 'PUT', token, json: { engine: { idle: 2100, fastpub: 0 } } });
      assert.equal(write.status, 200, write.text);

      await cluster.nats.restart();
      await eventually(async () => (await ping()).status === 200 || undefined, 20_000, 'calls to work again');
      await eventually(async () => (await raw(`${api.url}/healthz`)).status === 200 || undefined, 10_000, 'the API node healthy again');
    } finally {
      running = false;
      await traffic;
    }
    // Only clear answers: online, or unavailable while NATS was away; never a server error.
    assert.deepEqual([...new Set(statuses)].filter((s) => s !== 200 && s !== 503), [], `statuses seen: ${[...new Set(statuses)].join(', ')}`);
    assert.ok(statuses.includes(503), 'some requests met the outage');

    // The write accepted during the outage reaches the device, which never disconnected.
    await eventually(() => held.get('engine')?.value.idle === 2100 || undefined, 20_000, 'the device to take the write made during the outage');
    await eventually(async () => (await raw(`${api.url}/v1/products/${product.id}/config/rollout`, { token })).json.modules.engine.in_sync === 1 || undefined, 10_000, 'its acknowledgement recorded');
  } finally {
    await device.client.endAsync(true);
  }
});
