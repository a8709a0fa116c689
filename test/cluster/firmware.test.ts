import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import type { TestServer } from '../helpers/server.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { provision } from '../helpers/device.js';
import { eventually } from '../helpers/eventually.js';
import { sample, scrape } from '../helpers/metrics.js';
import { firmwareBinary, testFirmware } from '../helpers/firmware.js';
import { createDevice } from '../../src/sdk/index.js';

/**
 * Firmware updates in a cluster (docs/architecture.md, "Firmware updates: the transfer"): the
 * node holding the device sends, whichever node the release notice came from; a device that
 * reconnects to another node mid-transfer resumes there, from what it holds.
 */
const firmware = testFirmware();
let cluster: TestCluster;
let A: TestServer;
let B: TestServer;
let C: TestServer;
before(async () => {
  cluster = await startCluster(['all', 'all', 'all'], { env: { METRICS: 'open' }, firmware: firmware.source });
  [A, B, C] = cluster.nodes as [TestServer, TestServer, TestServer];
});
after(async () => { await cluster.close(); });

const bytesSent = async (node: TestServer) => sample(await scrape(node.url), 'skyport_firmware_bytes_sent_total');
const mqttPort = (node: TestServer) => Number(new URL(node.mqttUrl).port);

/** A load balancer of one address: new connections go to the node it points at; `cut` drops those open. */
async function balancer(to: TestServer) {
  let target = mqttPort(to);
  const open = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(target, '127.0.0.1');
    open.add(client).add(upstream);
    const drop = () => { client.destroy(); upstream.destroy(); open.delete(client); open.delete(upstream); };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `mqtt://127.0.0.1:${(server.address() as { port: number }).port}`,
    pointAt(node: TestServer) { target = mqttPort(node); },
    cut() { for (const s of open) s.destroy(); },
    close: () => new Promise<void>((resolve) => { for (const s of open) s.destroy(); server.close(() => resolve()); }),
  };
}

test('the node holding the device sends its update, whichever node announced the release; every node reads where it stands', async () => {
  const { token } = await signUp(A.url);
  const product = await newProduct(A.url, token);
  const who = await provision(A.url, token, product.id);
  const device = createDevice({ url: A.mqttUrl, id: who.id, secret: who.secret, firmwareVersion: 1, reconnect: { minMs: 20, maxMs: 100 } });
  const before = await Promise.all([A, B, C].map(bytesSent));
  try {
    await device.connect();
    const image = firmwareBinary(product.id, 2, { dataSize: 60_000 });
    firmware.target([who.id], product.id, 2, image);
    firmware.released(C.skyport.bus, product.id);
    await eventually(async () => ((await C.skyport.services.firmwareUpdates.stateOf(who.id))?.state === 'succeeded' ? true : undefined), 10_000, 'succeeded');
    assert.equal(device.runningFirmwareVersion, 2);
    const after = await Promise.all([A, B, C].map(bytesSent));
    assert.equal(after[0]! - before[0]!, image.length, 'node A, which holds the device, sent the image');
    assert.deepEqual([after[1]! - before[1]!, after[2]! - before[2]!], [0, 0]);
    assert.deepEqual(await B.skyport.services.firmwareUpdates.counts(product.id), [{ version: 2, state: 'succeeded', count: 1 }]);
  } finally {
    await device.close();
  }
});

test('a device that reconnects to another node mid-transfer resumes there: the second node sends only the rest', async () => {
  const { token } = await signUp(A.url);
  const product = await newProduct(A.url, token);
  const who = await provision(A.url, token, product.id);
  const lb = await balancer(A);
  const device = createDevice({ url: lb.url, id: who.id, secret: who.secret, firmwareVersion: 4, reconnect: { minMs: 20, maxMs: 100 } });
  const image = firmwareBinary(product.id, 5, { dataSize: 300_000 });
  firmware.target([who.id], product.id, 5, image);
  let heldAtCut = 0;
  device.on('firmware-progress', (_o: unknown, held: number) => {
    if (heldAtCut > 0 || held < image.length * 0.6) return;
    heldAtCut = held;
    lb.pointAt(B);
    lb.cut();
  });
  const before = await Promise.all([A, B].map(bytesSent));
  try {
    await device.connect();
    const done = await eventually(async () => {
      const s = await A.skyport.services.firmwareUpdates.stateOf(who.id);
      return s?.state === 'succeeded' ? s : undefined;
    }, 15_000, 'succeeded');
    assert.ok(heldAtCut > 0);
    assert.equal(B.skyport.gateway.holds(who.id), true, 'it finished on node B');
    const [a, b] = (await Promise.all([A, B].map(bytesSent))).map((n, i) => n - before[i]!) as [number, number];
    assert.ok(a >= heldAtCut, `node A sent ${a}`);
    assert.ok(b > 0 && b <= image.length - heldAtCut, `node B sent ${b}, only what the device did not hold (it held ${heldAtCut} of ${image.length})`);
    assert.equal(done.bytesSent, a + b);
    assert.equal(device.runningFirmwareVersion, 5);
  } finally {
    await device.close();
    await lb.close();
  }
});
