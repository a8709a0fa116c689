import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ERRORS, type ErrorSpec } from '../../src/domain/errors.js';

/** docs/errors.md documents every code of the error catalogue (src/domain/errors.ts), and only those. */

const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');

/** The table rows, by code: `| \`code\` | status | \`error\` value | meaning | extras |`. */
function rows(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of doc.split('\n')) {
    const m = /^\| `([a-z_]+)` \|/.exec(line);
    if (!m) continue;
    const cells = line.split('|').slice(1, -1).map((c) => c.trim());
    out.set(m[1] as string, cells);
  }
  return out;
}

test('every error code is documented with its status and `error` value', () => {
  const table = rows();
  for (const [code, spec] of Object.entries(ERRORS) as Array<[string, ErrorSpec]>) {
    const cells = table.get(code);
    assert.ok(cells, `docs/errors.md has no row for ${code}`);
    assert.equal(cells.length, 5, `${code}: a row has five cells (code, status, error value, meaning, extras)`);
    assert.equal(cells[1], String(spec.status), `${code}: docs give status ${cells[1]}, the catalogue ${spec.status}`);
    assert.equal(cells[2], `\`${spec.wire ?? code}\``, `${code}: the \`error\` value`);
    assert.ok((cells[3] ?? '').length > 10, `${code}: says what it means`);
  }
});

test('docs/errors.md documents no code the catalogue lacks', () => {
  for (const code of rows().keys()) assert.ok(code in ERRORS, `docs/errors.md documents ${code}, which src/domain/errors.ts does not have`);
});

test('the extra fields and headers are documented', () => {
  const table = rows();
  const extras = (code: string) => table.get(code)?.[4] ?? '';
  assert.match(extras('mfa_required'), /mfa_token/);
  assert.match(extras('rate_limit_exceeded'), /Retry-After/);
  assert.match(extras('username_taken'), /errors\[\]/);
  for (const code of ['invalid_client', 'invalid_token', 'insufficient_scope']) assert.match(extras(code), /WWW-Authenticate/, code);
  for (const code of Object.keys(ERRORS).filter((c) => ERRORS[c as keyof typeof ERRORS].status >= 500)) assert.match(extras(code), /request_id/, code);
});

test('the introduction describes the body shape', () => {
  const intro = doc.slice(0, doc.indexOf('| code |'));
  for (const needle of ['ok', 'error', 'error_description', 'RFC 6749', 'request_id', 'Permission Denied']) assert.ok(intro.includes(needle), `the introduction mentions ${needle}`);
});
