import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import mqtt from 'mqtt';
import { startCluster, type TestCluster } from '../helpers/cluster.js';
import { email, type TestServer } from '../helpers/server.js';
import { raw, type RawResponse } from '../helpers/http.js';
import { newProduct, signUp, PASSWORD } from '../helpers/fixtures.js';
import { provision } from '../helpers/device.js';
import { eventually } from '../helpers/eventually.js';

/**
 * Lock-outs and the per-address budget count across nodes (docs/security.md, "Lock-out in a
 * cluster"): failures spread over two nodes lock as many on one would, on both. While NATS is
 * down, each node counts on its own; once it is back, the count is shared again.
 */
let cluster: TestCluster;
let a: TestServer;
let b: TestServer;
const MAX = 4;
before(async () => {
  cluster = await startCluster(['all', 'all'], { env: { LOGIN_MAX_FAILURES: String(MAX), LOGIN_LOCKOUT_SECONDS: '60', IP_MAX_FAILURES: '8', TRUST_PROXY: 'loopback' } });
  [a, b] = cluster.nodes as [TestServer, TestServer];
});
after(async () => { await cluster.close(); });

function login(node: TestServer, username: string, password: string, from: string): Promise<RawResponse> {
  return raw(`${node.url}/oauth/token`, {
    method: 'POST',
    form: { grant_type: 'password', username, password, client_id: 'particle-api', client_secret: 'particle-api' },
    headers: { 'x-forwarded-for': from },
  });
}

function isLockedOut(r: RawResponse, maxSeconds: number, label: string): void {
  assert.equal(r.status, 429, `${label}: ${r.text}`);
  assert.equal(r.json?.error, 'rate_limit_exceeded', label);
  const retryAfter = Number(r.headers.get('retry-after'));
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= maxSeconds, `${label}: Retry-After ${r.headers.get('retry-after')}`);
}

/** The answers (status) to wrong passwords sent to the nodes in turn, starting with `first`. */
async function failAlternating(username: string, count: number, from: string, first = 0): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) statuses.push((await login(cluster.nodes[(first + i) % 2] as TestServer, username, 'wrong horse', from)).status);
  return statuses;
}

test('wrong passwords spread over two nodes lock the account at the same total as on one node, on both nodes', async () => {
  const { username } = await signUp(a.url);
  const from = '203.0.113.31';
  assert.deepEqual(await failAlternating(username, MAX, from), [400, 400, 400, 429], 'the failure that reaches LOGIN_MAX_FAILURES says so, wherever it lands');
  isLockedOut(await login(a, username, PASSWORD, from), 60, 'the right password on node 1');
  isLockedOut(await login(b, username, PASSWORD, '198.51.100.31'), 60, 'the right password on node 2, from another address');
  isLockedOut(await login(b, username.toUpperCase(), PASSWORD, from), 60, 'the username in another letter case');
  // The counters are in NATS under digests: no username or address in clear.
  const stored = await (await a.skyport.bus.shared.table('logins', 300_000)).keys();
  assert.ok(stored.length >= 2, JSON.stringify(stored));
  for (const key of stored) assert.match(key, /^(key|source)-[0-9a-f]{64}$/);
});

test('a success on one node starts the count again on every node', async () => {
  const { username } = await signUp(a.url);
  const from = '203.0.113.32';
  assert.deepEqual(await failAlternating(username, MAX - 1, from), [400, 400, 400]);
  assert.equal((await login(b, username, PASSWORD, from)).status, 200, 'the right password before the limit');
  assert.deepEqual(await failAlternating(username, MAX - 1, from), [400, 400, 400], 'counted from zero again on both nodes');
  assert.equal((await login(a, username, PASSWORD, from)).status, 200);
});

test('an address is limited to IP_MAX_FAILURES failures spread over nodes and usernames', async () => {
  const { username } = await signUp(a.url);
  const attacker = '203.0.113.33';
  const statuses: number[] = [];
  // Eight failures, each with another unknown username, so no account reaches its own limit.
  for (let i = 0; i < 8; i++) statuses.push((await login(cluster.nodes[i % 2] as TestServer, email('nobody'), 'wrong', attacker)).status);
  assert.deepEqual(statuses, [400, 400, 400, 400, 400, 400, 400, 429]);
  isLockedOut(await login(a, username, PASSWORD, attacker), 300, 'any account from that address on node 1');
  isLockedOut(await login(b, username, PASSWORD, attacker), 300, 'and on node 2');
  assert.equal((await login(b, username, PASSWORD, '198.51.100.33')).status, 200, 'another address logs in');
});

function connect(url: string, id: string, secret: string): Promise<string> {
  return new Promise((resolve) => {
    const c = mqtt.connect(url, { clientId: id, username: id, password: secret, reconnectPeriod: 0, connectTimeout: 5000 });
    c.once('connect', () => { c.end(true); resolve('connected'); });
    c.once('error', (err) => { c.end(true); resolve(err.message); });
  });
}

test("a device's failed CONNECTs spread over two gateways count together", async () => {
  const { token } = await signUp(a.url);
  const product = await newProduct(a.url, token, 'Cluster lock-out');
  const who = await provision(a.url, token, product.id);
  for (let i = 0; i < MAX; i++) {
    assert.match(await connect((cluster.nodes[i % 2] as TestServer).mqttUrl, who.id, `wrong-${i}`), /Bad username or password/, `failure ${i + 1}`);
  }
  assert.match(await connect(a.mqttUrl, who.id, who.secret), /Not authorized/, 'the right secret on gateway 1: banned (CONNACK 5)');
  assert.match(await connect(b.mqttUrl, who.id, who.secret), /Not authorized/, 'and on gateway 2');
  const other = await provision(a.url, token, product.id);
  assert.equal(await connect(b.mqttUrl, other.id, other.secret), 'connected', 'another device from the same address');
});

test('while NATS is down each node counts on its own and logins go on; once it is back the count is shared again, lock-outs from before included', async () => {
  const { username } = await signUp(a.url);
  const kept = (await signUp(a.url)).username;
  assert.deepEqual(await failAlternating(kept, MAX, '203.0.113.36'), [400, 400, 400, 429], 'locked before NATS goes');
  await cluster.nats.kill();
  await eventually(() => (cluster.nodes.every((n) => n.skyport.bus.state() === 'down') ? true : undefined), 5000, 'both nodes see NATS gone');

  const from = '203.0.113.34';
  assert.equal((await login(a, username, PASSWORD, from)).status, 200, 'the right password: no 503, no lock-out of everyone');
  const alone: number[] = [];
  for (let i = 0; i < MAX; i++) alone.push((await login(a, username, 'wrong horse', from)).status);
  assert.deepEqual(alone, [400, 400, 400, 429], 'node 1 still limits on its own');
  isLockedOut(await login(a, username, PASSWORD, from), 60, 'the right password on node 1');
  // What node 1 counted alone is not known to node 2 meanwhile: per node, as docs/security.md says.
  assert.equal((await login(b, username, PASSWORD, from)).status, 200, 'node 2 saw none of them');

  await cluster.nats.restart();
  // Back when both nodes are reconnected and JetStream answers again.
  await eventually(async () => {
    if (!cluster.nodes.every((n) => n.skyport.bus.state() === 'up')) return undefined;
    try {
      for (const n of cluster.nodes) await (await n.skyport.bus.shared.table('logins', 300_000)).get('probe');
      return true;
    } catch {
      return undefined;
    }
  }, 15_000, 'NATS back');
  isLockedOut(await login(a, kept, PASSWORD, '203.0.113.36'), 60, 'a lock-out from before survives the restart of NATS');
  isLockedOut(await login(b, kept, PASSWORD, '198.51.100.36'), 60, 'on both nodes');
  const again = (await signUp(a.url)).username;
  assert.deepEqual(await failAlternating(again, MAX, '203.0.113.35', 1), [400, 400, 400, 429], 'shared again');
  isLockedOut(await login(a, again, PASSWORD, '203.0.113.35'), 60, 'on node 1');
  isLockedOut(await login(b, again, PASSWORD, '203.0.113.35'), 60, 'on node 2');
});
