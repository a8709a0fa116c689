import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { raw } from '../helpers/http.js';
import { fakeDevice, provision } from '../helpers/device.js';
import { eventually } from '../helpers/eventually.js';

/**
 * Events across nodes (docs/operations.md, "Cluster mode"): a device's event reaches the event
 * streams open on every node and the subscribed devices on every node, once each; an event
 * published through the API of one node reaches devices on the others, once each.
 */
let cluster: TestCluster;
before(async () => { cluster = await startCluster(['all', 'all', 'all']); });
after(async () => { await cluster.close(); });

type Json = Record<string, unknown>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const collect = (stream: any, into: Json[]) => stream.on('event', (e: Json) => { if (!String(e.name).startsWith('spark/')) into.push(e); });

test('a device event reaches streams and devices on every node once each, and an API event reaches devices on every node once each', async () => {
  const [a, b, c] = cluster.nodes as [(typeof cluster.nodes)[0], (typeof cluster.nodes)[0], (typeof cluster.nodes)[0]];
  const { api, token } = await signUp(a.url);
  const product = await newProduct(a.url, token, 'Cluster events');
  const [pubWho, subWho, sub2Who] = [await provision(a.url, token, product.id), await provision(a.url, token, product.id), await provision(a.url, token, product.id)];
  // The publisher on node A, subscribers on nodes B and C.
  const publisher = await fakeDevice(a.mqttUrl, pubWho);
  const onB = await fakeDevice(b.mqttUrl, subWho, { subscribe: [`devices/${subWho.id}/cloud/#`] });
  const onC = await fakeDevice(c.mqttUrl, sub2Who, { subscribe: [`devices/${sub2Who.id}/cloud/#`] });
  // A product event stream on each node.
  const seen: Json[][] = [[], [], []];
  const streams = await Promise.all(cluster.nodes.map((n) => {
    api.setBaseUrl(n.url);
    return api.getEventStream({ product: product.id, auth: token });
  }));
  streams.forEach((s, i) => collect(s, seen[i] as Json[]));
  try {
    // Streams are open once the device's own next event shows on each (the first may race their opening).
    await eventually(async () => {
      await publisher.publish('warmup', { data: 'w' });
      return seen.every((list) => list.some((e) => e.name === 'warmup')) || undefined;
    }, 10_000, 'the streams on every node to be open');
    await publisher.publish('reading', { data: '42' });
    await eventually(() => seen.every((list) => list.filter((e) => e.name === 'reading').length >= 1) || undefined, 5_000, 'the event on every node\'s stream');
    // Published once through the API of node B: devices on A and C take it.
    api.setBaseUrl(b.url);
    await api.publishEvent({ name: 'alarm/fire', data: 'on', isPrivate: true, product: product.id, auth: token });
    await eventually(() => (publisher.received.some((e) => e.data === 'on') && onC.received.some((e) => e.data === 'on')) || undefined, 5_000, 'the API event on the devices of nodes A and C');
    // A sentinel published after, through node C: once it is everywhere, nothing more is on its way.
    api.setBaseUrl(c.url);
    await api.publishEvent({ name: 'alarm/sentinel', data: 'end', isPrivate: true, product: product.id, auth: token });
    await eventually(() => [publisher, onB, onC].every((d) => d.received.some((e) => e.data === 'end')) && seen.every((l) => l.some((e) => e.name === 'alarm/sentinel')) || undefined, 5_000, 'the sentinel everywhere');
    for (const list of seen) {
      assert.equal(list.filter((e) => e.name === 'reading').length, 1, 'the device event once on each stream');
      assert.equal(list.filter((e) => e.name === 'alarm/fire').length, 1, 'the API event once on each stream');
    }
    for (const d of [publisher, onB, onC]) assert.equal(d.received.filter((e) => e.data === 'on').length, 1, 'the API event once on each device');
  } finally {
    for (const s of streams) s.abort();
    await Promise.all([publisher.close(), onB.close(), onC.close()]);
  }
});

test('a device moved through another node\'s API takes its new scope at once on the node that holds it', async () => {
  const [a, b] = cluster.nodes as [(typeof cluster.nodes)[0], (typeof cluster.nodes)[0]];
  const { token } = await signUp(b.url);
  const product = await newProduct(b.url, token, 'Moves');
  const next = await newProduct(b.url, token, 'Moves next');
  const who = await provision(b.url, token, product.id);
  const dev = await fakeDevice(a.mqttUrl, who);
  try {
    await eventually(async () => {
      await raw(`${b.url}/v1/products/${product.id}/events`, { method: 'POST', token, json: { name: 'fleet', data: 'first' } });
      return dev.received.some((e) => e.data === 'first') || undefined;
    }, 5_000, 'the first fleet\'s events on the device');
    // Out of its product, into another, through node B; the device is connected to node A.
    assert.equal((await raw(`${b.url}/v1/products/${product.id}/devices/${who.id}`, { method: 'DELETE', token })).status, 204);
    const imported = await raw(`${b.url}/v1/products/${next.id}/devices`, { method: 'POST', token, json: { id: who.id } });
    assert.deepEqual(imported.json.updatedDeviceIds, [who.id]);
    const seen = dev.received.length;
    await raw(`${b.url}/v1/products/${product.id}/events`, { method: 'POST', token, json: { name: 'fleet', data: 'not yours' } });
    assert.equal((await raw(`${b.url}/v1/products/${next.id}/events`, { method: 'POST', token, json: { name: 'fleet', data: 'sentinel' } })).status, 200);
    await eventually(() => dev.received.some((e) => e.data === 'sentinel') || undefined, 3_000, 'the new fleet\'s event');
    // The wait above published 'first' until one arrived: others of it may still be on their way.
    assert.deepEqual(dev.received.slice(seen).map((e) => e.data).filter((d) => d !== 'first'), ['sentinel']);
  } finally {
    await dev.close();
  }
});
