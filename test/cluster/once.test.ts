import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import type { TestServer } from '../helpers/server.js';
import { eventually } from '../helpers/eventually.js';
import { startProxy, type TestProxy } from '../helpers/proxy.js';

/**
 * Once per cluster (docs/architecture.md, "Once per cluster"): the expiry sweeps of tokens, MFA
 * challenges and claim codes run on the leader only, and on another node once the leader closes
 * or is cut off from NATS, never on two at once. The sweeps run every 100 ms here (a seam) and
 * each node's NATS goes through a relay of its own, which the test can cut.
 */
const NAMES = ['node-1', 'node-2', 'node-3'] as const;
type Name = typeof NAMES[number];
let cluster: TestCluster;
const nodes = new Map<Name, TestServer>();
const proxies = new Map<Name, TestProxy>();
const sweeps = new Map<Name, number[]>(NAMES.map((n) => [n, []]));
/** When the last node was up. The nodes share this process: one starting blocks the others for a
 * while, which on a busy machine may outlast the leader's lease and hand the lead on (correctly). */
let allUp = 0;

before(async () => {
  cluster = await startCluster([]);
  for (const name of NAMES) {
    const proxy = await startProxy({ host: '127.0.0.1', port: cluster.nats.port });
    proxies.set(name, proxy);
    nodes.set(name, await cluster.add('all', {
      env: { NATS_URL: `nats://127.0.0.1:${proxy.port}`, NODE_ID: name, NODE_LEASE_SECONDS: '3' },
      seams: { expirySweep: { everyMs: 100, swept: () => sweeps.get(name)?.push(Date.now()) } },
    }));
  }
  allUp = Date.now();
});
after(async () => {
  await cluster.close();
  await Promise.all([...proxies.values()].map((p) => p.close()));
});

const since = (t: number) => NAMES.flatMap((n) => (sweeps.get(n) ?? []).filter((s) => s > t).map(() => n));
/** Waits for `count` sweeps after `t`, and answers the nodes that ran them. */
async function sweepersAfter(t: number, count = 10): Promise<Name[]> {
  await eventually(() => (since(t).length >= count ? true : undefined), 10_000, `${count} sweeps`);
  return [...new Set(since(t))];
}

let leader: Name;

test('with three nodes, the sweeps run on one of them', async () => {
  const ran = await sweepersAfter(allUp);
  assert.equal(ran.length, 1, `swept on ${ran.join(', ')}`);
  leader = ran[0] as Name;
  assert.equal(nodes.get(leader)?.skyport.bus.nodeId, leader);
});

test('once the leader closes, they run on another node, and on that one only', async () => {
  const closed = nodes.get(leader) as TestServer;
  await closed.close();
  nodes.delete(leader);
  const t = Date.now();
  const ran = await sweepersAfter(t);
  assert.equal(ran.length, 1, `swept on ${ran.join(', ')}`);
  assert.notEqual(ran[0], leader);
  leader = ran[0] as Name;
});

test('a leader cut off from NATS stops before another node starts; it does not take the lead back when it returns', async () => {
  const cut = leader;
  const t = Date.now();
  proxies.get(cut)?.cut();
  const next = await eventually(() => NAMES.find((n) => n !== cut && (sweeps.get(n) ?? []).some((s) => s > t)), 15_000, 'another leader');
  const firstOfNext = (sweeps.get(next) ?? []).find((s) => s > t) as number;
  const lastOfCut = (sweeps.get(cut) ?? []).at(-1) as number;
  assert.ok(lastOfCut < firstOfNext, `the cut-off leader swept until ${lastOfCut}, the next one from ${firstOfNext}`);

  proxies.get(cut)?.restore();
  await eventually(() => (nodes.get(cut)?.skyport.bus.state() === 'up' ? true : undefined), 10_000, 'the node back on NATS');
  const back = Date.now();
  // Its renewals run every second: three seconds of sweeps give it time to try.
  const ran = await sweepersAfter(back, 30);
  assert.deepEqual(ran, [next]);
});
