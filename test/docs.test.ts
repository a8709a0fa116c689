import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ERRORS } from '../src/domain/errors.js';
import { configurationDoc } from '../src/config/settings-doc.js';

test('every error code of the catalogue is documented in docs/errors.md', () => {
  const doc = readFileSync('docs/errors.md', 'utf8');
  for (const [code, spec] of Object.entries(ERRORS)) {
    const row = doc.split('\n').find((l) => l.startsWith(`| \`${code}\` |`));
    assert.ok(row, `docs/errors.md has no row for ${code}`);
    assert.ok(row.includes(`| ${spec.status} |`), `docs/errors.md gives ${code} another status than ${spec.status}`);
  }
});

test('docs/configuration.md is what `npm run docs:config` generates', () => {
  assert.equal(readFileSync('docs/configuration.md', 'utf8'), configurationDoc(), 'run npm run docs:config');
});
