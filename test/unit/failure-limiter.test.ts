import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FailureLimiter, type FailureLimiterOptions } from '../../src/domain/failure-limiter.js';
import { memoryTables, type SharedTable } from '../../src/bus/shared.js';
import { isDomainError } from '../../src/domain/errors.js';
import { manualClock } from '../../src/platform/clock.js';

/**
 * The failure limiter over a shared table (docs/security.md, "Lock-out in a cluster"): counts
 * by compare-and-swap, digests for keys, this node's own table while the shared one fails.
 * Two limiters over one table stand for two nodes.
 */
const OPTIONS: FailureLimiterOptions = { maxConsecutive: 10, lockoutSeconds: 60, maxPerWindow: 1000, windowSeconds: 300 };

async function refusal(p: Promise<void>): Promise<string | undefined> {
  return p.then(() => undefined, (err: unknown) => {
    if (isDomainError(err)) return err.code;
    throw err;
  });
}

/** A table that fails (NATS unreachable) while `down.on`, and counts the calls that reached it. */
function flaky(table: SharedTable, down: { on: boolean }, calls = { n: 0 }): SharedTable {
  const guard = <A extends unknown[], R>(f: (...args: A) => Promise<R>) => async (...args: A): Promise<R> => {
    calls.n += 1;
    if (down.on) throw new Error('no responders');
    return f(...args);
  };
  return { get: guard(table.get), swap: guard(table.swap), put: guard(table.put), delete: guard(table.delete), keys: guard(table.keys) };
}

test('failures on two nodes at the same moment all count (compare-and-swap, not last writer wins)', async () => {
  const clock = manualClock();
  const table = await memoryTables(clock).table('logins', FailureLimiter.ttlMs(OPTIONS));
  const nodes = [1, 2].map(() => new FailureLimiter(clock, OPTIONS, { shared: async () => table }));
  // Ten failures at once, five per node: each read-then-write interleaves with the others.
  await Promise.all(Array.from({ length: 10 }, (_, i) => (nodes[i % 2] as FailureLimiter).fail('user:a@example.com', '192.0.2.1')));
  for (const node of nodes) assert.equal(await refusal(node.check('user:a@example.com', '192.0.2.9')), 'rate_limit_exceeded');
  await (nodes[0] as FailureLimiter).check('user:b@example.com', '192.0.2.1');
});

test('the table holds digests, never usernames or addresses', async () => {
  const clock = manualClock();
  const table = await memoryTables(clock).table('logins', FailureLimiter.ttlMs(OPTIONS));
  const limiter = new FailureLimiter(clock, OPTIONS, { shared: async () => table });
  await limiter.fail('user:someone@example.com', '203.0.113.77');
  const keys = await table.keys();
  assert.equal(keys.length, 2);
  for (const key of keys) {
    assert.match(key, /^(key|source)-[0-9a-f]{64}$/);
    const value = (await table.get(key))?.value ?? '';
    assert.doesNotMatch(key + value, /someone|203\.0\.113/);
  }
});

test('while the shared table fails the node counts in its own, says so once, and goes back when it answers', async () => {
  const clock = manualClock();
  const shared = await memoryTables(clock).table('logins', FailureLimiter.ttlMs(OPTIONS));
  const local = await memoryTables(clock).table('logins', FailureLimiter.ttlMs(OPTIONS));
  const down = { on: false };
  const switches: boolean[] = [];
  const limiter = new FailureLimiter(clock, { ...OPTIONS, maxConsecutive: 3 }, {
    shared: async () => flaky(shared, down), local: async () => local, switched: (toLocal) => switches.push(toLocal),
  });
  await limiter.fail('user:a', '192.0.2.1');
  down.on = true;
  await limiter.fail('user:a', '192.0.2.1');
  await limiter.fail('user:a', '192.0.2.1');
  await limiter.check('user:a', '192.0.2.1'); // two in the shared table, two here: neither is at three
  await limiter.fail('user:a', '192.0.2.1');
  assert.equal(await refusal(limiter.check('user:a', '192.0.2.1')), 'rate_limit_exceeded', 'the node limits on its own meanwhile');
  assert.deepEqual(switches, [true]);
  down.on = false;
  await limiter.check('user:b', '192.0.2.1');
  assert.deepEqual(switches, [true, false]);
  await limiter.check('user:a', '192.0.2.1'); // the shared count (one) is what counts again
});

test('a shared table known to be unreachable is not waited for', async () => {
  const clock = manualClock();
  const shared = await memoryTables(clock).table('connects', FailureLimiter.ttlMs(OPTIONS));
  const local = await memoryTables(clock).table('connects', FailureLimiter.ttlMs(OPTIONS));
  const calls = { n: 0 };
  const limiter = new FailureLimiter(clock, OPTIONS, { shared: async () => flaky(shared, { on: false }, calls), local: async () => local, reachable: () => false });
  await limiter.check('device:x', '192.0.2.1');
  await limiter.fail('device:x', '192.0.2.1');
  await limiter.succeed('device:x');
  assert.equal(calls.n, 0);
  assert.equal((await local.keys()).length, 1, 'the address is still counted, here');
});

test('a count that loses every race is refused rather than left uncounted', async () => {
  const clock = manualClock();
  const table = await memoryTables(clock).table('logins', FailureLimiter.ttlMs(OPTIONS));
  const limiter = new FailureLimiter(clock, OPTIONS, { shared: async () => ({ ...table, swap: async () => false }) });
  assert.equal(await refusal(limiter.fail('user:a', '192.0.2.1')), 'rate_limit_exceeded');
});

test('a lock-out ends on time and the count starts again; the window of an address slides', async () => {
  const clock = manualClock();
  const table = await memoryTables(clock).table('logins', FailureLimiter.ttlMs(OPTIONS));
  const limiter = new FailureLimiter(clock, { ...OPTIONS, maxConsecutive: 2, maxPerWindow: 3 }, { shared: async () => table });
  await limiter.fail('user:a', '192.0.2.1');
  await limiter.fail('user:a', '192.0.2.2');
  assert.equal(await refusal(limiter.check('user:a', '192.0.2.3')), 'rate_limit_exceeded');
  clock.advance(60_000);
  await limiter.check('user:a', '192.0.2.3');
  await limiter.fail('user:a', '192.0.2.1');
  await limiter.check('user:a', '192.0.2.3');
  await limiter.fail('user:b', '192.0.2.1');
  assert.equal(await refusal(limiter.check('user:c', '192.0.2.1')), 'rate_limit_exceeded', 'the third failure of the address within the window');
  clock.advance(300_000);
  await limiter.check('user:c', '192.0.2.1');
});

test('a key and an address the tables say hold nothing pass without asking the table; one that may hold a count is asked', async () => {
  const clock = manualClock();
  const table = await memoryTables(clock).table('connects', FailureLimiter.ttlMs(OPTIONS));
  const calls = { n: 0 };
  const counted = new Set<string>();
  const limiter = new FailureLimiter(clock, { ...OPTIONS, maxConsecutive: 2 }, {
    shared: async () => flaky(table, { on: false }, calls),
    absent: (id) => !counted.has(id),
  });
  await limiter.check('device:a', '192.0.2.1');
  await limiter.succeed('device:a');
  assert.equal(calls.n, 0, 'nothing counted: the table is not asked');
  await limiter.fail('device:a', '192.0.2.1');
  await limiter.fail('device:a', '192.0.2.1');
  for (const id of await table.keys()) counted.add(id);
  assert.equal(await refusal(limiter.check('device:a', '192.0.2.9')), 'rate_limit_exceeded', 'a counted key is read from the table');
  assert.equal(await refusal(limiter.check('device:b', '192.0.2.1')), undefined, 'the address is under its budget, read from the table');
  calls.n = 0;
  await limiter.check('device:c', '192.0.2.2');
  assert.equal(calls.n, 0);
});

test('what the tables say is absent is not trusted while the shared table is unreachable: the node counts in its own', async () => {
  const clock = manualClock();
  const shared = await memoryTables(clock).table('connects', FailureLimiter.ttlMs(OPTIONS));
  const local = await memoryTables(clock).table('connects', FailureLimiter.ttlMs(OPTIONS));
  const reachable = { now: true };
  const limiter = new FailureLimiter(clock, { ...OPTIONS, maxConsecutive: 1 }, {
    shared: async () => shared, local: async () => local, reachable: () => reachable.now, absent: () => true,
  });
  reachable.now = false;
  await limiter.fail('device:a', '192.0.2.1');
  assert.equal(await refusal(limiter.check('device:a', '192.0.2.1')), 'rate_limit_exceeded');
  reachable.now = true;
  assert.equal(await refusal(limiter.check('device:a', '192.0.2.1')), undefined, 'the shared table, which holds nothing, counts again');
});
