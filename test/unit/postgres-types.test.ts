import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseTimestamptz } from '../../src/storage/pg-types.js';

test('timestamptz: the ISO fast path and the general parser read every form PostgreSQL writes', () => {
  const cases: Array<[string, string]> = [
    // A UTC session: the fast path.
    ['2026-11-23 20:45:36.379256+00', '2026-11-23T20:45:36.379Z'],
    ['2026-11-23 20:45:36.3+00', '2026-11-23T20:45:36.300Z'],
    ['2026-11-23 20:45:36+00', '2026-11-23T20:45:36.000Z'],
    ['1999-12-31 23:59:59.999999+00', '1999-12-31T23:59:59.999Z'],
    // Other sessions' time zones: the general parser.
    ['2026-11-23 21:45:36.5+01', '2026-11-23T20:45:36.500Z'],
    ['2026-11-23 20:15:36+05:30', '2026-11-23T14:45:36.000Z'],
    ['2026-11-23 15:45:36-05', '2026-11-23T20:45:36.000Z'],
  ];
  for (const [text, iso] of cases) {
    const got = parseTimestamptz(text);
    assert.ok(got instanceof Date, text);
    assert.equal(got.toISOString(), iso, text);
  }
  const bc = parseTimestamptz('0044-03-15 12:00:00+00 BC');
  assert.ok(bc instanceof Date);
  assert.equal(bc.getUTCFullYear(), -43, 'year 44 BC is year -43');
});
