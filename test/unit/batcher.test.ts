import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createBatcher } from '../../src/storage/batcher.js';

test('items added together share a flush; a failed flush rejects only its own items', async () => {
  const flushes: number[][] = [];
  const b = createBatcher<number>(async (items) => {
    flushes.push(items);
    await new Promise((r) => setTimeout(r, 5));
    if (items.includes(99)) throw new Error('boom');
  });
  await Promise.all([1, 2, 3].map((n) => b.add(n)));
  assert.deepEqual(flushes, [[1, 2, 3]]);
  const first = b.add(4);
  await new Promise((r) => setImmediate(r)); // the flush of 4 is now running
  const later = [b.add(5), b.add(99)];
  await first;
  const results = await Promise.allSettled(later);
  assert.deepEqual(flushes.slice(1), [[4], [5, 99]]);
  assert.deepEqual(results.map((r) => r.status), ['rejected', 'rejected']);
  await b.add(6);
  assert.deepEqual(flushes.at(-1), [6], 'the batcher goes on after a failure');
});

test('with inFlight 2, a second flush starts while the first runs, never a third', async () => {
  let running = 0;
  let most = 0;
  const b = createBatcher<number>(async () => {
    running += 1;
    most = Math.max(most, running);
    await new Promise((r) => setTimeout(r, 10));
    running -= 1;
  }, { inFlight: 2, maxBatch: 1 });
  await Promise.all([1, 2, 3, 4, 5].map((n) => b.add(n)));
  assert.equal(most, 2);
});

test('a reading flush answers each caller with its own result, in one flush per turn', async () => {
  const flushes: string[][] = [];
  const b = createBatcher<string, number | undefined>(async (keys) => {
    flushes.push(keys);
    const known = new Map([['a', 1], ['b', 2]]);
    return keys.map((k) => known.get(k));
  });
  const answers = await Promise.all(['b', 'x', 'a', 'b'].map((k) => b.add(k)));
  assert.deepEqual(answers, [2, undefined, 1, 2]);
  assert.deepEqual(flushes, [['b', 'x', 'a', 'b']]);
});
