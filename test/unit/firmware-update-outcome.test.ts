import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { UpdateRecord } from '../../src/domain/firmware-updates.js';
import { createInProcessBus } from '../../src/bus/in-process.js';
import { manualClock } from '../../src/platform/clock.js';
import { createFirmwareUpdates } from '../../src/services/firmware/updates/index.js';
import type { FirmwareUpdatesRepository } from '../../src/repositories/firmware-updates.repository.js';

/**
 * A device back from an update says the version it runs in its `hello`; the gateway stores that
 * in batches. The update's outcome must not be stored before it: whoever reads an update
 * succeeded (a rollout's progress, a test, a console) would read the device still on its old
 * version.
 */
test('an update counts succeeded only once the hello that says the new version is stored', async () => {
  const clock = manualClock();
  const id = 'e'.repeat(24);
  const applying: UpdateRecord = {
    deviceId: id, productId: 7, version: 2, state: 'applying', size: 10, bytesSent: 10, offset: 10, error: null, rolloutId: null,
    startedAt: clock.now(), finishedAt: null, updatedAt: clock.now(),
  };
  const written: UpdateRecord[] = [];
  let wrote: () => void = () => undefined;
  const outcomeStored = new Promise<void>((resolve) => { wrote = resolve; });
  const repo = {
    devices: async () => [{ id, productId: 7, firmwareVersion: 1, updatesEnabled: true, updatesForced: false, newest: applying }],
    write: async (list: UpdateRecord[]) => { written.push(...list); wrote(); },
    setUpdatesEnabled: async () => [],
    expireApplying: async () => [],
  } as unknown as FirmwareUpdatesRepository;
  let askedFor = '';
  let described: () => void = () => undefined;
  let asked: () => void = () => undefined;
  const waiting = new Promise<void>((resolve) => { asked = resolve; });
  const updates = createFirmwareUpdates({
    repo, bus: createInProcessBus(clock), clock, log: () => ({ warn: () => undefined }) as never,
    secrets: { token: () => 'x' }, emit: async () => undefined,
    source: { targetFor: async () => ({ productId: 7, version: 2, sha256: '', size: 10, signature: null }), image: async () => Buffer.alloc(0) },
    links: { holds: () => true, heldIn: () => [id], link: () => null },
    settings: { transfers: 1, timeoutSeconds: 60 },
    described: (deviceId) => {
      askedFor = deviceId;
      asked();
      return new Promise<void>((resolve) => { described = resolve; });
    },
  });
  try {
    updates.onHello(id, { firmwareVersion: 2 }, true);
    // The update waits for the device's hello to be stored: nothing is written while it waits.
    const first = await Promise.race([waiting.then(() => 'the hello awaited'), outcomeStored.then(() => 'the outcome stored')]);
    assert.equal(first, 'the hello awaited');
    assert.equal(askedFor, id);
    assert.equal(written.length, 0);
    described();
    await outcomeStored;
    await updates.settled(id);
    assert.deepEqual(written.map((r) => [r.deviceId, r.version, r.state]), [[id, 2, 'succeeded']]);
  } finally {
    await updates.close();
  }
});
