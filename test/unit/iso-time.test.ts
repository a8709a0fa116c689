import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isoTime } from '../../src/platform/iso-time.js';

test('isoTime writes every time as Date.prototype.toISOString does', () => {
  const times = [0, 1, 9, 10, 99, 100, 999, 1000, -1, -999, -1000, -1001, 1796520000000, 1796520000001, 1796520000999, 253402300799999, 253402300800000, -62167219200000, -62167219200001, 8.64e15, -8.64e15];
  for (let i = 0; i < 20_000; i++) times.push(Math.floor((Math.random() - 0.3) * 4e12));
  // The same seconds again (from the cache), and more seconds than it keeps.
  for (let i = 0; i < 200; i++) times.push(1796520000000 + i * 1000 + (i % 7) * 113, 1796520000000 + i * 1000);
  for (const ms of times) {
    assert.equal(isoTime(ms), new Date(ms).toISOString(), String(ms));
    assert.equal(isoTime(new Date(ms)), new Date(ms).toISOString(), String(ms));
  }
  // A fraction of a millisecond is dropped, as by Date.
  assert.equal(isoTime(1796520000000.75), new Date(1796520000000.75).toISOString());
  assert.throws(() => isoTime(Number.NaN), RangeError);
  assert.throws(() => isoTime(new Date('nonsense')), RangeError);
  assert.throws(() => isoTime(8.64e15 + 1), RangeError);
});
