import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { startCluster, startNodeProcess, type NodeProcess, type TestCluster } from '../helpers/cluster.js';
import { startBalancer, type TestBalancer } from '../helpers/balancer.js';
import { raw } from '../helpers/http.js';
import { engineSchema, newProduct, signUp } from '../helpers/fixtures.js';
import { bindEngine, configDevice, provision, reconnectingDevice, type Holdings } from '../helpers/device.js';
import { eventually } from '../helpers/eventually.js';
import { createDevice, type Device } from '../../src/sdk/index.js';

/**
 * Three nodes of role `all`, each a process of its own started as docs/operations.md says, with
 * a TCP balancer in front of their MQTT ports: killing any one of them (SIGKILL, no goodbye)
 * loses no acknowledged write and leaves every device reachable through the two others. Each node
 * in turn is killed while it holds the devices (the first one is the leader), then restarted
 * under the same NODE_ID and given the devices for the next round.
 */
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const IDS = ['node-a', 'node-b', 'node-c'];
let cluster: TestCluster;
let env: Record<string, string>;
let nodes: NodeProcess[];
let balancer: TestBalancer;
let db: pg.Client;
before(async () => {
  cluster = await startCluster([]);
  env = { DATABASE_URL: cluster.store.settings.DATABASE_URL as string, NATS_URL: cluster.nats.url, ROLE: 'all', NODE_LEASE_SECONDS: '3', DEVICE_CALL_TIMEOUT_SECONDS: '3' };
  nodes = [];
  for (const id of IDS) nodes.push(await startNodeProcess({ ...env, NODE_ID: id }));
  balancer = await startBalancer([(nodes[0] as NodeProcess).mqttPort]);
  db = new pg.Client({ connectionString: env.DATABASE_URL });
  await db.connect();
});
after(async () => {
  await db?.end();
  await balancer?.close();
  await Promise.allSettled((nodes ?? []).map((n) => n.kill()));
  await cluster?.close();
});

test('any one of three nodes killed with SIGKILL: no acknowledged write lost, every device reachable through the two others', async () => {
  const first = nodes[0] as NodeProcess;
  const { token } = await signUp(first.url);
  const product = await newProduct(first.url, token, 'Any node');
  const schema = await raw(`${first.url}/v1/products/${product.id}/config`, { method: 'PUT', token, body: JSON.stringify(engineSchema()), headers: { 'content-type': 'application/schema+json' } });
  assert.equal(schema.status, 200, schema.text);
  // A device of another product, connected to the doomed node only and never reconnecting: once
  // it reads offline, the dead node's lease has lapsed and the leader's check has run.
  const watch = await newProduct(first.url, token, 'Lease watch');
  const [sdkWho, plainWho] = [await provision(first.url, token, product.id), await provision(first.url, token, product.id)];

  const engine = { idle: 0, fastpub: 0 };
  const sdk: Device = createDevice({ url: balancer.url, id: sdkWho.id, secret: sdkWho.secret, reconnect: { minMs: 100, maxMs: 300, stableMs: 10_000 } });
  sdk.function('where', () => 7);
  await bindEngine(sdk, engine);
  await sdk.connect();
  const plain = reconnectingDevice(balancer.url, plainWho);
  const holder = async (id: string) => (await db.query<{ node_id: string | null; online: boolean }>('SELECT node_id, online FROM devices WHERE id = $1', [id])).rows[0];
  const write = async (url: string, idle: number) => {
    const r = await raw(`${url}/v1/products/${product.id}/config`, { method: 'PUT', token, json: { engine: { idle, fastpub: 1000 } } });
    assert.equal(r.status, 200, r.text);
  };
  const inSync = async (url: string, idle: number) =>
    ((await raw(`${url}/v1/products/${product.id}/config/rollout`, { token })).json.modules.engine.in_sync === 2 && engine.idle === idle && plain.held.get('engine')?.value.idle === idle) || undefined;
  const written: number[] = [];
  try {
    for (let round = 0; round < 3; round++) {
      const victim = nodes[round] as NodeProcess;
      const next = nodes[(round + 1) % 3] as NodeProcess;
      const survivors = nodes.filter((n) => n !== victim);
      const what = `round ${round + 1} (${IDS[round]} killed)`;
      // The devices are held by the victim.
      await eventually(async () => {
        const [a, b] = [await holder(sdkWho.id), await holder(plainWho.id)];
        return (a?.online && b?.online && a.node_id === IDS[round] && b.node_id === IDS[round]) || undefined;
      }, 15_000, `${what}: both devices held by ${IDS[round]}`);
      const watcher = await provision(victim.url, token, watch.id);
      const sentinel = await configDevice(`mqtt://127.0.0.1:${victim.mqttPort}`, watcher, new Map() as Holdings);

      // Acknowledged by both devices before the kill.
      const before = 1000 + round * 10;
      await write(victim.url, before);
      written.push(before);
      await eventually(() => inSync(victim.url, before), 10_000, `${what}: the write before the kill acknowledged`);

      balancer.upstreams = [next.mqttPort];
      await victim.kill('SIGKILL');
      // Written through a survivor while the devices are away: acknowledged by the API, pending for them.
      const during = before + 5;
      await write((survivors[0] as NodeProcess).url, during);
      written.push(during);
      for (const s of survivors) await eventually(() => inSync(s.url, during), 20_000, `${what}: the devices to take the pending write, seen through ${s.url}`);

      // The dead node's lease lapsed and the leader (elected again when the victim led) checked it.
      await eventually(async () => (await raw(`${next.url}/v1/devices/${watcher.id}`, { token })).json.online === false || undefined, 15_000, `${what}: the dead node's own device offline`);
      for (const s of survivors) {
        for (const who of [sdkWho, plainWho]) {
          const device = await raw(`${s.url}/v1/devices/${who.id}`, { token });
          assert.equal(device.json.online, true, `${what}: ${who.id} online through ${s.url}`);
          const call = await raw(`${s.url}/v1/devices/${who.id}/where`, { method: 'POST', token, json: { arg: '' } });
          assert.equal(call.status, 200, `${what}: a call through ${s.url}: ${call.text}`);
          assert.equal(call.json.return_value, 7);
        }
      }
      await sentinel.client.endAsync(true);
      // Back under the same name, on new ports.
      nodes[round] = await startNodeProcess({ ...env, NODE_ID: IDS[round] as string });
    }

    // Nothing acknowledged was lost: the fleet's last value, and every write in the history, in order.
    const api = (nodes[0] as NodeProcess).url;
    const values = await raw(`${api}/v1/products/${product.id}/config`, { token });
    assert.equal(values.json.configuration.engine.idle, written.at(-1));
    const history = await raw(`${api}/v1/products/${product.id}/config/history?kind=values&per_page=100`, { token });
    const versions = (history.json.history as Json[]).filter((h) => h.device_id === null).reverse();
    const idles: number[] = [];
    for (const h of versions) idles.push((await raw(`${api}/v1/products/${product.id}/config/history/${h.version}`, { token })).json.document.engine.idle as number);
    assert.deepEqual(idles, written);
  } finally {
    await sdk.close();
    await plain.client.endAsync(true);
  }
});
