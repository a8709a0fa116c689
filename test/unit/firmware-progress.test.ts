import { test } from 'node:test';
import assert from 'node:assert/strict';
import { progressByVersion } from '../../src/domain/firmware-updates.js';

test('progressByVersion: one record a version, every state present, newest version first', () => {
  const zero = { pending: 0, downloading: 0, applying: 0, succeeded: 0, failed: 0 };
  assert.deepEqual(progressByVersion([]), []);
  assert.deepEqual(progressByVersion([
    { version: 2, state: 'succeeded', count: 5 },
    { version: 3, state: 'downloading', count: 2 },
    { version: 2, state: 'failed', count: 1 },
    { version: 3, state: 'pending', count: 4 },
  ]), [
    { version: 3, total: 6, states: { ...zero, downloading: 2, pending: 4 } },
    { version: 2, total: 6, states: { ...zero, succeeded: 5, failed: 1 } },
  ]);
});
