import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import mqtt from 'mqtt';
import { startCluster, startNodeProcess, type NodeProcess, type TestCluster } from '../helpers/cluster.js';
import { raw } from '../helpers/http.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { provision, type Identity } from '../helpers/device.js';
import { eventually } from '../helpers/eventually.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';

/**
 * Webhooks in a cluster (docs/webhooks.md, "At least once", "In a cluster"): every event a node
 * acknowledged is delivered although the node is killed with SIGKILL mid-burst, and three nodes
 * sharing the queue send each delivery once.
 */
const HOOKS = { WEBHOOK_ALLOW_PRIVATE: '127.0.0.1', WEBHOOK_LEASE_SECONDS: '5' };
let receiver: Receiver;
before(async () => { receiver = await startReceiver(); });
after(async () => { await receiver.close(); });

/** Event data the receiver got, each id once however many times it came. */
const delivered = (prefix: string) => new Set(receiver.received.filter((r) => r.url === `/${prefix}`).map((r) => new URLSearchParams(r.body).get('data')));

async function productWithHook(url: string, path: string): Promise<{ token: string; productId: number }> {
  const { token } = await signUp(url);
  const productId = (await newProduct(url, token, `Hooks ${path}`)).id;
  const made = await raw(`${url}/v1/products/${productId}/webhooks`, { method: 'POST', token, json: { event: 'reading', url: `${receiver.url}/${path}` } });
  assert.equal(made.status, 201, made.text);
  return { token, productId };
}

/** A plain MQTT device publishing QoS 1 events numbered from 0; answers the numbers the cloud acknowledged. */
async function burst(mqttUrl: string, who: Identity, count: number, onAck?: (n: number) => void): Promise<{ acked: Set<string>; client: mqtt.MqttClient }> {
  const client = await mqtt.connectAsync(mqttUrl, { clientId: who.id, username: who.id, password: who.secret, reconnectPeriod: 0 });
  client.on('error', () => undefined);
  const acked = new Set<string>();
  for (let n = 0; n < count; n++) {
    const data = `${who.id.slice(0, 6)}-${n}`;
    client.publish(`devices/${who.id}/events/reading`, JSON.stringify({ data, ttl: 60, private: true }), { qos: 1 }, (err) => {
      if (err) return;
      acked.add(data);
      onAck?.(acked.size);
    });
  }
  return { acked, client };
}

test('a node killed with SIGKILL mid-burst: every event it acknowledged is delivered, by the node that is left', async () => {
  const cluster: TestCluster = await startCluster(['api'], { env: HOOKS });
  let gateway: NodeProcess | undefined;
  try {
    const api = cluster.nodes[0] as TestCluster['nodes'][0];
    gateway = await startNodeProcess({ DATABASE_URL: cluster.store.settings.DATABASE_URL as string, NATS_URL: cluster.nats.url, ROLE: 'gateway', NODE_ID: 'doomed', ...HOOKS });
    const { token, productId } = await productWithHook(api.url, 'crash');
    const who = await provision(api.url, token, productId);
    // Slow answers: deliveries pile up, held by the gateway, when it dies.
    receiver.answer((r) => (r.url === '/crash' ? { status: 200, delayMs: 300 } : { status: 200 }));
    let killing: Promise<void> | undefined;
    const { acked, client } = await burst(`mqtt://127.0.0.1:${gateway.mqttPort}`, who, 3000, (n) => {
      if (n === 150 && gateway) killing = gateway.kill('SIGKILL');
    });
    await eventually(() => (killing ? true : undefined), 20_000, '150 events acknowledged');
    await killing;
    client.end(true);
    const acknowledged = [...acked];
    assert.ok(acknowledged.length >= 150 && acknowledged.length < 3000, `${acknowledged.length} acknowledged before the kill`);
    assert.ok(delivered('crash').size < acknowledged.length, 'some were still to deliver when it died');
    // After the dead node's leases run out, the API node takes its deliveries and sends them.
    receiver.answer({ status: 200 });
    await eventually(() => acknowledged.every((d) => delivered('crash').has(d)) || undefined, 40_000, 'every acknowledged event delivered');
  } finally {
    await gateway?.kill();
    await cluster.close();
  }
});

test('three nodes share the queue: each delivery is sent once', async () => {
  const cluster = await startCluster(['all', 'all', 'all'], { env: HOOKS });
  try {
    const [a] = cluster.nodes as [TestCluster['nodes'][0]];
    const { token, productId } = await productWithHook(a.url, 'three');
    const clients: mqtt.MqttClient[] = [];
    const all: string[] = [];
    for (const node of cluster.nodes) {
      const who = await provision(a.url, token, productId);
      const { acked, client } = await burst(node.mqttUrl, who, 100);
      clients.push(client);
      await eventually(() => (acked.size === 100 ? true : undefined), 20_000);
      all.push(...acked);
    }
    await eventually(() => (delivered('three').size === 300 ? true : undefined), 20_000, 'all 300 delivered');
    const ids = receiver.received.filter((r) => r.url === '/three').map((r) => String(r.headers['webhook-id']));
    assert.equal(ids.length, 300, 'no delivery was sent twice');
    assert.equal(new Set(ids).size, 300);
    assert.deepEqual([...delivered('three')].sort(), all.sort());
    for (const c of clients) c.end(true);
  } finally {
    await cluster.close();
  }
});
