import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { randomText, sha256 } from '../../src/platform/secrets.js';

test('random text: the asked number of bytes, in the asked encoding, never repeated across pool refills', () => {
  const seen = new Set<string>();
  // 20-byte tokens: 10,000 of them draw the 4 KiB pool empty about fifty times.
  for (let i = 0; i < 10_000; i++) {
    const t = randomText(20);
    assert.match(t, /^[0-9a-f]{40}$/);
    seen.add(t);
  }
  assert.equal(seen.size, 10_000);
  assert.match(randomText(6, 'base64url'), /^[\w-]{8}$/);
  assert.match(randomText(300), /^[0-9a-f]{600}$/, 'more than the pool hands out is drawn directly');
  // Not a run of zeros: the pool hands out bytes it has filled, not ones it has cleared.
  const zeros = Array.from({ length: 2000 }, () => randomText(32)).filter((t) => /^0+$/.test(t));
  assert.equal(zeros.length, 0);
});

test('sha256 is the hex SHA-256 of the UTF-8 text', () => {
  for (const value of ['', 'abc', 'bc08fd0938cca463e8a5e4472a2356afe74231e8', 'ünïcödé ✓']) {
    assert.equal(sha256(value), createHash('sha256').update(value, 'utf8').digest('hex'));
  }
});
