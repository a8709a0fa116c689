import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createNatsBus } from '../../src/bus/nats.js';
import type { Bus } from '../../src/bus/bus.js';
import { startNats, type TestNats } from '../helpers/nats.js';
import { eventually } from '../helpers/eventually.js';

/**
 * The shared tables of a cluster on NATS key-value buckets (src/bus/nats.ts): compare-and-swap,
 * keys of any characters, and a bucket that takes a new lifetime when its setting changes.
 */
let nats: TestNats;
const log = () => ({ error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined });
const buses: Bus[] = [];
const bus = async () => {
  const b = await createNatsBus({ servers: nats.url, log });
  buses.push(b);
  return b;
};
before(async () => { nats = await startNats(); });
after(async () => {
  await Promise.all(buses.map((b) => b.close()));
  await nats.stop();
});

test('swap writes only over the revision it was given, for keys of any characters, seen by every node', async () => {
  const [a, b] = [await bus(), await bus()];
  const [ta, tb] = [await a.shared.table('cas', 60_000), await b.shared.table('cas', 60_000)];
  const key = 'user:someone@example.com|::1';
  assert.equal(await ta.swap(key, '1', null), true);
  assert.equal(await tb.swap(key, 'x', null), false, 'absent no more');
  const seen = await tb.get(key);
  assert.equal(seen?.value, '1');
  assert.equal(await ta.swap(key, '2', seen?.revision ?? 0), true);
  assert.equal(await tb.swap(key, '3', seen?.revision ?? 0), false, 'a stale revision loses');
  assert.deepEqual(await tb.keys(), [key]);
  await tb.delete(key);
  assert.equal(await ta.get(key), null);
  assert.equal(await ta.swap(key, 'again', null), true, 'absent again after a delete');
});

test('a bucket made with one lifetime takes a shorter one when the setting changes', async () => {
  const first = await bus();
  await (await first.shared.table('lease', 3_600_000)).put('node-1', 'x');
  const later = await bus();
  const table = await later.shared.table('lease', 1_000);
  await table.put('node-2', 'y');
  await eventually(async () => (await table.get('node-2')) === null || undefined, 5_000, 'the entry to expire after the new lifetime');
});
