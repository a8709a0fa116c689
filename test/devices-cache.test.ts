import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cacheDevices } from '../src/repositories/devices.cache.js';
import { manualClock } from '../src/platform/clock.js';
import type { DeviceRecord, DevicesRepository } from '../src/repositories/devices.repository.js';

test('a read that raced a reported change is not kept: the next read goes to storage again', async () => {
  let stored = { id: 'a'.repeat(24), functions: [] as string[] } as unknown as DeviceRecord;
  let reads = 0;
  let release: () => void = () => undefined;
  const repo = {
    async findById() {
      reads += 1;
      const row = stored;
      if (reads === 1) await new Promise<void>((r) => { release = r; }); // the first read is slow
      return row;
    },
  } as unknown as DevicesRepository;
  const cache = cacheDevices(repo, manualClock());

  const slow = cache.findById(stored.id);
  await new Promise((r) => setImmediate(r));
  // The device said hello meanwhile: stored, then reported.
  stored = { ...stored, functions: ['led'] };
  cache.forget(stored.id);
  release();
  assert.deepEqual((await slow)?.functions, [], 'the racing read answers what it read');
  assert.deepEqual((await cache.findById(stored.id))?.functions, ['led'], 'but was not kept');
  assert.equal(reads, 2);
  await cache.findById(stored.id);
  assert.equal(reads, 2, 'a read with no change during it is kept');
});
