import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isConnectionFailure, isStoreUnavailable, storeUnavailable, translated } from '../../src/storage/unavailable.js';
import { DomainError } from '../../src/domain/errors.js';

// Which store failures answer 503 (the store cannot be reached now) and which stay what they are
// (a statement the server refused): docs/operations.md, "When the store goes away".

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

test('failures to reach the server are the store\'s unavailability', () => {
  for (const e of [
    withCode('ECONNREFUSED'), withCode('ECONNRESET'), withCode('ETIMEDOUT'), withCode('EPIPE'), withCode('ENOTFOUND'),
    withCode('57P01', 'terminating connection due to administrator command'), withCode('57P02'), withCode('57P03', 'the database system is starting up'),
    withCode('08006'), withCode('08001'), withCode('53300', 'sorry, too many clients already'), withCode('53100', 'could not extend file: No space left on device'),
    new Error('Connection terminated unexpectedly'), new Error('timeout exceeded when trying to connect'), new Error('Query read timeout'),
    new Error('Client has encountered a connection error and is not queryable'),
  ]) assert.equal(isConnectionFailure(e), true, `${(e as { code?: string }).code ?? ''} ${e.message}`);
});

test('statements the server refused are not', () => {
  for (const e of [
    withCode('23505', 'duplicate key value violates unique constraint'), withCode('42P01', 'relation does not exist'), withCode('XX000', 'internal error'),
    withCode('40001', 'could not serialize access'), withCode('57014', 'canceling statement due to user request'), withCode('25P02'),
    new Error('something else'), new DomainError('not_found', 'No such resource'), null, 'text',
  ]) assert.equal(isConnectionFailure(e), false, String((e as Error | null)?.message ?? e));
});

test('translated: a connection failure becomes 503 service_unavailable with Retry-After and its cause; anything else is thrown as it is', () => {
  const refused = withCode('ECONNREFUSED');
  assert.throws(() => translated(refused), (err: unknown) => {
    assert.ok(isStoreUnavailable(err));
    assert.equal(err.code, 'service_unavailable');
    assert.equal(err.status, 503);
    assert.equal(err.retryAfterSeconds, 5);
    assert.equal(err.cause, refused);
    return true;
  });
  const unique = withCode('23505');
  assert.throws(() => translated(unique), (err: unknown) => err === unique);
  assert.equal(isStoreUnavailable(new DomainError('service_unavailable', 'The cluster bus (NATS) is unreachable; retry shortly')), false, "NATS's is not the store's");
  assert.equal(isStoreUnavailable(storeUnavailable(refused)), true);
});
