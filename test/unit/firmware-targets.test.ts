import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createInProcessBus } from '../../src/bus/in-process.js';
import { createCacheHub, localCaches } from '../../src/platform/cache-hub.js';
import { manualClock } from '../../src/platform/clock.js';
import type { ListedDevice } from '../../src/repositories/devices.repository.js';
import type { FirmwareRepository } from '../../src/repositories/firmware.repository.js';
import { createTargets } from '../../src/services/firmware/targets.js';

/**
 * The targets a node asks for one device at a time are read together, and device views of a
 * product without groups, releases or rollouts read nothing once that is known
 * (services/firmware/targets.ts).
 */

function fakeRepo() {
  const calls: string[][] = [];
  const repo = {
    async targetingFacts(ids: readonly string[]) {
      calls.push([...ids]);
      // Device "d<n>" is locked to version n; "x…" is outside any product.
      return new Map(ids.filter((id) => id.startsWith('d')).map((id) => [id, { productId: 7, development: false, desiredFirmwareVersion: Number(id.slice(1)), groupVersions: [], productDefault: null }]));
    },
    async imageMeta(wanted: ReadonlyArray<{ productId: number; version: number }>) {
      return wanted.map((w) => ({ ...w, size: 100 * w.version, sha256: `sha-${w.version}`, signature: null }));
    },
  };
  return { repo: repo as unknown as FirmwareRepository, calls };
}

test('the targets asked for in one turn are read in one go, each caller getting its own device\'s', async () => {
  const { repo, calls } = fakeRepo();
  const targets = createTargets({ repo, bus: createInProcessBus() });
  const ids = ['d1', 'd2', 'x9', 'd3', 'd2'];
  const got = await Promise.all(ids.map((id) => targets.targetFor(id)));
  assert.deepEqual(got.map((t) => t?.version ?? null), [1, 2, null, 3, 2]);
  assert.deepEqual(got[0], { productId: 7, version: 1, size: 100, sha256: 'sha-1', signature: null });
  assert.deepEqual(calls, [['d1', 'd2', 'x9', 'd3']], 'one read for the five calls, each device once');
  // A later call is read afresh: nothing is cached between turns.
  assert.equal((await targets.targetFor('d4'))?.version, 4);
  assert.deepEqual(calls.at(-1), ['d4']);
});

/** A store of two products: 7 has no groups, releases or rollouts; 8 has a default release (version 5) and a group. */
function viewRepo() {
  const asked: { bare: number[]; facts: string[][] } = { bare: [], facts: [] };
  const withFacts = new Set([8]);
  let answering: Promise<void> = Promise.resolve();
  const repo = {
    async withoutViewFacts(productId: number) {
      asked.bare.push(productId);
      await answering;
      return !withFacts.has(productId);
    },
    async viewFacts(deviceIds: readonly string[], productIds: readonly number[]) {
      asked.facts.push([...deviceIds]);
      return {
        groups: new Map(deviceIds.filter((id) => id.startsWith('g')).map((id) => [id, [{ name: 'field', version: null }]])),
        defaults: new Map(productIds.filter((p) => p === 8).map((p) => [p, 5])),
        rollouts: new Map<string, number>(),
      };
    },
  };
  return { repo: repo as unknown as FirmwareRepository, asked, withFacts, hold: (p: Promise<void>) => { answering = p; } };
}

const device = (id: string, productId: number | null, locked: number | null = null) => ({ id, productId, development: false, desiredFirmwareVersion: locked }) as ListedDevice;
const views = () => localCaches(manualClock()).cache<boolean>('firmware-views', 30_000);

test('device views of a product without groups, releases or rollouts read nothing once that is known; a locked device still shows its version', async () => {
  const { repo, asked } = viewRepo();
  const targets = createTargets({ repo, bus: createInProcessBus(), views: views() });
  const page = [device('a1', 7), device('a2', 7, 3), device('u1', null)];
  const first = await targets.describe(page);
  assert.deepEqual(Object.fromEntries(first), { a1: { groups: [], target: null }, a2: { groups: [], target: 3 } });
  assert.deepEqual(asked, { bare: [7], facts: [] });
  assert.deepEqual(await targets.describe(page), first);
  assert.deepEqual(asked, { bare: [7], facts: [] }, 'the second view asks the store nothing');
});

test('a product with firmware facts is read at every view, and a mixed page asks only for the devices of that product', async () => {
  const { repo, asked } = viewRepo();
  const targets = createTargets({ repo, bus: createInProcessBus(), views: views() });
  const page = [device('a1', 7), device('g1', 8), device('b1', 8)];
  for (let i = 0; i < 2; i += 1) {
    assert.deepEqual(Object.fromEntries(await targets.describe(page)), {
      a1: { groups: [], target: null }, g1: { groups: ['field'], target: 5 }, b1: { groups: [], target: 5 },
    });
  }
  assert.deepEqual(asked, { bare: [7, 8], facts: [['g1', 'b1'], ['g1', 'b1']] });
});

test('without a cache (TOKEN_CACHE_SECONDS=0) every view reads its facts, as before', async () => {
  const { repo, asked } = viewRepo();
  const targets = createTargets({ repo, bus: createInProcessBus() });
  await targets.describe([device('a1', 7)]);
  await targets.describe([device('a1', 7)]);
  assert.deepEqual(asked, { bare: [], facts: [['a1'], ['a1']] });
});

test('a release or a group made on one node makes the next view read again on every node', async () => {
  const { repo, asked, withFacts } = viewRepo();
  const clock = manualClock();
  const bus = createInProcessBus();
  const hubs = [createCacheHub({ ...bus, nodeId: 'a' }, clock), createCacheHub({ ...bus, nodeId: 'b' }, clock)];
  const [a, b] = hubs.map((hub) => createTargets({ repo, bus, views: hub.cache<boolean>('firmware-views', 30_000) }));
  const page = [device('g1', 7)];
  await b?.describe(page);
  assert.equal(asked.bare.length, 1);
  // Node a releases a version as the product default; its hub tells b at the next turn.
  withFacts.add(7);
  a?.notify({ productId: 7, deviceIds: null, immediate: false, cause: 'release' });
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(Object.fromEntries(await (b as NonNullable<typeof b>).describe(page)), { g1: { groups: ['field'], target: null } });
  assert.equal(asked.bare.length, 2);
  // A notice of another product changes nothing there.
  a?.notify({ productId: 9, deviceIds: null, immediate: false, cause: 'release' });
  await new Promise((resolve) => setImmediate(resolve));
  await b?.describe(page);
  assert.equal(asked.bare.length, 2);
  // A group made on node a.
  withFacts.delete(7);
  await b?.describe(page);
  a?.groupMade(7);
  await new Promise((resolve) => setImmediate(resolve));
  await b?.describe(page);
  assert.equal(asked.bare.length, 3);
  for (const hub of hubs) hub.close();
});

test('what was read across a change is not kept', async () => {
  const { repo, asked, hold } = viewRepo();
  const targets = createTargets({ repo, bus: createInProcessBus(), views: views() });
  let answer: () => void = () => undefined;
  hold(new Promise<void>((resolve) => { answer = resolve; }));
  const reading = targets.describe([device('a1', 7)]);
  // A group is made while the store's answer (read before it) is on its way.
  targets.groupMade(7);
  answer();
  await reading;
  hold(Promise.resolve());
  await targets.describe([device('a1', 7)]);
  assert.deepEqual(asked.bare, [7, 7], 'the answer that crossed the change was used once, not kept');
});
