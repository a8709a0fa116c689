import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createInProcessBus } from '../../src/bus/in-process.js';
import type { SharedTable } from '../../src/bus/shared.js';
import { isDomainError } from '../../src/domain/errors.js';
import { manualClock } from '../../src/platform/clock.js';
import { createFailureLimiter } from '../../src/services/failure-limits.js';

/**
 * The limiter as the app makes it (services/failure-limits.ts): which ids of the shared table
 * hold a count is known on every node, so that a login or a device connect with nothing counted
 * asks the table nothing, once its keys have been listed; what it takes as absent without asking
 * (FailureTables.absent) must never hide a count made on another node.
 */
const SETTINGS = { loginMaxFailures: 2, loginLockoutSeconds: 60, ipMaxFailures: 100, ipFailureWindowSeconds: 300 };
const silent = () => ({ warn: () => undefined, info: () => undefined }) as never;

function counting(table: SharedTable, calls: string[]): SharedTable {
  return {
    get: (k) => { calls.push('get'); return table.get(k); },
    swap: (k, v, r) => { calls.push('swap'); return table.swap(k, v, r); },
    put: (k, v) => { calls.push('put'); return table.put(k, v); },
    delete: (k) => { calls.push('delete'); return table.delete(k); },
    keys: () => { calls.push('keys'); return table.keys(); },
  };
}

test('once the table is listed, an id with nothing counted is answered from memory, and an id another node counted failures on is never taken as absent', async () => {
  const clock = manualClock();
  const bus = createInProcessBus(clock);
  const calls: string[] = [];
  const real = bus.shared.table.bind(bus.shared);
  bus.shared.table = async (name, ttl) => counting(await real(name, ttl), calls);
  const [one, two] = [1, 2].map(() => createFailureLimiter('connects', { bus, clock, settings: SETTINGS, log: silent }));
  await one!.check('device:a@192.0.2.1', '192.0.2.1');
  await new Promise((resolve) => setImmediate(resolve));
  assert.ok(calls.includes('keys'), 'the first use lists the table');
  calls.length = 0;
  await one!.check('device:b@192.0.2.1', '192.0.2.1');
  await one!.succeed('device:b@192.0.2.1');
  assert.equal(calls.join(), '', 'nothing counted: the table is not asked');
  // Two failures counted by the other node: this one hears of them and asks the table.
  await two!.check('device:c@192.0.2.2', '192.0.2.2');
  await new Promise((resolve) => setImmediate(resolve));
  await two!.fail('device:c@192.0.2.2', '192.0.2.2');
  await two!.fail('device:c@192.0.2.2', '192.0.2.2');
  calls.length = 0;
  const refused = await one!.check('device:c@192.0.2.2', '192.0.2.2').then(() => undefined, (err: unknown) => (isDomainError(err) ? err.code : err));
  assert.equal(refused, 'rate_limit_exceeded');
  assert.ok(calls.includes('get'));
});
