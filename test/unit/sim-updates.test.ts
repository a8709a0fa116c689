import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseUpdateFailures } from '../../src/sim/updates.js';

test('--fail-updates: shares of refuse, check, vanish and revert, each from 0 to 1, together at most 1', () => {
  assert.deepEqual(parseUpdateFailures('refuse=0.1,check=0.05, vanish=0.05'), { refuse: 0.1, check: 0.05, vanish: 0.05, revert: 0 });
  assert.deepEqual(parseUpdateFailures('revert=1'), { refuse: 0, check: 0, vanish: 0, revert: 1 });
  assert.throws(() => parseUpdateFailures('crash=0.1'), /"crash" is not one of refuse, check, vanish, revert/);
  assert.throws(() => parseUpdateFailures('refuse=1.5'), /refuse takes a share from 0 to 1/);
  assert.throws(() => parseUpdateFailures('refuse='), /refuse takes a share/);
  assert.throws(() => parseUpdateFailures('refuse'), /refuse takes a share/);
  assert.throws(() => parseUpdateFailures('refuse=0.6,vanish=0.6'), /add up to more than 1/);
});
