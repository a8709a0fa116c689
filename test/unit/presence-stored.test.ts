import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createPresenceService } from '../../src/services/presence.service.js';
import { manualClock } from '../../src/platform/clock.js';
import type { PresenceChange, PresenceRepository } from '../../src/repositories/presence.repository.js';

/** A presence store whose writes each wait for `release()`, and which keeps what was written. */
function heldStore() {
  const written: PresenceChange[] = [];
  const waiting: Array<() => void> = [];
  const repo = {
    async apply(changes: PresenceChange[]) {
      await new Promise<void>((r) => waiting.push(r));
      written.push(...changes);
    },
  } as unknown as PresenceRepository;
  return { repo, written, release: () => waiting.shift()?.(), pending: () => waiting.length };
}

const settledYet = async (p: Promise<void>): Promise<boolean> => {
  let done = false;
  void p.then(() => { done = true; });
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  return done;
};

test('stored(id) waits for the device\'s connect to be written, and only for its own', async () => {
  const store = heldStore();
  const presence = createPresenceService({ repo: store.repo, clock: manualClock(), log: () => console as never });
  assert.equal(await settledYet(presence.stored('a')), true, 'nothing handed in: nothing to wait for');

  presence.connected('a', '127.0.0.1');
  const a = presence.stored('a');
  assert.equal(await settledYet(a), false, 'the connect is not written yet');
  assert.equal(await settledYet(presence.stored('b')), true, 'another device waits for nothing');

  assert.equal(store.pending(), 1);
  store.release();
  assert.equal(await settledYet(a), true);
  assert.deepEqual(store.written.map((c) => [c.id, c.online]), [['a', true]]);

  // A connect handed in while an earlier write is under way goes in the next one: that is waited for.
  presence.disconnected('a');
  for (let i = 0; i < 5 && store.pending() === 0; i++) await new Promise((r) => setImmediate(r));
  presence.connected('a', '127.0.0.1');
  const again = presence.stored('a');
  store.release();
  assert.equal(await settledYet(again), false, 'the newest connect is in the later write');
  assert.equal(store.pending(), 1);
  store.release();
  assert.equal(await settledYet(again), true);
  assert.deepEqual(store.written.map((c) => [c.id, c.online]), [['a', true], ['a', false], ['a', true]]);
});
