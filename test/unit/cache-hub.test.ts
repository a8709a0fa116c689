import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CACHE_TOPIC, createCacheHub, type NoticeBus } from '../../src/platform/cache-hub.js';
import { manualClock } from '../../src/platform/clock.js';
import { eventually } from '../helpers/eventually.js';

/**
 * The cache hub (docs/architecture.md, "Caches in a cluster") over a bus of a few nodes in
 * memory, which delivers each notice to every node, the sender's included, as bus.ts says.
 */
function busOf(nodeIds: string[]) {
  const listeners = new Map<(payload: unknown) => void, string>();
  const sent: unknown[] = [];
  /** Nodes that notices do not reach for now (cut off, or too slow to take them). */
  const deaf = new Set<string>();
  let up = true;
  /** How many times the hubs asked whether the bus is up. */
  const checks = { count: 0 };
  const nodes = nodeIds.map((nodeId): NoticeBus => ({
    nodeId,
    notify(topic, payload) {
      assert.equal(topic, CACHE_TOPIC);
      sent.push(JSON.parse(JSON.stringify(payload)));
      for (const [listener, node] of listeners) if (!deaf.has(node)) listener(JSON.parse(JSON.stringify(payload)));
    },
    listen(_topic, listener) {
      listeners.set(listener, nodeId);
      return () => listeners.delete(listener);
    },
    state: () => {
      checks.count += 1;
      return up ? 'up' : 'down';
    },
  }));
  return { nodes, sent, checks, deaf, setUp: (value: boolean) => { up = value; } };
}

const tick = () => new Promise((r) => setImmediate(r));

test("a drop on one node drops the other nodes' copies, which announce nothing again", async () => {
  const clock = manualClock();
  const bus = busOf(['a', 'b', 'c']);
  const [a, b, c] = bus.nodes.map((n) => createCacheHub(n, clock));
  const caches = [a!, b!, c!].map((hub) => ({ tokens: hub.cache<string>('tokens', 60_000), users: hub.cache<string>('users', 60_000) }));
  for (const cache of caches) {
    cache.tokens.set('t1', 'token 1');
    cache.tokens.set('t2', 'token 2');
    cache.users.set('u1', 'user 1');
  }
  caches[0]!.tokens.delete('t1');
  assert.equal(caches[0]!.tokens.get('t1'), undefined, 'gone here at once');
  assert.equal(caches[1]!.tokens.get('t1'), 'token 1', 'the others hear of it on the next turn');
  await tick();
  assert.deepEqual(caches.map((x) => [x.tokens.get('t1'), x.tokens.get('t2'), x.users.get('u1')]), [
    [undefined, 'token 2', 'user 1'],
    [undefined, 'token 2', 'user 1'],
    [undefined, 'token 2', 'user 1'],
  ]);
  assert.deepEqual(bus.sent, [{ from: 'a', seq: 1, drops: { tokens: ['t1'] } }], 'one notice, not echoed by the nodes that received it');

  caches[1]!.users.clear();
  await tick();
  assert.deepEqual(caches.map((x) => x.users.get('u1')), [undefined, undefined, undefined]);
  assert.deepEqual(caches.map((x) => x.tokens.get('t2')), ['token 2', 'token 2', 'token 2'], 'another cache of the same names is left alone');
  for (const hub of [a, b, c]) hub!.close();
});

test('the drops of one turn travel together, a bounded number of keys a notice; a clear takes the place of its keys', async () => {
  const clock = manualClock();
  const bus = busOf(['a', 'b']);
  const a = createCacheHub(bus.nodes[0]!, clock, { maxKeysPerNotice: 1000 });
  const b = createCacheHub(bus.nodes[1]!, clock);
  const devicesA = a.cache<number>('devices', 60_000);
  const devicesB = b.cache<number>('devices', 60_000);
  const usersA = a.cache<number>('users', 60_000);
  const ids = Array.from({ length: 2500 }, (_, i) => `device-${i}`);
  for (const id of ids) devicesB.set(id, 1);
  // A reconnect storm: every device's presence dropped, some twice (connect, then hello).
  for (const id of ids) devicesA.delete(id);
  for (const id of ids.slice(0, 100)) devicesA.delete(id);
  usersA.delete('u1');
  usersA.clear();
  await tick();
  const notices = bus.sent as Array<{ drops: Record<string, string[] | '*'> }>;
  assert.equal(notices.length, 3, '2,501 drops in three notices');
  assert.deepEqual(notices.map((n) => Object.values(n.drops).reduce((sum, keys) => sum + (keys === '*' ? 1 : keys.length), 0)), [1000, 1000, 501]);
  assert.deepEqual(notices.flatMap((n) => (n.drops.users === undefined ? [] : [n.drops.users])), ['*'], "the users' clear, without the key before it");
  assert.equal(ids.filter((id) => devicesB.get(id) !== undefined).length, 0, 'every device dropped on the other node');
  a.close();
  b.close();
});

test("a read that raced another node's drop is not kept, and the cache's own bookkeeping hears of the drop", async () => {
  const clock = manualClock();
  const bus = busOf(['a', 'b']);
  const a = createCacheHub(bus.nodes[0]!, clock);
  const b = createCacheHub(bus.nodes[1]!, clock);
  const heard: Array<string | null> = [];
  const onA = a.cache<string>('clients', 60_000);
  const onB = b.cache<string>('clients', 60_000, { dropped: (key) => heard.push(key) });
  let answer!: (value: string) => void;
  const loading = onB.load('c1', () => new Promise<string>((resolve) => { answer = resolve; }));
  onA.delete('c1');
  await tick();
  answer('from before the change');
  assert.equal(await loading, 'from before the change');
  assert.equal(onB.get('c1'), undefined, 'not kept');
  assert.deepEqual(heard, ['c1']);
  onA.clear();
  await tick();
  assert.deepEqual(heard, ['c1', null]);
  a.close();
  b.close();
});

test('a cache with no lifetime tells nobody; a malformed notice is refused; a name is made once', async () => {
  const clock = manualClock();
  const bus = busOf(['a', 'b']);
  const a = createCacheHub(bus.nodes[0]!, clock);
  const off = a.cache<string>('tokens', 0);
  off.delete('t1');
  off.clear();
  await tick();
  assert.deepEqual(bus.sent, []);
  assert.throws(() => a.cache('tokens', 1000), /made twice/);
  assert.throws(() => bus.nodes[1]!.notify(CACHE_TOPIC, { from: 'b', drops: { tokens: ['t1'] } }), /malformed cache notice/);
  a.close();
});

test("a node that missed another node's notices drops everything at that node's next one", async () => {
  const clock = manualClock();
  const bus = busOf(['a', 'b']);
  const a = createCacheHub(bus.nodes[0]!, clock);
  const b = createCacheHub(bus.nodes[1]!, clock);
  const onA = a.cache<string>('users', 60_000);
  const onB = b.cache<string>('users', 60_000);
  onB.set('u1', 'user 1');
  onB.set('u2', 'user 2');
  onA.delete('u0');
  await tick();
  assert.equal(onB.get('u2'), 'user 2', 'a notice in order drops only its keys');
  bus.deaf.add('b');
  onA.delete('u1');
  await tick();
  bus.deaf.delete('b');
  assert.equal(onB.get('u1'), 'user 1', 'missed');
  onA.delete('u3');
  await tick();
  assert.deepEqual([onB.get('u1'), onB.get('u2')], [undefined, undefined], 'the gap dropped everything');
  // Node A restarted: its numbers start again, which is no gap.
  a.close();
  const a2 = createCacheHub(bus.nodes[0]!, clock);
  const again = a2.cache<string>('users', 60_000);
  onB.set('u4', 'user 4');
  again.delete('u5');
  await tick();
  assert.equal(onB.get('u4'), 'user 4');
  a2.close();
  b.close();
});

test('a node cut off from the bus drops what it holds, while it is and once it is back', async () => {
  const clock = manualClock();
  const bus = busOf(['a']);
  const a = createCacheHub(bus.nodes[0]!, clock, { checkMs: 5 });
  const tokens = a.cache<string>('tokens', 60_000);
  tokens.set('t1', 'token 1');
  bus.setUp(false);
  await eventually(() => (tokens.get('t1') === undefined ? true : undefined), 1000, 'dropped while cut off');
  tokens.set('t2', 'read while cut off');
  bus.setUp(true);
  await eventually(() => (tokens.get('t2') === undefined ? true : undefined), 1000, 'dropped once back');
  tokens.set('t3', 'read once back');
  // Up again: what it reads now is kept through the next checks.
  const after = bus.checks.count;
  await eventually(() => (bus.checks.count >= after + 3 ? true : undefined), 1000, 'three more checks');
  assert.equal(tokens.get('t3'), 'read once back');
  a.close();
});
