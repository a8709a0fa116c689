import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { basic, raw } from '../helpers/http.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { fakeDevice, provision } from '../helpers/device.js';
import { eventually } from '../helpers/eventually.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { openPostgres } from '../../src/storage/postgres.js';

/**
 * A cluster losing PostgreSQL (docs/operations.md, "When the store goes away"): two nodes on a
 * PostgreSQL of the test's own, stopped as a restart or a fail-over stops it and started again.
 * Meanwhile each node answers 503, never 500, for what needs the store; a device connected to
 * one node stays connected and is called through the other with a token both know; the leader's
 * presence check, which fails meanwhile, marks nobody offline; and both nodes carry on by
 * themselves once it is back.
 */
let cluster: TestCluster;
let pg: TestPostgres;

before(async () => {
  pg = await startPostgres();
  const url = pg.url;
  cluster = await startCluster(['all', 'all'], {
    store: { settings: { DATABASE_URL: url }, open: () => openPostgres(url, { poolSize: 4, connectTimeoutMs: 1_000, queryTimeoutMs: 2_000 }), drop: async () => undefined },
    // Leases of 3 s: the leader checks presence every second, so several checks meet the outage.
    env: { NODE_LEASE_SECONDS: '3' },
  });
});
after(async () => {
  await cluster?.close();
  await pg?.destroy();
});

test('PostgreSQL stops and starts under a cluster: 503s meanwhile, calls go on, nobody marked offline, back by itself', async () => {
  const [a, b] = cluster.nodes as [typeof cluster.nodes[0], typeof cluster.nodes[0]];
  const owner = await signUp(a.url);
  const product = await newProduct(a.url, owner.token, 'Outage');
  const created = await raw(`${a.url}/v1/products/${product.id}/clients`, { method: 'POST', token: owner.token, json: { name: 'back end', type: 'installed' } });
  const client = created.json.client as { id: string; secret: string };
  const who = await provision(a.url, owner.token, product.id);
  const device = await fakeDevice(b.mqttUrl, who, { functions: { ping: () => 1 } });
  let closes = 0;
  device.client.on('close', () => { closes += 1; });
  const call = () => raw(`${a.url}/v1/devices/${who.id}/ping`, { method: 'POST', token: owner.token, json: { arg: '' } });
  const token = (node: typeof a) => raw(`${node.url}/oauth/token`, { method: 'POST', form: { grant_type: 'client_credentials' }, headers: { authorization: basic(client.id, client.secret) } });
  const stored = async () => (await a.skyport.db.query<{ online: boolean; node_id: string | null; functions: unknown }>('SELECT online, node_id, functions FROM devices WHERE id = $1', [who.id]))[0];
  await eventually(async () => { const d = await stored(); return (d?.online === true && d.functions !== null) || undefined; }, 5_000, 'the device and its hello stored');
  // Each node drops its cached device record on the notice of those writes: the call below reads it afresh.
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.equal((await call()).status, 200, 'the node knows the token and the device before the outage');

  await pg.stop('fast');
  try {
    for (const node of [a, b]) {
      const r = await token(node);
      assert.equal(r.status, 503, r.text);
      assert.equal(r.headers.get('retry-after'), '5');
      const health = await raw(`${node.url}/healthz`);
      assert.equal(health.status, 503);
      assert.equal(health.json.checks.storage, 'down');
      assert.equal(health.json.checks.nats, 'up');
    }
    // Through the leader's presence checks (every second with 3 s leases) and the lease renewals.
    const until = Date.now() + 3_000;
    while (Date.now() < until) {
      const r = await call();
      assert.equal(r.status, 200, `a call through the other node while the store is away: ${r.text}`);
      const t = await token(b);
      assert.equal(t.status, 503, t.text);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await pg.start();
  }

  for (const node of [a, b]) {
    await eventually(async () => (await raw(`${node.url}/healthz`)).status === 200 || undefined, 10_000, `${node.skyport.bus.nodeId} healthy again`);
    await eventually(async () => (await token(node)).status === 200 || undefined, 10_000, `${node.skyport.bus.nodeId} issues tokens again`);
  }
  assert.equal(closes, 0, 'the device stayed connected');
  assert.equal((await call()).status, 200);
  const row = await stored();
  assert.equal(row?.online, true, 'nobody marked the device offline');
  assert.equal(row?.node_id, b.skyport.bus.nodeId);
  await device.close();
});
