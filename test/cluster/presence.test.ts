import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import type { TestServer } from '../helpers/server.js';
import { raw } from '../helpers/http.js';
import { newProduct, signUp } from '../helpers/fixtures.js';
import { fakeDevice, provision, type Identity } from '../helpers/device.js';
import { eventually } from '../helpers/eventually.js';
import { openEventStream } from '../helpers/sse.js';
import { startProxy } from '../helpers/proxy.js';
import { spawnSkyport } from '../helpers/cli.js';
import { createPresenceRepository } from '../../src/repositories/presence.repository.js';
import { holdLease } from '../../src/cluster/lease.js';

/**
 * Presence across nodes (docs/architecture.md, "Presence and node leases"): each node renews a
 * lease in NATS; the leader sets offline the devices of a node whose lease lapsed (a node gone
 * without a goodbye), within NODE_LEASE_SECONDS and one check; a node cut off from NATS says its
 * devices again once it is back. Leases of 3 s (the least allowed) keep the waits short.
 */
const LEASE_SECONDS = 3;
const CHECK_MS = (LEASE_SECONDS * 1000) / 3;
let cluster: TestCluster;
let first: TestServer;
let token: string;
let product: { id: number };
before(async () => {
  cluster = await startCluster(['all'], { env: { NODE_LEASE_SECONDS: String(LEASE_SECONDS) } });
  first = cluster.nodes[0] as TestServer;
  ({ token } = await signUp(first.url));
  product = await newProduct(first.url, token, 'Presence');
});
after(async () => { await cluster.close(); });

const stored = async (node: TestServer, id: string) =>
  (await node.skyport.db.query<{ online: boolean; node_id: string | null }>('SELECT online, node_id FROM devices WHERE id = $1', [id]))[0];
const onlineSays = async (node: TestServer, id: string) => {
  const r = await raw(`${node.url}/v1/devices/${id}`, { token });
  assert.equal(r.status, 200, r.text);
  return r.json.online as boolean;
};
const statuses = (events: Array<{ name: string; data: string | null; coreid: string }>, id: string) =>
  events.filter((e) => e.name === 'spark/status' && e.coreid === id).map((e) => e.data);

/**
 * Runs `body` while `nodes` hold leases, each held as a node holds its own (cluster/lease.ts): the
 * tests that drive the presence repository under made-up node names would otherwise race the
 * running leader's check, which sets offline the devices of any node without a lease.
 */
async function leased<T>(nodes: string[], body: () => Promise<T>): Promise<T> {
  const table = await first.skyport.bus.shared.table('nodes', LEASE_SECONDS * 1000);
  const quiet = () => ({ error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined });
  const leases = nodes.map((nodeId) => holdLease({ table, nodeId, ttlMs: LEASE_SECONDS * 1000, log: quiet, lapsed: async () => undefined }));
  await Promise.all(leases.map((l) => l.first));
  try {
    return await body();
  } finally {
    await Promise.all(leases.map((l) => l.close()));
  }
}

test('a gateway killed with SIGKILL: its devices are offline within the lease and one check, and online again once they reconnect to another node', async () => {
  // The doomed gateway is a process of its own, started as docs/operations.md says, on the cluster's store and NATS.
  const gw = spawnSkyport(['server', 'start', '--role', 'gateway', '--node-id', 'gw-doomed', '--host', '127.0.0.1', '--port', '0', '--mqtt-port', '0'], {
    DATABASE_URL: first.settings.databaseUrl as string, NATS_URL: cluster.nats.url, NODE_LEASE_SECONDS: String(LEASE_SECONDS), LOG_LEVEL: 'silent',
  });
  let device: Awaited<ReturnType<typeof fakeDevice>> | undefined;
  try {
    await eventually(() => (gw.out().includes('Skyport is running') ? true : undefined), 30_000, 'the gateway\'s start');
    const mqttUrl = /MQTT +(mqtt:\/\/\S+)/.exec(gw.out())?.[1] as string;
    const healthUrl = /health +(http:\/\/\S+)/.exec(gw.out())?.[1] as string;
    assert.ok(mqttUrl && healthUrl, gw.out());
    const health = await fetch(healthUrl);
    assert.equal(health.status, 200);
    assert.deepEqual({ ...(await health.json() as Record<string, unknown>) }, { ok: true, storage: 'postgres', role: 'gateway', node_id: 'gw-doomed', checks: { storage: 'up', nats: 'up' } });
    const api = await fetch(healthUrl.replace('/healthz', '/v1/devices'));
    assert.equal(api.status, 421, 'a gateway node does not serve the REST API');

    const who: Identity = await provision(first.url, token, product.id);
    const stream = await openEventStream(`${first.url}/v1/products/${product.id}/events`, token);
    try {
      device = await fakeDevice(mqttUrl, who);
      await eventually(async () => ((await stored(first, who.id))?.online ? true : undefined), 5000, 'online in the store');
      assert.deepEqual(await stored(first, who.id), { online: true, node_id: 'gw-doomed' });
      assert.equal(await onlineSays(first, who.id), true);
      const lost = new Promise<void>((resolve) => device?.client.once('close', () => resolve()));

      const killedAt = Date.now();
      gw.child.kill('SIGKILL');
      await gw.exit;
      await lost;
      // No goodbye was stored: the row still names the dead node until the leader sees its lease gone.
      assert.deepEqual(await stored(first, who.id), { online: true, node_id: 'gw-doomed' });
      await eventually(async () => ((await stored(first, who.id))?.online === false ? true : undefined), 15_000, 'offline after the lease');
      const took = Date.now() - killedAt;
      // The documented bound: NODE_LEASE_SECONDS and one check period, plus what JetStream takes to expire an entry.
      assert.ok(took <= LEASE_SECONDS * 1000 + CHECK_MS + 1500, `offline after ${took} ms`);
      assert.ok(took >= LEASE_SECONDS * 1000 - CHECK_MS - 500, `not before the lease could lapse (${took} ms)`);
      assert.deepEqual(await stored(first, who.id), { online: false, node_id: null });
      // Every node's cached row went with it, and streams were told.
      assert.equal(await onlineSays(first, who.id), false);
      await eventually(() => (statuses(stream.events, who.id).includes('offline') ? true : undefined), 5000, 'the offline event');
      assert.deepEqual(statuses(stream.events, who.id), ['online', 'offline']);

      // The device reconnects, to the node that is left: online again, there.
      device = await fakeDevice(first.mqttUrl, who);
      await eventually(async () => ((await stored(first, who.id))?.online ? true : undefined), 5000, 'online again');
      assert.deepEqual(await stored(first, who.id), { online: true, node_id: 'node-1' });
      assert.equal(await onlineSays(first, who.id), true);
      const ping = await raw(`${first.url}/v1/devices/${who.id}/ping`, { method: 'PUT', token });
      assert.equal(ping.json.online, true, ping.text);
    } finally {
      stream.close();
    }
  } finally {
    gw.child.kill('SIGKILL');
    await device?.close();
  }
});

test('a node cut off from NATS past its lease: the leader sets its devices offline; once back, the node says them online again', async () => {
  const proxy = await startProxy({ host: '127.0.0.1', port: cluster.nats.port });
  const cut = await cluster.add('all', { env: { NATS_URL: `nats://127.0.0.1:${proxy.port}`, NODE_ID: 'node-cut' } });
  const who = await provision(first.url, token, product.id);
  const stream = await openEventStream(`${first.url}/v1/products/${product.id}/events`, token);
  const device = await fakeDevice(cut.mqttUrl, who, { functions: { twice: (arg) => Number(arg) * 2 } });
  try {
    await eventually(async () => ((await stored(first, who.id))?.online ? true : undefined), 5000, 'online in the store');
    assert.deepEqual(await stored(first, who.id), { online: true, node_id: 'node-cut' });
    assert.equal(await onlineSays(first, who.id), true);

    proxy.cut();
    await eventually(() => (cut.skyport.bus.state() === 'down' ? true : undefined), 5000, 'the node losing NATS');
    // Its device is still connected to it, but no other node can reach it: the leader lets it go.
    await eventually(async () => ((await stored(first, who.id))?.online === false ? true : undefined), 15_000, 'offline after the lease');
    assert.equal(await onlineSays(first, who.id), false);
    await eventually(() => (statuses(stream.events, who.id).includes('offline') ? true : undefined), 5000, 'the offline event');

    proxy.restore();
    await eventually(async () => ((await stored(first, who.id))?.online ? true : undefined), 15_000, 'online again');
    assert.deepEqual(await stored(first, who.id), { online: true, node_id: 'node-cut' });
    await eventually(async () => (await onlineSays(first, who.id) ? true : undefined), 5000, 'online on the other node');
    await eventually(() => (statuses(stream.events, who.id).length === 3 ? true : undefined), 5000, 'the online event');
    assert.deepEqual(statuses(stream.events, who.id), ['online', 'offline', 'online']);
    const call = await eventually(async () => {
      const r = await raw(`${first.url}/v1/devices/${who.id}/twice`, { method: 'POST', token, json: { arg: '21' } });
      return r.status === 200 ? r : undefined;
    }, 10_000, 'a call through the node that came back');
    assert.equal(call.json.return_value, 42);
    // Nothing undid it meanwhile (a leader's check that crossed the node's return would have).
    assert.deepEqual(await stored(first, who.id), { online: true, node_id: 'node-cut' });
    assert.deepEqual(statuses(stream.events, who.id), ['online', 'offline', 'online']);
  } finally {
    stream.close();
    await device.close();
    await cut.close();
    await proxy.close();
  }
});

test('a late disconnect from a node the device has left, and a late connect older than the newest, leave the row to the newer connection', () => leased(['node-a', 'node-b', 'node-c'], async () => {
  const repo = createPresenceRepository(first.skyport.db);
  const who = await provision(first.url, token, product.id);
  const t = Date.now();
  // The device moved from node A to node B; A's report of its disconnect is written after B's connect.
  await repo.apply([{ id: who.id, online: true, at: new Date(t), ip: '10.0.0.1' }], 'node-a');
  await repo.apply([{ id: who.id, online: true, at: new Date(t + 10), ip: '10.0.0.2' }], 'node-b');
  await repo.apply([{ id: who.id, online: false, at: new Date(t + 20) }], 'node-a');
  assert.deepEqual(await stored(first, who.id), { online: true, node_id: 'node-b' });
  // A connect on C older than B's, written after it (batches of different nodes race): B keeps it.
  await repo.apply([{ id: who.id, online: true, at: new Date(t + 5), ip: '10.0.0.3' }], 'node-c');
  assert.deepEqual(await stored(first, who.id), { online: true, node_id: 'node-b' });
  // B's own disconnect: offline, the row still naming B (a reconnect to B then writes in place).
  await repo.apply([{ id: who.id, online: false, at: new Date(t + 30) }], 'node-b');
  assert.deepEqual(await stored(first, who.id), { online: false, node_id: 'node-b' });
  // A's disconnect, later still, changes nothing: the row is not A's.
  await repo.apply([{ id: who.id, online: false, at: new Date(t + 40) }], 'node-a');
  assert.deepEqual(await stored(first, who.id), { online: false, node_id: 'node-b' });
  await repo.release(['node-a', 'node-b', 'node-c']);
}));

/** Two devices that connected through `node` a minute ago; `left` has disconnected from it since. */
async function heldAndLeft(repo: ReturnType<typeof createPresenceRepository>, node: string) {
  const [held, left] = [await provision(first.url, token, product.id), await provision(first.url, token, product.id)];
  const t = Date.now() - 60_000;
  await repo.apply([{ id: held.id, online: true, at: new Date(t) }, { id: left.id, online: true, at: new Date(t) }], node);
  await repo.apply([{ id: left.id, online: false, at: new Date(t + 10) }], node);
  return { held, left };
}

test('a node gone for good is named by no row after the leader releases it, offline rows included, and only its online devices are answered for events', () => leased(['node-z'], async () => {
  const repo = createPresenceRepository(first.skyport.db);
  const { held, left } = await heldAndLeft(repo, 'node-z');
  const check = await repo.namedNodes();
  assert.ok(check.nodes.includes('node-z'));
  assert.deepEqual((await repo.release(['node-z'], check.at)).map((d) => d.id), [held.id]);
  assert.deepEqual(await stored(first, left.id), { online: false, node_id: null });
  assert.deepEqual(await stored(first, held.id), { online: false, node_id: null });
  assert.ok(!(await repo.namedNodes()).nodes.includes('node-z'), 'the next check does not find node-z again');
}));

test('a connect or a disconnect stored by one node reaches the cached rows of the others at once, not after TOKEN_CACHE_SECONDS', async () => {
  const second = await cluster.add('all');
  const who = await provision(first.url, token, product.id);
  try {
    // The first node reads the device while it is offline, and keeps that row (30 s by default).
    assert.equal(await onlineSays(first, who.id), false);
    const device = await fakeDevice(second.mqttUrl, who);
    await eventually(async () => ((await stored(first, who.id))?.online ? true : undefined), 5000, 'online in the store');
    await eventually(async () => (await onlineSays(first, who.id) ? true : undefined), 2000, 'online on the other node');
    await device.close();
    await eventually(async () => ((await stored(first, who.id))?.online === false ? true : undefined), 5000, 'offline in the store');
    await eventually(async () => (await onlineSays(first, who.id) ? undefined : true), 2000, 'offline on the other node');
  } finally {
    await second.close();
  }
});

test('a leader check that read the leases before a node came back does not undo the devices the node said again', () => leased(['node-x'], async () => {
  const repo = createPresenceRepository(first.skyport.db);
  const who = await provision(first.url, token, product.id);
  await repo.apply([{ id: who.id, online: true, at: new Date(Date.now() - 60_000), ip: '10.0.0.9' }], 'node-x');
  // The leader reads the nodes and finds node-x's lease gone...
  const check = await repo.namedNodes();
  assert.ok(check.nodes.includes('node-x'));
  // ...node-x writes its lease again and says its devices (they were still online: no event)...
  assert.deepEqual(await repo.reassert('node-x', [who.id]), []);
  // ...and the leader's release, from before, leaves them.
  assert.deepEqual(await repo.release(['node-x'], check.at), []);
  assert.deepEqual(await stored(first, who.id), { online: true, node_id: 'node-x' });
  // A later check, with node-x gone for good, takes them.
  const later = await repo.namedNodes();
  assert.deepEqual((await repo.release(['node-x'], later.at)).map((d) => d.id), [who.id]);
  assert.deepEqual(await stored(first, who.id), { online: false, node_id: null });
  // Said again while offline: online, and answered for its online event.
  assert.deepEqual((await repo.reassert('node-x', [who.id])).map((d) => d.id), [who.id]);
  assert.deepEqual(await stored(first, who.id), { online: true, node_id: 'node-x' });
  await repo.release(['node-x']);
}));

test("the leader check's time keeps the store's microseconds: a device heard of in the same millisecond, before the check, is released", () => leased(['node-y'], async () => {
  const repo = createPresenceRepository(first.skyport.db);
  const who = await provision(first.url, token, product.id);
  await repo.apply([{ id: who.id, online: true, at: new Date(Date.now() - 60_000) }], 'node-y');
  const check = await repo.namedNodes();
  assert.match(check.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  // Heard of 400 µs before the check read the store, in the same millisecond: as a JS Date the
  // check's time was the start of that millisecond, before the device was heard of.
  await first.skyport.db.query("UPDATE devices SET last_heard = '2026-11-28T10:00:00.000400Z' WHERE id = $1", [who.id]);
  assert.deepEqual((await repo.release(['node-y'], '2026-11-28T10:00:00.000900Z')).map((d) => d.id), [who.id]);
  assert.deepEqual(await stored(first, who.id), { online: false, node_id: null });
}));

test('online rows that name no recorded node (written before nodes were recorded; migration 0020 names them "(unrecorded)") are set offline by the leader, with their offline events', async () => {
  const who = await provision(first.url, token, product.id);
  const stream = await openEventStream(`${first.url}/v1/products/${product.id}/events`, token);
  try {
    await first.skyport.db.query("UPDATE devices SET online = true, node_id = '(unrecorded)' WHERE id = $1", [who.id]);
    await eventually(async () => ((await stored(first, who.id))?.online === false ? true : undefined), 5000, 'offline after the leader\'s check');
    assert.deepEqual(await stored(first, who.id), { online: false, node_id: null });
    await eventually(() => (statuses(stream.events, who.id).includes('offline') ? true : undefined), 5000, 'the offline event');
  } finally {
    stream.close();
  }
});

test('a node started again under its NODE_ID sets offline the devices its last run held, and leaves them naming it so that their reconnects write in place', () => leased(['node-r'], async () => {
  const repo = createPresenceRepository(first.skyport.db);
  const { held, left } = await heldAndLeft(repo, 'node-r');
  assert.deepEqual((await repo.releaseOwn('node-r')).map((d) => d.id), [held.id]);
  assert.deepEqual(await stored(first, held.id), { online: false, node_id: 'node-r' });
  assert.deepEqual(await stored(first, left.id), { online: false, node_id: 'node-r' });
  await repo.release(['node-r']);
}));
