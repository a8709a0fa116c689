import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { apiTypes, API_TYPES_FILE } from '../../scripts/api-types.js';

// Generated once for both tests: it builds the HTTP app.
const generated = apiTypes();

test('console/src/lib/api-schema.d.ts is what `npm run docs:api-types` generates from the routes', async () => {
  const committed = readFileSync(API_TYPES_FILE, 'utf8');
  const fresh = await generated;
  if (committed === fresh) return;
  // The first line that differs says which route changed, without printing two whole files.
  const a = committed.split('\n');
  const b = fresh.split('\n');
  const at = a.findIndex((line, i) => line !== b[i]);
  const line = at < 0 ? Math.min(a.length, b.length) : at;
  assert.fail(`console/src/lib/api-schema.d.ts is out of date: run npm run docs:api-types (line ${line + 1} is ${JSON.stringify(a[line] ?? '')}, the routes now give ${JSON.stringify(b[line] ?? '')})`);
});

test('the generated types describe the API the console calls', async () => {
  const types = await generated;
  for (const path of ['/oauth/token', '/v1/user/products', '/v1/products/{productIdOrSlug}/devices/{deviceId}', '/v1/products/{productIdOrSlug}/config/history']) {
    assert.ok(types.includes(`    "${path}": {`), `the types have ${path}`);
  }
  assert.ok(!types.includes('"/v1/openapi.json"'), 'the document does not list itself');
});
