import { test } from 'node:test';
import assert from 'node:assert/strict';
import { memoryTables } from '../../src/bus/shared.js';
import { systemClock } from '../../src/platform/clock.js';
import { startLeader } from '../../src/cluster/leader.js';
import { holdLease } from '../../src/cluster/lease.js';
import { eventually } from '../helpers/eventually.js';

/**
 * The leader and the lease of cluster/ (docs/architecture.md, "Once per cluster", "Presence and
 * node leases") on the memory tables, which have the same compare-and-swap and lifetimes as the
 * NATS ones. Lifetimes of 300 ms: renewals every 100 ms.
 */
const TTL = 300;
const quiet = () => ({ error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined });

test('of several candidates one leads, and another once it closes; the work runs on the leader only', async () => {
  const table = await memoryTables(systemClock).table('leader', TTL);
  const ran = new Map<string, number>();
  const candidates = ['a', 'b', 'c'].map((nodeId) => startLeader({
    table, nodeId, ttlMs: TTL, log: quiet, led: async () => { ran.set(nodeId, (ran.get(nodeId) ?? 0) + 1); },
  }));
  try {
    await eventually(() => ([...ran.values()].reduce((x, y) => x + y, 0) >= 5 ? true : undefined), 3000, 'leader work');
    assert.deepEqual(candidates.map((c) => c.leads()), [true, false, false]);
    assert.deepEqual([...ran.keys()], ['a']);
    await candidates[0]?.close();
    assert.equal(candidates[0]?.leads(), false);
    await eventually(() => (candidates.some((c) => c.leads()) ? true : undefined), 3000, 'a new leader');
    assert.equal(candidates.filter((c) => c.leads()).length, 1);
    assert.equal((await table.get('leader'))?.value, candidates[1]?.leads() ? 'b' : 'c');
  } finally {
    await Promise.all(candidates.map((c) => c.close()));
  }
});

test('a leader whose table stops answering steps down at once, before its entry could expire', async () => {
  const table = await memoryTables(systemClock).table('leader', TTL);
  let broken = false;
  const flaky = { ...table, get: async (key: string) => { if (broken) throw new Error('unreachable'); return table.get(key); } };
  const leader = startLeader({ table: flaky, nodeId: 'a', ttlMs: TTL, log: quiet });
  try {
    await eventually(() => (leader.leads() ? true : undefined), 2000, 'leading');
    broken = true;
    const since = Date.now();
    await eventually(() => (leader.leads() ? undefined : true), 2000, 'stepping down');
    assert.ok(Date.now() - since < TTL, 'it stopped before another node could be elected');
  } finally {
    await leader.close();
  }
});

test('a lease found lapsed says the devices again, once', async () => {
  const table = await memoryTables(systemClock).table('nodes', TTL);
  let lapses = 0;
  const lease = holdLease({ table, nodeId: 'n1', ttlMs: TTL, log: quiet, lapsed: async () => { lapses++; } });
  try {
    await lease.first;
    // The first write finds nothing either: the devices held (none yet, at start) are said.
    assert.equal(lapses, 1);
    assert.ok(await table.get('n1'));
    await table.delete('n1');
    await eventually(() => (lapses === 2 ? true : undefined), 2000, 'the devices said again after the lapse');
    assert.ok(await table.get('n1'));
  } finally {
    await lease.close();
  }
  assert.equal(await table.get('n1'), null, 'a node that leaves in order removes its lease');
});

test('saying the devices again is retried at each renewal until it succeeds', async () => {
  const table = await memoryTables(systemClock).table('nodes', TTL);
  let tries = 0;
  const lease = holdLease({ table, nodeId: 'n1', ttlMs: TTL, log: quiet, lapsed: async () => { if (++tries < 3) throw new Error('store unreachable'); } });
  try {
    await eventually(() => (tries === 3 ? true : undefined), 2000, 'three tries');
    await table.put('n1', 'kept');
    // Once it succeeded, a lease that is there calls nothing more: the sentinel is the next renewal.
    await eventually(async () => ((await table.get('n1'))?.value !== 'kept' ? true : undefined), 2000, 'a renewal');
    assert.equal(tries, 3);
  } finally {
    await lease.close();
  }
});
