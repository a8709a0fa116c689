import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  assignWaves, decide, emptyProgress, errorThresholdReached, exclusionOf, parseRolloutSpec, parseWave, type Progress,
} from '../../src/domain/firmware-rollouts.js';
import { targetOf } from '../../src/domain/firmware.js';
import { DomainError } from '../../src/domain/errors.js';

/** The pure rules of staged rollouts (src/domain/firmware-rollouts.ts). */

const devices = (n: number, groups: Record<number, string[]> = {}) => Array.from({ length: n }, (_, i) => ({ id: `d${i}`, groups: groups[i] ?? [] }));
const waveOf = (r: ReturnType<typeof assignWaves>) => r.members.map((m) => m.wave);

test('waves take, in order, a share of all the devices (rounded up), a count, a group; what they leave is a last wave', () => {
  assert.deepEqual(waveOf(assignWaves(devices(10), [{ percent: 15 }, { count: 3 }])), [0, 0, 1, 1, 1, 2, 2, 2, 2, 2]);
  const grouped = assignWaves(devices(5, { 1: ['beta'], 3: ['beta'], 4: ['x'] }), [{ group: 'beta' }, { percent: 100 }]);
  assert.deepEqual(grouped.members.map((m) => [m.id, m.wave]), [['d1', 0], ['d3', 0], ['d0', 1], ['d2', 1], ['d4', 1]]);
  assert.equal(grouped.waves.length, 2, 'nothing left: no last wave');
  assert.deepEqual(assignWaves(devices(3), [{ count: 1 }]).waves, [{ count: 1 }, { rest: true }]);
  assert.deepEqual(assignWaves(devices(0), [{ percent: 50 }]).members, []);
  // Positions are the start order, across waves.
  assert.deepEqual(assignWaves(devices(3), [{ count: 2 }]).members.map((m) => m.position), [0, 1, 2]);
});

test('a rollout binds a started device above groups and the default, below a lock and development', () => {
  const f = { development: false, desiredFirmwareVersion: null, groupVersions: [5], productDefault: 3, rolloutVersion: 4 };
  assert.deepEqual(targetOf(f), { version: 4, source: 'rollout' });
  assert.deepEqual(targetOf({ ...f, desiredFirmwareVersion: 1 }), { version: 1, source: 'lock' });
  assert.equal(targetOf({ ...f, development: true }), null);
  assert.equal(exclusionOf({ ...f, rolloutVersion: null, development: true }, 3), 'development');
  assert.equal(exclusionOf({ ...f, rolloutVersion: null, desiredFirmwareVersion: 3 }, 3), 'locked');
  assert.equal(exclusionOf({ ...f, rolloutVersion: null }, 3), 'other_release', 'its group release would win over the default');
  assert.equal(exclusionOf({ ...f, rolloutVersion: null, groupVersions: [] }, 3), null);
});

const p = (x: Partial<Progress>): Progress => ({ ...emptyProgress(), ...x });
const rollout = { currentWave: 0, successPercent: 50, advance: 'auto' as const, errorThreshold: null };
const none = { failed: 0, finished: 0 };

test('a tick: the error threshold first; then the next wave once the current one meets the success threshold; completed after the last', () => {
  assert.deepEqual(decide(rollout, [p({ pending: 2 }), p({ not_started: 2 })], none), { kind: 'run', wave: 0, started: [] });
  assert.deepEqual(decide(rollout, [p({ succeeded: 1, failed: 1 }), p({ not_started: 2 })], none), { kind: 'run', wave: 1, started: [1] });
  assert.deepEqual(decide(rollout, [p({ succeeded: 1, excluded: 5, pending: 1 }), p({ not_started: 2 })], none), { kind: 'run', wave: 1, started: [1] }, 'excluded devices do not count');
  assert.deepEqual(decide({ ...rollout, advance: 'manual' }, [p({ succeeded: 2 }), p({ not_started: 2 })], none), { kind: 'run', wave: 0, started: [] });
  assert.deepEqual(decide(rollout, [p({ succeeded: 2 }), p({}), p({ excluded: 3 }), p({ not_started: 1 })], none), { kind: 'run', wave: 3, started: [1, 2, 3] }, 'empty waves are passed at once');
  assert.deepEqual(decide({ ...rollout, currentWave: 1 }, [p({ succeeded: 2 }), p({ succeeded: 1, pending: 1 })], none), { kind: 'complete' });
  const paused = decide({ ...rollout, errorThreshold: { count: 2, percent: null, minFinished: 1 } }, [p({ succeeded: 5, failed: 2 })], { failed: 2, finished: 7 });
  assert.equal(paused.kind, 'pause');
});

test('the error threshold: a count or a share of the finished updates, once enough have finished', () => {
  const t = { count: null, percent: 20, minFinished: 10 };
  assert.equal(errorThresholdReached(t, { failed: 5, finished: 9 }), null, 'too few finished');
  assert.equal(errorThresholdReached(t, { failed: 1, finished: 10 }), null, '10 % < 20 %');
  assert.equal(errorThresholdReached(t, { failed: 2, finished: 10 }), '2 of 10 finished updates failed: the error threshold is 20 %');
  assert.equal(errorThresholdReached({ count: 3, percent: null, minFinished: 1 }, { failed: 3, finished: 100 }), '3 of 100 finished updates failed: the error threshold is 3 failures');
  assert.equal(errorThresholdReached(null, { failed: 100, finished: 100 }), null);
});

test('what a rollout request may say, and the CLI\'s short forms of a wave', () => {
  assert.deepEqual(parseWave('10%', 'w'), { percent: 10 });
  assert.deepEqual(parseWave('25', 'w'), { count: 25 });
  assert.deepEqual(parseWave('group:beta', 'w'), { group: 'beta' });
  const spec = parseRolloutSpec({ waves: [{ percent: '5' }, '50%'], rate_per_minute: '10', error_threshold: { percent: 10, min_finished: 20 } }, 3, null);
  assert.deepEqual(spec, {
    version: 3, groups: null, waves: [{ percent: 5 }, { percent: 50 }], ratePerMinute: 10, successPercent: 100, advance: 'auto',
    errorThreshold: { count: null, percent: 10, minFinished: 20 },
  });
  for (const body of [{ waves: [{ percent: 101 }] }, { waves: [{ count: 0 }] }, { waves: [{ group: 'Beta' }] }, { waves: [{ percent: 5, count: 2 }] },
    { success_threshold: -1 }, { error_threshold: { count: 1, extra: 1 } }, { waves: Array(21).fill('1') }]) {
    assert.throws(() => parseRolloutSpec(body, 1, null), (e: unknown) => e instanceof DomainError && e.code === 'invalid_request', JSON.stringify(body));
  }
});
