import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Bus } from '../../src/bus/bus.js';
import { manualClock } from '../../src/platform/clock.js';
import { OpenStreams, RequestCounts } from '../../src/services/rate-limits/index.js';
import { WindowCounts } from '../../src/services/rate-limits/windows.js';

/**
 * The counters behind the per-address limits (src/services/rate-limits/): fixed windows aligned
 * to the clock, bounded memory, and the sums over a cluster's nodes through bus notices (here a
 * bus of this process that several nodes share, each notice going to every node as on NATS).
 */

const W = 300_000;
const turn = () => new Promise((resolve) => setImmediate(resolve));

/** Nodes on one bus; `sent` lists every notice, `up` cuts them all off. */
function sharedBus() {
  const listeners = new Map<string, Set<(payload: unknown) => void>>();
  const sent: Array<{ topic: string; from: string; payload: unknown }> = [];
  const state = { up: true };
  const node = (nodeId: string) => ({
    nodeId,
    state: () => (state.up ? 'up' : 'down'),
    notify(topic: string, payload: unknown) {
      sent.push({ topic, from: nodeId, payload });
      const copy = JSON.parse(JSON.stringify(payload)) as unknown;
      for (const listener of listeners.get(topic) ?? []) listener(copy);
    },
    listen(topic: string, listener: (payload: unknown) => void) {
      const set = listeners.get(topic) ?? new Set();
      listeners.set(topic, set.add(listener));
      return () => set.delete(listener);
    },
    whenBack: () => () => undefined,
  }) as unknown as Bus;
  return { node, sent, state };
}

test('windows are aligned to the clock: a count runs until the next multiple of the window, then starts again', () => {
  const clock = manualClock(new Date(Math.floor(Date.UTC(2026, 0, 1) / W) * W + 10_000));
  const counts = new WindowCounts(clock, 10);
  assert.deepEqual(counts.add('a', W), { count: 1, resetMs: W - 10_000, window: Math.floor(clock.nowMs() / W) });
  assert.equal(counts.add('a', W).count, 2);
  assert.equal(counts.add('b', W).count, 1, 'each key its own count');
  assert.equal(counts.read('a', W).count, 2, 'reading does not count');
  clock.advance(W - 10_001);
  assert.equal(counts.add('a', W).resetMs, 1);
  clock.advance(1);
  assert.deepEqual({ ...counts.read('a', W), window: 0 }, { count: 0, resetMs: W, window: 0 }, 'a new window');
});

test('at most maxKeys keys per window: the key counted least recently goes first', () => {
  const clock = manualClock();
  const counts = new WindowCounts(clock, 3);
  counts.add('flooder', W);
  counts.add('x', W);
  counts.add('y', W);
  counts.add('flooder', W);
  counts.add('z', W);
  assert.equal(counts.read('x', W).count, 0, 'x was the least recent');
  assert.equal(counts.read('flooder', W).count, 2, 'a key still counting keeps its count');
  for (let i = 0; i < 1000; i++) counts.add(`spray-${i}`, W);
  assert.equal(counts.read('spray-999', W).count, 1);
  assert.equal(counts.read('spray-996', W).count, 0);
});

test("another node's counts add to the current window, or to the next when its clock is ahead; an ended window counts for nothing", () => {
  const clock = manualClock(new Date(Math.floor(Date.UTC(2026, 0, 1) / W) * W));
  const counts = new WindowCounts(clock, 10);
  const now = Math.floor(clock.nowMs() / W);
  counts.addWindow('a', W, now, 5);
  counts.addWindow('a', W, now - 1, 100);
  counts.addWindow('a', W, now + 1, 7);
  counts.addWindow('a', W, now + 2, 1000);
  assert.equal(counts.add('a', W).count, 6);
  clock.advance(W);
  assert.equal(counts.add('a', W).count, 8, 'the next window had 7 already');
});

test('two nodes: each sees the sum within a turn, and a key over its limit sends nothing more', async () => {
  const clock = manualClock();
  const bus = sharedBus();
  const a = new RequestCounts(clock, 100, bus.node('a'));
  const b = new RequestCounts(clock, 100, bus.node('b'));
  for (let i = 0; i < 3; i++) a.add('k', W, 10);
  b.add('k', W, 10);
  assert.equal(bus.sent.length, 0, 'nothing sent before the turn ends');
  await turn();
  assert.equal(bus.sent.length, 2, 'one notice per node per turn');
  assert.equal(a.read('k', W).count, 4);
  assert.equal(b.read('k', W).count, 4);
  for (let i = 0; i < 50; i++) a.add('k', W, 10);
  await turn();
  assert.equal(b.read('k', W).count, 11, 'the increments up to the first over the limit');
  assert.ok(b.read('k', W).count > 10, 'b knows the key is over');
  const before = bus.sent.length;
  for (let i = 0; i < 50; i++) b.add('k', W, 10);
  await turn();
  assert.equal(bus.sent.length, before, 'a flood past the limit sends nothing');
  a.close();
  b.close();
});

test('one node, or a bus that is down: nothing is sent, and each node counts alone', async () => {
  const clock = manualClock();
  const alone = new RequestCounts(clock, 100);
  alone.add('k', W, 10);
  const bus = sharedBus();
  const a = new RequestCounts(clock, 100, bus.node('a'));
  const b = new RequestCounts(clock, 100, bus.node('b'));
  bus.state.up = false;
  a.add('k', W, 10);
  await turn();
  assert.equal(bus.sent.length, 0);
  assert.equal(b.read('k', W).count, 0);
  assert.equal(a.read('k', W).count, 1);
});

test("open streams: summed over nodes; another node's gauge lapses when not sent again in time; a node that closes takes its own away at once", async () => {
  const clock = manualClock();
  const bus = sharedBus();
  const shared = (id: string) => ({ bus: bus.node(id), refreshMs: 60_000, lifetimeMs: 15_000 });
  const a = new OpenStreams(clock, shared('a'));
  const b = new OpenStreams(clock, shared('b'));
  const c = new OpenStreams(clock, shared('c'));
  const first = a.take('1.2.3.4', 3);
  assert.ok(first);
  assert.ok(b.take('1.2.3.4', 3));
  await turn();
  assert.equal(c.total('1.2.3.4'), 2);
  assert.ok(c.take('1.2.3.4', 3), 'the third');
  await turn();
  assert.equal(a.take('1.2.3.4', 3), null, 'a fourth is refused on any node');
  assert.equal(b.take('1.2.3.4', 3), null);
  assert.ok(a.take('5.6.7.8', 3), 'another address is not affected');
  first();
  first();
  await turn();
  assert.equal(b.total('1.2.3.4'), 2, 'a release counts once');
  // c closes in order; b dies without a word.
  c.close();
  await turn();
  assert.equal(a.total('1.2.3.4'), 1, "c's stream no longer counts");
  clock.advance(14_999);
  assert.equal(a.total('1.2.3.4'), 1, "b's gauge still counts within its lifetime");
  clock.advance(1);
  assert.equal(a.total('1.2.3.4'), 0, "b's gauge lapsed");
  a.close();
  b.close();
});
