import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import type { TestServer } from '../helpers/server.js';
import { eventually } from '../helpers/eventually.js';
import { sample, scrape } from '../helpers/metrics.js';
import { inGroup, rolloutProduct, updatingDevice } from '../helpers/rollouts.js';
import { FIRMWARE_RELEASED, type FirmwareReleased } from '../../src/services/firmware/index.js';
import type { CloudEvent } from '../../src/bus/bus.js';
import type { Device } from '../../src/sdk/index.js';

/**
 * Staged rollouts in a cluster (docs/firmware.md, "Staged rollouts"; docs/architecture.md, "Once
 * per cluster"): three nodes tick every second, but only the leader's ticks advance the rollout;
 * each device is started once, by one notice, and updated by the node that holds it; each step of
 * the rollout is one event.
 */
const NAMES = ['node-1', 'node-2', 'node-3'] as const;
let cluster: TestCluster;
const ticks = new Map<string, number[]>(NAMES.map((n) => [n, []]));
before(async () => {
  cluster = await startCluster([]);
  for (const name of NAMES) {
    await cluster.add('all', {
      env: { NODE_ID: name, NODE_LEASE_SECONDS: '3', FIRMWARE_ROLLOUT_TICK_SECONDS: '1', METRICS: 'open' },
      seams: { rolloutTick: { ticked: () => ticks.get(name)?.push(Date.now()) } },
    });
  }
});
after(async () => { await cluster.close(); });

test('three nodes: the rollout advances on the leader only; each device is started once and updated by its own node', async () => {
  const nodes = cluster.nodes as [TestServer, TestServer, TestServer];
  const [a] = nodes;
  const p = await rolloutProduct(a.url, 6);
  await inGroup(p, [p.devices[0]!.id, p.devices[1]!.id, p.devices[2]!.id], 'first');
  const started: string[] = [];
  a.skyport.bus.listen(FIRMWARE_RELEASED, (n) => {
    const notice = n as FirmwareReleased;
    if (notice.cause === 'rollout' && notice.productId === p.product.id) started.push(...(notice.deviceIds ?? []));
  });
  const steps: string[] = [];
  a.skyport.bus.subscribe((e: CloudEvent) => {
    if (e.name === 'particle/firmware/rollout' && e.productId === p.product.id) steps.push((JSON.parse(e.data as string) as { action: string }).action);
  });
  // Two devices on each node.
  const devices: Device[] = p.devices.map((who, i) => updatingDevice(nodes[i % 3]!.mqttUrl, who, 1));
  try {
    await Promise.all(devices.map((d) => d.connect()));
    const t = Date.now();
    const made = await p.call('POST', '/firmware/rollouts', { version: 2, waves: [{ group: 'first' }] }, 201);
    await eventually(async () => ((await p.call('GET', `/firmware/rollouts/${made.json.id as number}`)).json.state === 'completed' ? true : undefined), 40_000, 'completed');
    assert.deepEqual(devices.map((d) => d.runningFirmwareVersion), [2, 2, 2, 2, 2, 2]);
    const tickers = NAMES.filter((n) => (ticks.get(n) ?? []).some((at) => at > t));
    assert.equal(tickers.length, 1, `ticks ran on ${tickers.join(', ')}`);
    assert.equal(nodes.find((n) => n.skyport.bus.nodeId === tickers[0])?.skyport.bus.nodeId, tickers[0]);
    assert.deepEqual([...started].sort(), p.devices.map((w) => w.id).sort(), 'each device started by one notice');
    await eventually(() => (steps.includes('completed') ? true : undefined));
    assert.deepEqual(steps, ['started', 'wave_started', 'completed'], 'each step once');
    // Each node sent its own devices' updates: two images each.
    const image = ((await p.call('GET', '/firmware/2')).json as { size: number }).size;
    const sent = await Promise.all(nodes.map(async (n) => sample(await scrape(n.url), 'skyport_firmware_bytes_sent_total')));
    assert.deepEqual(sent, [2 * image, 2 * image, 2 * image]);
  } finally {
    await Promise.all(devices.map((d) => d.close()));
  }
});
