#!/usr/bin/env node
// Runs the test suite with node's test runner, once per store: always on the embedded store,
// and again on PostgreSQL when TEST_DATABASE_URL is set (CI sets it). Usage:
//   node scripts/run-tests.mjs [--embedded-only] [file-or-folder-filter...]
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const args = process.argv.slice(2);
const embeddedOnly = args.includes('--embedded-only');
const filters = args.filter((a) => !a.startsWith('--'));

function find(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? find(path) : path.endsWith('.test.ts') ? [path] : [];
  });
}

const files = find('test').filter((f) => filters.length === 0 || filters.some((x) => f.includes(x))).sort();
if (files.length === 0) {
  console.error('no test files match');
  process.exit(1);
}

const stores = [{ name: 'embedded', env: { TEST_STORE: 'embedded' } }];
if (process.env.TEST_DATABASE_URL && !embeddedOnly) stores.push({ name: 'postgres', env: { TEST_STORE: 'postgres' } });

let failed = false;
for (const store of stores) {
  console.log(`\n# store: ${store.name} (${files.length} files)`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=2', ...files], {
    stdio: 'inherit',
    env: { ...process.env, ...store.env },
  });
  if (r.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
