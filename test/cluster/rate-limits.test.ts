import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startCluster, startNodeProcess, type NodeProcess, type TestCluster } from '../helpers/cluster.js';
import { manualClock, type TestServer } from '../helpers/server.js';
import { raw, type RawResponse } from '../helpers/http.js';
import { signUp } from '../helpers/fixtures.js';
import { openEventStream, type EventStream } from '../helpers/sse.js';
import { eventually } from '../helpers/eventually.js';
import { limitKey } from '../../src/services/rate-limits/index.js';

/**
 * Per-address limits count across the nodes of a cluster (docs/architecture.md, "Request limits
 * in a cluster"): requests spread over two nodes are limited by their sum, event streams open on
 * either count together, and the streams of a node that died stop counting once its gauges lapse.
 */
const REQUESTS = 20;
const env = { RATE_LIMIT_REQUESTS: String(REQUESTS), RATE_LIMIT_OPEN_STREAMS: '2' };
let cluster: TestCluster;
let a: TestServer;
let b: TestServer;
const streams: EventStream[] = [];
before(async () => {
  cluster = await startCluster(['all', 'all'], { env });
  [a, b] = cluster.nodes as [TestServer, TestServer];
});
after(async () => {
  for (const s of streams) s.close();
  await cluster.close();
});

function isLimited(r: RawResponse, label: string): void {
  assert.equal(r.status, 429, `${label}: ${r.text}`);
  assert.equal(r.json?.error, 'rate_limit_exceeded', label);
  assert.ok(Number(r.headers.get('retry-after')) >= 1, label);
  assert.equal(r.headers.get('ratelimit-remaining'), '0', label);
}

test('requests from one address spread over two nodes are limited by their sum, on both', async () => {
  const from = '203.0.113.70';
  const get = (node: TestServer, address = from) => raw(`${node.url}/.well-known/oauth-authorization-server`, { from: address });
  for (let i = 0; i < REQUESTS; i++) assert.equal((await get(i % 2 === 0 ? a : b)).status, 200, `request ${i + 1}`);
  // Each node hears the other's counts within a notice's time.
  const windowMs = a.settings.rateLimitWindowSeconds * 1000;
  const key = limitKey('requests', from);
  await eventually(() => (a.skyport.rateLimits.requests.read(key, windowMs).count === REQUESTS && b.skyport.rateLimits.requests.read(key, windowMs).count === REQUESTS) || undefined, 5000, 'both nodes to know the sum');
  isLimited(await get(a), 'node 1, over the sum');
  isLimited(await get(b), 'node 2, over the sum');
  assert.equal((await get(b, '198.51.100.70')).status, 200, 'another address');
});

test('event streams open on either node count together against RATE_LIMIT_OPEN_STREAMS', async () => {
  const { token } = await signUp(a.url);
  const from = '127.0.0.8';
  const path = '/v1/devices/events';
  streams.push(await openEventStream(`${a.url}${path}`, token, { from }));
  const onB = await openEventStream(`${b.url}${path}`, token, { from });
  streams.push(onB);
  await eventually(() => (a.skyport.rateLimits.streams.total(from) === 2 && b.skyport.rateLimits.streams.total(from) === 2) || undefined, 5000, 'both nodes to know both streams');
  isLimited(await raw(`${a.url}${path}`, { token, from }), 'a third stream, on node 1');
  isLimited(await raw(`${b.url}${path}`, { token, from }), 'a third stream, on node 2');
  onB.close();
  const again = await eventually(async () => {
    const r = await raw(`${a.url}${path}`, { token, from });
    return r.status === 200 ? r : undefined;
  }, 5000, 'node 1 to admit a stream once the one on node 2 closed');
  assert.equal(again.text, ':ok\n\n');
});

test("a node that dies stops counting toward the open streams' sum once its gauges lapse (NODE_LEASE_SECONDS)", async () => {
  // The survivor's clock is the test's; the doomed node runs in a process of its own, to be killed.
  const clock = manualClock(new Date());
  const survivor = await cluster.add('all', { clock, env: { NODE_LEASE_SECONDS: '15' } });
  const doomed: NodeProcess = await startNodeProcess({
    ...env, DATABASE_URL: cluster.store.settings.DATABASE_URL as string, NATS_URL: cluster.nats.url, NODE_ID: 'node-doomed', NODE_LEASE_SECONDS: '3',
  });
  try {
    const { token } = await signUp(survivor.url);
    const from = '127.0.0.9';
    const path = '/v1/devices/events';
    for (let i = 0; i < 2; i++) streams.push(await openEventStream(`${doomed.url}${path}`, token, { from }));
    await eventually(() => survivor.skyport.rateLimits.streams.total(from) === 2 || undefined, 5000, "the survivor to know the doomed node's streams");
    isLimited(await raw(`${survivor.url}${path}`, { token, from }), 'the streams of the doomed node count');
    await doomed.kill('SIGKILL');
    clock.advance(14_000);
    isLimited(await raw(`${survivor.url}${path}`, { token, from }), 'still within their lifetime');
    // A gauge sent just before the kill may still be on its way: the clock moves on at each try.
    const admitted = await eventually(async () => {
      clock.advance(15_000);
      const r = await raw(`${survivor.url}${path}`, { token, from });
      return r.status === 200 ? r : undefined;
    }, 5000, 'the dead node to stop counting');
    assert.equal(admitted.text, ':ok\n\n');
  } finally {
    await doomed.kill();
  }
});
