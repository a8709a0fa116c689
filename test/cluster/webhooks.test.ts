import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type mqtt from 'mqtt';
import { startCluster, startNodeProcess, type NodeProcess, type TestCluster } from '../helpers/cluster.js';
import { provision } from '../helpers/device.js';
import { eventually } from '../helpers/eventually.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { burst, deliveredData, productWithHook } from '../helpers/webhook-bursts.js';

/**
 * Webhooks in a cluster (docs/webhooks.md, "At least once", "In a cluster"): every event a node
 * acknowledged is delivered although the node is killed with SIGKILL mid-burst, and three nodes
 * sharing the queue send each delivery once.
 */
const HOOKS = { WEBHOOK_ALLOW_PRIVATE: '127.0.0.1', WEBHOOK_LEASE_SECONDS: '5' };
let receiver: Receiver;
before(async () => { receiver = await startReceiver(); });
after(async () => { await receiver.close(); });

const delivered = (path: string) => deliveredData(receiver, path);

test('a node killed with SIGKILL mid-burst: every event it acknowledged is delivered, by the node that is left', async () => {
  const cluster: TestCluster = await startCluster(['api'], { env: HOOKS });
  let gateway: NodeProcess | undefined;
  try {
    const api = cluster.nodes[0] as TestCluster['nodes'][0];
    gateway = await startNodeProcess({ DATABASE_URL: cluster.store.settings.DATABASE_URL as string, NATS_URL: cluster.nats.url, ROLE: 'gateway', NODE_ID: 'doomed', ...HOOKS });
    const { token, productId } = await productWithHook(api.url, receiver, 'crash');
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
    const { token, productId } = await productWithHook(a.url, receiver, 'three');
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
