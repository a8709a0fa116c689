import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cacheDevices } from '../../src/repositories/devices.cache.js';
import { manualClock } from '../../src/platform/clock.js';
import { createCacheHub, localCaches } from '../../src/platform/cache-hub.js';
import type { DeviceRecord, DeviceScope, DevicesRepository } from '../../src/repositories/devices.repository.js';
import type { Tx } from '../../src/storage/db.js';

/**
 * A store of one device row whose read number `slowRead` waits for `release()`; it answers the
 * row as it was when the read began.
 */
function slowStore(row: DeviceRecord, slowRead: number) {
  let stored = row;
  let reads = 0;
  let release: () => void = () => undefined;
  const repo = {
    async findById() {
      reads += 1;
      const now = stored;
      if (reads === slowRead) await new Promise<void>((r) => { release = r; });
      return now;
    },
  } as unknown as DevicesRepository;
  return {
    repo,
    get stored() { return stored; },
    set stored(next: DeviceRecord) { stored = next; },
    get reads() { return reads; },
    release: () => release(),
  };
}

test('a read that raced a reported change is not kept: the next read goes to storage again', async () => {
  // The first read is slow.
  const store = slowStore({ id: 'a'.repeat(24), functions: [] as string[] } as unknown as DeviceRecord, 1);
  const id = store.stored.id;
  const cache = cacheDevices(store.repo, localCaches(manualClock()));

  const slow = cache.findById(id);
  await new Promise((r) => setImmediate(r));
  // The device said hello meanwhile: stored, then reported.
  store.stored = { ...store.stored, functions: ['led'] };
  cache.forget(id);
  store.release();
  assert.deepEqual((await slow)?.functions, [], 'the racing read answers what it read');
  assert.deepEqual((await cache.findById(id))?.functions, ['led'], 'but was not kept');
  assert.equal(store.reads, 2);
  await cache.findById(id);
  assert.equal(store.reads, 2, 'a read with no change during it is kept');
});

test('a write inside a transaction is dropped from memory and reported once it has committed, with what it committed', async () => {
  const id = 'b'.repeat(24);
  const before = { id, owner: { kind: 'user', id: 'u1' }, productId: 7, functions: [] } as unknown as DeviceRecord;
  let stored = before;
  let pending: DeviceRecord | undefined;
  const repo = {
    findById: async () => stored,
    async setOwner(_id: string, owner: DeviceRecord['owner']) {
      pending = { ...stored, owner };
      return { id, owner, productId: stored.productId };
    },
  } as unknown as DevicesRepository;
  const moved: DeviceScope[][] = [];
  const cache = cacheDevices(repo, localCaches(manualClock()), 30_000, { moved: (devices) => moved.push(devices) });
  // A transaction that has not committed yet: its effects wait.
  const effects: Array<() => void> = [];
  const tx = { query: async () => [], exec: async () => undefined, afterCommit: (effect: () => void) => { effects.push(effect); } } as unknown as Tx;

  assert.equal((await cache.findById(id))?.owner?.id, 'u1');
  await cache.setOwner(id, null, tx);
  const reportedEarly = [...moved];
  // A read between the write and its commit sees (and may keep) the row from before.
  assert.equal((await cache.findById(id))?.owner?.id, 'u1');

  stored = pending as DeviceRecord;
  for (const effect of effects) effect();
  assert.equal((await cache.findById(id))?.owner, null, 'the commit dropped what the read kept');
  assert.deepEqual(reportedEarly, [], 'nothing is reported before the commit');
  assert.deepEqual(moved, [[{ id, owner: null, productId: 7 }]], 'reported once, with the committed scope');
});

test('a write whose transaction rolls back reports nothing', async () => {
  const id = 'c'.repeat(24);
  const repo = { setProduct: async () => [{ id, owner: null, productId: 9 }] } as unknown as DevicesRepository;
  const moved: DeviceScope[][] = [];
  const cache = cacheDevices(repo, localCaches(manualClock()), 30_000, { moved: (devices) => moved.push(devices) });
  const tx = { query: async () => [], exec: async () => undefined, afterCommit: () => undefined } as unknown as Tx;
  await cache.setProduct([id], 9, tx);
  assert.deepEqual(moved, []);
});

test("a read that raced another node's drop is not kept either (docs/architecture.md, \"Caches in a cluster\")", async () => {
  // Two nodes' hubs on a bus in memory that, like the real ones, gives each notice to every node.
  const listeners = new Set<(payload: unknown) => void>();
  const node = (nodeId: string) => createCacheHub({
    nodeId, state: () => 'up',
    notify: (_topic, payload) => { for (const l of listeners) l(payload); },
    listen: (_topic, l) => { listeners.add(l); return () => listeners.delete(l); },
  }, manualClock());
  const [hubA, hubB] = [node('a'), node('b')];
  const id = 'd'.repeat(24);
  // Node B's read (the second) is slow.
  const store = slowStore({ id, functions: [] as string[] } as unknown as DeviceRecord, 2);
  const onA = cacheDevices(store.repo, hubA);
  const onB = cacheDevices(store.repo, hubB);
  await onA.findById(id);
  const slow = onB.findById(id);
  await new Promise((r) => setImmediate(r));
  // The device said hello to node A meanwhile: stored, then reported there.
  store.stored = { ...store.stored, functions: ['led'] };
  onA.forget(id);
  await new Promise((r) => setImmediate(r));
  store.release();
  assert.deepEqual((await slow)?.functions, [], 'the racing read answers what it read');
  assert.deepEqual((await onB.findById(id))?.functions, ['led'], 'but node B did not keep it');
  assert.deepEqual((await onA.findById(id))?.functions, ['led']);
  hubA.close();
  hubB.close();
});
