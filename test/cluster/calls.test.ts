import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { raw } from '../helpers/http.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { fakeDevice, provision } from '../helpers/device.js';

/**
 * Calls, reads, signals and pings reach a device from any node (docs/architecture.md, "Cluster
 * mode"): the device is connected to one node, the request arrives at another, with the answers
 * and statuses of one node.
 */
let cluster: TestCluster;
before(async () => { cluster = await startCluster(['all', 'all']); });
after(async () => { await cluster.close(); });

test('a call, a read, a signal and a ping reach a device connected to another node', async () => {
  const [a, b] = cluster.nodes as [typeof cluster.nodes[0], typeof cluster.nodes[0]];
  const { token } = await signUp(a.url);
  const product = await newProduct(a.url, token, 'Cluster calls');
  const who = await provision(a.url, token, product.id);
  const dev = await fakeDevice(a.mqttUrl, who, {
    functions: { double: (arg) => Number(arg) * 2, hang: () => 'hang' },
    variables: { temp: ['double', 21.5] },
  });
  try {
    const call = await raw(`${b.url}/v1/devices/${who.id}/double`, { method: 'POST', token, json: { arg: '21' } });
    assert.equal(call.status, 200, call.text);
    assert.equal(call.json.return_value, 42);
    const read = await raw(`${b.url}/v1/devices/${who.id}/temp`, { token });
    assert.equal(read.status, 200, read.text);
    assert.equal(read.json.result, 21.5);
    const missing = await raw(`${b.url}/v1/devices/${who.id}/nope`, { method: 'POST', token, json: { arg: '' } });
    assert.equal(missing.status, 404, missing.text);
    const signal = await raw(`${b.url}/v1/devices/${who.id}`, { method: 'PUT', token, json: { signal: '1' } });
    assert.equal(signal.status, 200, signal.text);
    const ping = await raw(`${b.url}/v1/devices/${who.id}/ping`, { method: 'PUT', token });
    assert.equal(ping.status, 200, ping.text);
    assert.equal(ping.json.online, true);
    const slow = await raw(`${b.url}/v1/devices/${who.id}/hang`, { method: 'POST', token, json: { arg: '', timeout: 1 } });
    assert.equal(slow.status, 408, slow.text);
  } finally {
    await dev.close();
  }
  // Gone from every node: the other node answers offline at once.
  const off = await raw(`${b.url}/v1/devices/${who.id}/double`, { method: 'POST', token, json: { arg: '1' } });
  assert.equal(off.status, 404, off.text);
  assert.match(off.text, /offline|not connected/i);
});

test('a node that is shut down lets the calls under way to its devices finish (draining)', async () => {
  const [a, b] = cluster.nodes as [typeof cluster.nodes[0], typeof cluster.nodes[0]];
  const { token } = await signUp(b.url);
  const product = await newProduct(b.url, token, 'Draining');
  const who = await provision(b.url, token, product.id);
  let reached!: () => void;
  const atDevice = new Promise<void>((resolve) => { reached = resolve; });
  const dev = await fakeDevice(a.mqttUrl, who, {
    functions: { slow: () => { reached(); return new Promise<number>((r) => setTimeout(() => r(5), 700)); } },
  });
  try {
    const call = raw(`${b.url}/v1/devices/${who.id}/slow`, { method: 'POST', token, json: { arg: '' } });
    // The call has reached the device, through node A, when A starts shutting down. (A fixed
    // wait instead let a loaded machine start the shutdown before the call had left node B.)
    const early = await Promise.race([atDevice.then(() => null), call]);
    assert.equal(early, null, `the call ended before it reached the device: ${early?.status} ${early?.text}`);
    const closing = a.skyport.close();
    const answer = await call;
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.return_value, 5);
    await closing;
  } finally {
    await dev.close().catch(() => undefined);
  }
});
