import { test } from 'node:test';
import assert from 'node:assert/strict';
import { coalesce } from '../../src/repositories/audit.repository.js';

test('identical audit events of one batch become one with a count; different ones stay apart', () => {
  const at = new Date('2026-01-01T00:00:00Z');
  const e = (type: string, ip: string) => ({ accountKind: 'user' as const, accountId: 'u', type, ip, details: { client_id: 'c' }, at });
  const out = coalesce([e('token.created', '1.1.1.1'), e('token.created', '1.1.1.1'), e('token.created', '2.2.2.2'), e('user.login', '1.1.1.1'), e('token.created', '1.1.1.1')]);
  assert.deepEqual(out.map((x) => [x.type, x.ip, x.details]), [
    ['token.created', '1.1.1.1', { client_id: 'c', count: 3 }],
    ['token.created', '2.2.2.2', { client_id: 'c' }],
    ['user.login', '1.1.1.1', { client_id: 'c' }],
  ]);
});
