import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { raw } from '../helpers/http.js';
import { eventually } from '../helpers/eventually.js';
import { startProxy } from '../helpers/proxy.js';
import { openPostgres } from '../../src/storage/postgres.js';

/**
 * GET /healthz (docs/operations.md, "Health and logs"): the node's role and name, the state of
 * its store and, in a cluster, of NATS; 503 while either is down, and 200 again by itself once it
 * is back, with no restart.
 */
let cluster: TestCluster;
let node: TestServer;
before(async () => {
  cluster = await startCluster(['all']);
  node = cluster.nodes[0] as TestServer;
});
after(async () => { await cluster.close(); });

const health = () => raw(`${node.url}/healthz`);

test('one node: the body of before clusters, with its role and name', async () => {
  const single = await startTestServer();
  try {
    const r = await raw(`${single.url}/healthz`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json, { ok: true, storage: 'postgres', role: 'all', node_id: 'local', checks: { storage: 'up' } });
  } finally {
    await single.close();
  }
});

test('NATS killed: 503 saying NATS is down; restarted: 200 again by itself', async () => {
  const up = await health();
  assert.equal(up.status, 200, up.text);
  assert.deepEqual(up.json, { ok: true, storage: 'postgres', role: 'all', node_id: 'node-1', checks: { storage: 'up', nats: 'up' } });

  await cluster.nats.kill();
  const down = await eventually(async () => {
    const r = await health();
    return r.status === 503 ? r : undefined;
  }, 10_000, '503 without NATS');
  assert.equal(down.json.ok, false);
  assert.equal(down.json.error, 'service_unavailable');
  assert.match(down.json.error_description, /NATS/);
  assert.equal(down.json.role, 'all');
  assert.equal(down.json.node_id, 'node-1');
  assert.deepEqual(down.json.checks, { storage: 'up', nats: 'down' });

  await cluster.nats.restart();
  const back = await eventually(async () => {
    const r = await health();
    return r.status === 200 ? r : undefined;
  }, 15_000, '200 once NATS is back');
  assert.deepEqual(back.json.checks, { storage: 'up', nats: 'up' });
});

test('PostgreSQL unreachable: 503 saying storage is down; reachable again: 200 by itself', async () => {
  // This node reaches the cluster's database through a relay the test can cut.
  const url = new URL(node.settings.databaseUrl as string);
  const proxy = await startProxy({ host: url.hostname, port: Number(url.port || 5432) });
  const relayed = new URL(url);
  relayed.hostname = '127.0.0.1';
  relayed.port = String(proxy.port);
  const cutOff = await startTestServer({
    store: { settings: { DATABASE_URL: relayed.toString() }, open: () => openPostgres(relayed.toString(), { poolSize: 2 }), drop: async () => undefined },
    env: { NATS_URL: cluster.nats.url, NODE_ID: 'node-db' },
  });
  try {
    assert.equal((await raw(`${cutOff.url}/healthz`)).status, 200);
    proxy.cut();
    const down = await raw(`${cutOff.url}/healthz`);
    assert.equal(down.status, 503, down.text);
    assert.match(down.json.error_description, /storage/);
    assert.deepEqual(down.json.checks, { storage: 'down', nats: 'up' });
    assert.equal(down.json.node_id, 'node-db');

    proxy.restore();
    const back = await eventually(async () => {
      const r = await raw(`${cutOff.url}/healthz`);
      return r.status === 200 ? r : undefined;
    }, 10_000, '200 once PostgreSQL is reachable');
    assert.deepEqual(back.json.checks, { storage: 'up', nats: 'up' });
  } finally {
    proxy.restore();
    await cutOff.close();
    await proxy.close();
  }
});
