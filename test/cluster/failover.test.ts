import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, startNodeProcess, type NodeProcess, type TestCluster } from '../helpers/cluster.js';
import { startBalancer, type TestBalancer } from '../helpers/balancer.js';
import { raw } from '../helpers/http.js';
import { engineSchema, newProduct, signUp } from '../helpers/fixtures.js';
import { bindEngine, provision, reconnectingDevice } from '../helpers/device.js';
import { eventually } from '../helpers/eventually.js';
import { createDevice, type Device } from '../../src/sdk/index.js';

/**
 * A gateway killed with SIGKILL while its devices hold configuration changes
 * (docs/operations.md, "Cluster mode"): an API node and two gateway processes behind a TCP load
 * balancer. The devices (one on the SDK, one of plain mqtt.js calls) reconnect through the
 * balancer to the other gateway, are online there, take what was written while they were away,
 * and nothing acknowledged before is lost.
 */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
let cluster: TestCluster;
let gateways: NodeProcess[];
let balancer: TestBalancer;
before(async () => {
  cluster = await startCluster(['api'], { env: { NODE_LEASE_SECONDS: '3', DEVICE_CALL_TIMEOUT_SECONDS: '3' } });
  const env = { DATABASE_URL: cluster.store.settings.DATABASE_URL as string, NATS_URL: cluster.nats.url, ROLE: 'gateway', NODE_LEASE_SECONDS: '3' };
  gateways = [await startNodeProcess({ ...env, NODE_ID: 'gateway-1' }), await startNodeProcess({ ...env, NODE_ID: 'gateway-2' })];
  // At first every connection goes to the first gateway.
  balancer = await startBalancer([(gateways[0] as NodeProcess).mqttPort]);
});
after(async () => {
  await balancer.close();
  await Promise.allSettled(gateways.map((g) => g.kill()));
  await cluster.close();
});

test('a gateway killed with SIGKILL: its devices reconnect to the other one, are online, take what is pending, and lose nothing acknowledged', async () => {
  const api = cluster.nodes[0] as (typeof cluster.nodes)[0];
  const { token } = await signUp(api.url);
  const product = await newProduct(api.url, token, 'Failover');
  const schema = await raw(`${api.url}/v1/products/${product.id}/config`, { method: 'PUT', token, body: JSON.stringify(engineSchema()), headers: { 'content-type': 'application/schema+json' } });
  assert.equal(schema.status, 200, schema.text);
  const [sdkWho, plainWho] = [await provision(api.url, token, product.id), await provision(api.url, token, product.id)];

  const engine = { idle: 0, fastpub: 0 };
  const sdk: Device = createDevice({ url: balancer.url, id: sdkWho.id, secret: sdkWho.secret, reconnect: { minMs: 100, maxMs: 300, stableMs: 10_000 } });
  await bindEngine(sdk, engine);
  await sdk.connect();
  const plain = reconnectingDevice(balancer.url, plainWho);
  try {
    const rollout = async () => (await raw(`${api.url}/v1/products/${product.id}/config/rollout`, { token })).json;
    const online = async (id: string) => (await raw(`${api.url}/v1/devices/${id}`, { token })).json.online === true;
    await eventually(async () => (await online(sdkWho.id)) && (await online(plainWho.id)) || undefined, 10_000, 'both devices online');

    // Acknowledged by both devices on the first gateway.
    const first = await raw(`${api.url}/v1/products/${product.id}/config`, { method: 'PUT', token, json: { engine: { idle: 900, fastpub: 1000 } } });
    assert.equal(first.status, 200, first.text);
    await eventually(async () => ((await rollout()).modules.engine.in_sync === 2 && engine.idle === 900) || undefined, 10_000, 'the first write acknowledged by both');
    assert.equal(plain.held.get('engine')?.value.idle, 900);

    // New connections may now go to either gateway; the first one dies without a word.
    balancer.upstreams = gateways.map((g) => g.mqttPort);
    await (gateways[0] as NodeProcess).kill('SIGKILL');
    // Written while the devices are away: acknowledged by the API, pending for the devices.
    const second = await raw(`${api.url}/v1/products/${product.id}/config`, { method: 'PUT', token, json: { engine: { idle: 1200, fastpub: 1000 } } });
    assert.equal(second.status, 200, second.text);

    await eventually(async () => ((await rollout()).modules.engine.in_sync === 2 && engine.idle === 1200 && plain.held.get('engine')?.value.idle === 1200) || undefined, 20_000, 'the devices to take the pending write on the other gateway');
    assert.ok(await online(sdkWho.id), 'the SDK device is online');
    assert.ok(await online(plainWho.id), 'the plain device is online');
    // Reachable through the API node on the gateway that is left.
    const call = await raw(`${api.url}/v1/devices/${plainWho.id}/where`, { method: 'POST', token, json: { arg: '' } });
    assert.equal(call.status, 200, call.text);
    assert.equal(call.json.return_value, 7);
    // Still online once the dead gateway's lease has lapsed (its devices are offline only where they stayed).
    await new Promise((r) => setTimeout(r, 4_500));
    assert.ok(await online(sdkWho.id) && await online(plainWho.id), 'online after the dead node\'s lease lapsed');

    // Nothing acknowledged was lost: the fleet's values, and both writes in the history.
    const values = await raw(`${api.url}/v1/products/${product.id}/config`, { token });
    assert.equal(values.json.configuration.engine.idle, 1200);
    const history = await raw(`${api.url}/v1/products/${product.id}/config/history?kind=values`, { token });
    assert.ok((history.json.history as Json[]).length >= 2, history.text);
  } finally {
    await sdk.close();
    await plain.client.endAsync(true);
  }
});
