import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createWebhookIndex } from '../../src/services/webhooks/matching.js';
import { parseWebhook } from '../../src/services/webhooks/spec.js';
import type { WebhookRecord, WebhookScope } from '../../src/repositories/webhooks.repository.js';
import type { CloudEvent } from '../../src/bus/bus.js';

const at = new Date('2026-01-01T00:00:00Z');
const user: WebhookScope = { kind: 'user', owner: { kind: 'user', id: 'u1' } };
const product: WebhookScope = { kind: 'product', productId: 7 };

function hook(id: string, scope: WebhookScope, event: string): WebhookRecord {
  return {
    id, scope, spec: parseWebhook({ event, url: 'https://example.com/hook' }, scope.kind), secret: 'whsec_x', previousSecret: null,
    previousSecretUntil: null, disabledReason: null, failingSince: null, createdAt: at, updatedAt: at,
  };
}

const event = (name: string, owner: boolean, productId: number | null): CloudEvent => ({
  name, data: null, ttl: 60, published_at: at.toISOString(), coreid: 'aaaaaaaaaaaaaaaaaaaaaaaa', private: true,
  owner: owner ? { kind: 'user', id: 'u1' } : null, productId,
});

test('one webhook put or removed changes only its own entry; a scope keeps the store\'s order (by id)', () => {
  const index = createWebhookIndex();
  index.replace([hook('b', user, 'temp'), hook('d', user, 'temp'), hook('p', product, 'temp')]);
  const ids = (e: CloudEvent) => index.match(e).map((w) => w.id);
  assert.deepEqual(ids(event('temp', true, 7)), ['b', 'd', 'p']);

  index.put(hook('c', user, 'temp'));
  index.put(hook('a', user, 'temp'));
  assert.deepEqual(ids(event('temp', true, null)), ['a', 'b', 'c', 'd']);

  // A changed webhook replaces its former self, also when its event changed.
  index.put(hook('c', user, 'humidity'));
  assert.deepEqual(ids(event('temp', true, null)), ['a', 'b', 'd']);
  assert.deepEqual(ids(event('humidity', true, null)), ['c']);
  assert.equal(index.size, 5);

  index.remove('p');
  index.remove('p');
  index.remove('unknown');
  assert.deepEqual(ids(event('temp', false, 7)), []);
  assert.equal(index.get('p'), undefined);
  assert.equal(index.size, 4);

  for (const id of ['a', 'b', 'c', 'd']) index.remove(id);
  assert.equal(index.size, 0);
  assert.deepEqual(ids(event('temp', true, 7)), []);
});
