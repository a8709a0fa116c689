// Writes the authorization matrix into docs/security.md, between its markers, from
// test/authorization-matrix.table.ts (npm run docs:matrix).
import { readFileSync, writeFileSync } from 'node:fs';
import { withMatrix } from '../test/authorization-matrix.table.js';

const file = new URL('../docs/security.md', import.meta.url);
const before = readFileSync(file, 'utf8');
const after = withMatrix(before);
if (after === before) {
  console.log('docs/security.md: the matrix is up to date');
} else {
  writeFileSync(file, after);
  console.log('wrote the authorization matrix into docs/security.md');
}
