import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHosts } from '../../src/services/webhooks/hosts.js';

const options = { concurrency: 2, windowMs: 30_000, minErrors: 5, sleepMs: 10_000 };

function run(hosts: ReturnType<typeof createHosts>, name: string, ok: boolean, at: number): boolean {
  hosts.start(name);
  return hosts.finish(name, ok, at);
}

test('a host sleeps once its errors in the window reach the minimum and outnumber its successes', () => {
  const hosts = createHosts(options);
  const t = 1_000_000;
  for (let i = 0; i < 4; i++) assert.equal(run(hosts, 'a', true, t + i), false);
  for (let i = 0; i < 4; i++) assert.equal(run(hosts, 'a', false, t + 10 + i), false, 'four errors: under the minimum');
  assert.equal(run(hosts, 'a', false, t + 20), true, 'five errors against four successes');
  assert.equal(hosts.sleepingUntil('a', t + 21), t + 20 + options.sleepMs);
  assert.equal(hosts.sleepingUntil('a', t + 20 + options.sleepMs), 0, 'awake after sleepMs');
  assert.equal(hosts.sleepingUntil('b', t), 0, 'another host is not touched');
});

test('successes older than the window no longer count; errors count afresh after a sleep', () => {
  const hosts = createHosts(options);
  const t = 2_000_000;
  for (let i = 0; i < 100; i++) run(hosts, 'a', true, t + i * 10);
  for (let i = 0; i < 10; i++) assert.equal(run(hosts, 'a', false, t + 5000 + i), false, '100 successes in the window outweigh 10 errors');
  const later = t + 5000 + options.windowMs + 1000;
  for (let i = 0; i < 4; i++) assert.equal(run(hosts, 'a', false, later + i), false);
  assert.equal(run(hosts, 'a', false, later + 4), true, 'the old successes and errors left the window');
  const woke = later + 4 + options.sleepMs;
  for (let i = 0; i < 4; i++) assert.equal(run(hosts, 'a', false, woke + i), false, 'the count starts again after a sleep');
  assert.equal(run(hosts, 'a', false, woke + 4), true);
});

test('a host takes `concurrency` deliveries at once; a finished one frees its slot', () => {
  const hosts = createHosts(options);
  hosts.start('a');
  hosts.start('a');
  assert.equal(hosts.hasRoom('a'), false);
  assert.equal(hosts.hasRoom('b'), true);
  hosts.finish('a', true, 0);
  assert.equal(hosts.hasRoom('a'), true);
});

test('a host that slept is probed once awake, until it answers 2xx; one that never slept is not', () => {
  const hosts = createHosts(options);
  const t = 3_000_000;
  run(hosts, 'ok', true, t);
  for (let i = 0; i < 5; i++) run(hosts, 'a', false, t + i);
  assert.deepEqual([...hosts.probing(t + 10)], [], 'asleep: not probed yet');
  const woke = t + 4 + options.sleepMs;
  assert.deepEqual([...hosts.probing(woke)], ['a']);
  assert.equal(hosts.isProbing('a'), true);
  assert.equal(run(hosts, 'a', false, woke + 1), false, 'one error does not end the probing, nor put it to sleep');
  assert.deepEqual([...hosts.probing(woke + 2)], ['a'], 'still probed: an error is no proof');
  run(hosts, 'a', true, woke + 3);
  assert.deepEqual([...hosts.probing(woke + 4)], []);
  assert.equal(hosts.isProbing('a'), false);
  assert.equal(hosts.isProbing('ok'), false);
});
