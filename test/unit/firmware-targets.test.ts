import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Bus } from '../../src/bus/bus.js';
import type { FirmwareRepository } from '../../src/repositories/firmware.repository.js';
import { createTargets } from '../../src/services/firmware/targets.js';

/** The targets a node asks for one device at a time are read together (services/firmware/targets.ts). */

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
  const targets = createTargets({ repo, bus: {} as Bus });
  const ids = ['d1', 'd2', 'x9', 'd3', 'd2'];
  const got = await Promise.all(ids.map((id) => targets.targetFor(id)));
  assert.deepEqual(got.map((t) => t?.version ?? null), [1, 2, null, 3, 2]);
  assert.deepEqual(got[0], { productId: 7, version: 1, size: 100, sha256: 'sha-1', signature: null });
  assert.deepEqual(calls, [['d1', 'd2', 'x9', 'd3']], 'one read for the five calls, each device once');
  // A later call is read afresh: nothing is cached between turns.
  assert.equal((await targets.targetFor('d4'))?.version, 4);
  assert.deepEqual(calls.at(-1), ['d4']);
});
