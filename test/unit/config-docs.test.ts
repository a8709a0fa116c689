import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { configurationDoc } from '../../src/config/settings-doc.js';
import { SETTINGS } from '../../src/config/settings.js';

test('docs/configuration.md is what `npm run docs:config` generates', () => {
  const file = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
  assert.equal(file, configurationDoc(), 'docs/configuration.md is out of date: run npm run docs:config');
});

test('the generated page names every setting, its flag and its default', () => {
  const doc = configurationDoc();
  for (const s of SETTINGS) {
    const row = doc.split('\n').find((l) => l.startsWith(`| \`${s.env}\` |`));
    assert.ok(row, `no row for ${s.env}`);
    assert.ok(row.includes(`\`${s.flag}\``), `${s.env}: flag ${s.flag}`);
    // An empty default (CORS_ORIGINS) reads "(unset)", as an absent one does.
    assert.ok(row.includes(s.default ? `\`${s.default}\`` : '(unset)'), `${s.env}: default ${s.default}`);
  }
  assert.match(doc, /flag wins/);
  assert.match(doc, /PORT/);
});
