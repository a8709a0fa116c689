import type { UpdateRecord, UpdateState } from '../../../domain/firmware-updates.js';
import type { Clock } from '../../../platform/clock.js';
import type { Log } from '../../../platform/log.js';
import type { FirmwareUpdatesRepository } from '../../../repositories/firmware-updates.repository.js';
import { createBatcher } from '../../../storage/batcher.js';
import { createDeviceTurns } from '../../config/turns.js';
import type { FirmwareTarget } from './source.js';

/** Devices whose newest record is kept here while reads of the store may not see it yet. */
const MAX_HANDED_IN = 10_000;

/** Publishes an event from a device to its owner's and product's streams and webhooks. */
export type EmitEvent = (deviceId: string, name: string, data: string) => Promise<void>;

/** Events as Particle sends them (docs/device-protocol.md, "Firmware updates"); note the trailing spaces. */
export const EVENTS = {
  flash: 'spark/flash/status',
  status: 'spark/status',
  pending: 'particle/device/updates/pending',
  enabled: 'particle/device/updates/enabled',
} as const;

export interface UpdateMetrics {
  /** An update ended: succeeded or failed. */
  outcome(outcome: 'succeeded' | 'failed'): void;
}

/**
 * The state changes of devices' updates, each in one place: the row stored (in batches, at state
 * changes only, never per chunk), then the events and the metrics it makes.
 */
export function createUpdateRecords(deps: { repo: FirmwareUpdatesRepository; clock: Clock; log: () => Log; emit: EmitEvent; metrics?: UpdateMetrics; batchWindowMs?: number }) {
  /** Writes handed in and not yet stored (settle waits for them at shutdown). */
  const outstanding = new Set<Promise<void>>();
  const writes = createBatcher<UpdateRecord>((list) => deps.repo.write(list), { maxBatch: 1000, inFlight: 1, waitMs: deps.batchWindowMs ?? 0 });
  // Each device's events are published in the order they were made (auto-update before started,
  // started before success): publishing looks the device up first, and two lookups may finish in
  // either order, so a device's next event waits its turn behind its last.
  const publishing = createDeviceTurns();
  const emit = (deviceId: string, name: string, data: string) => {
    publishing.run(deviceId, () => deps.emit(deviceId, name, data))
      .catch((err) => deps.log().warn({ err, device: deviceId, event: name }, 'firmware update event not published'));
  };

  /**
   * The newest record this node handed in per device whose transfer it ran, until an ending of it
   * is stored: a read of the store issued meanwhile may not see the write yet (a transfer that
   * just ended looks still under way, and would be resumed). Bounded: the oldest goes first, and
   * then the store's answer is all there is.
   */
  const handedIn = new Map<string, UpdateRecord>();
  function remember(r: UpdateRecord, written: Promise<void>): void {
    handedIn.delete(r.deviceId);
    if (r.state === 'pending') return;
    handedIn.set(r.deviceId, r);
    if (handedIn.size > MAX_HANDED_IN) handedIn.delete(handedIn.keys().next().value as string);
    if (r.state === 'succeeded' || r.state === 'failed') {
      void written.then(() => { if (handedIn.get(r.deviceId) === r) handedIn.delete(r.deviceId); }, () => undefined);
    }
  }

  async function write(prev: UpdateRecord, state: UpdateState, change: Partial<UpdateRecord> = {}): Promise<UpdateRecord> {
    const now = deps.clock.now();
    const ended = state === 'succeeded' || state === 'failed';
    const next: UpdateRecord = { ...prev, state, ...change, updatedAt: now, finishedAt: ended ? now : null };
    const written = writes.add(next);
    remember(next, written);
    const settled = written.then(() => undefined, () => undefined);
    outstanding.add(settled);
    void settled.then(() => outstanding.delete(settled));
    await written;
    return next;
  }

  /** A record of an update of `deviceId` to `target` not started yet. */
  const fresh = (deviceId: string, target: FirmwareTarget): UpdateRecord => ({
    deviceId, productId: target.productId, version: target.version, state: 'pending', size: target.size, bytesSent: 0, offset: 0,
    error: null, rolloutId: target.rolloutId ?? null, startedAt: null, finishedAt: null, updatedAt: deps.clock.now(),
  });
  /** The rollout an update counts for: the target's (a rollout gives it), else the one it counted for before. */
  const rolloutOf = (same: UpdateRecord | null, target: FirmwareTarget) => target.rolloutId ?? same?.rolloutId ?? null;
  const sameUpdate = (r: UpdateRecord | null, target: FirmwareTarget) => (r?.version === target.version ? r : null);

  /** What a failure makes besides its row. */
  function announceFailure(deviceId: string): void {
    deps.metrics?.outcome('failed');
    emit(deviceId, EVENTS.flash, 'failed ');
  }

  return {
    /**
     * The device's newest update: the store's (as read), or what this node handed in since, when
     * that is newer (the same instant counts as newer: it was written after the read began).
     */
    newest(deviceId: string, read: UpdateRecord | null): UpdateRecord | null {
      const mine = handedIn.get(deviceId);
      if (!mine) return read;
      if (!read) return mine;
      return mine.updatedAt.getTime() >= read.updatedAt.getTime() ? mine : read;
    },

    /**
     * The update waits: for the device to take updates again (its owner hears
     * `particle/device/updates/pending`), or for a transfer slot on this node (silently).
     */
    async pending(deviceId: string, newest: UpdateRecord | null, target: FirmwareTarget, why: 'disabled' | 'busy'): Promise<void> {
      const same = sameUpdate(newest, target);
      // A cut transfer keeps its place (and its offset) while it waits for a slot.
      if (same?.state === 'pending' || (why === 'busy' && same?.state === 'downloading')) return;
      await write(fresh(deviceId, target), 'pending', { rolloutId: rolloutOf(same, target) });
      if (why === 'disabled') emit(deviceId, EVENTS.pending, 'true');
    },

    /** The update cannot start on this device (nothing was sent): failed. */
    async refused(deviceId: string, newest: UpdateRecord | null, target: FirmwareTarget, error: string): Promise<void> {
      await write(fresh(deviceId, target), 'failed', { error, rolloutId: rolloutOf(sameUpdate(newest, target), target) });
      announceFailure(deviceId);
    },

    /** A transfer starts (or resumes after a cut, keeping what was sent so far). */
    async downloading(deviceId: string, newest: UpdateRecord | null, target: FirmwareTarget): Promise<UpdateRecord> {
      const same = sameUpdate(newest, target);
      if (same?.state === 'downloading') return write(same, 'downloading', { rolloutId: rolloutOf(same, target) });
      const started = await write(fresh(deviceId, target), 'downloading', { startedAt: deps.clock.now(), rolloutId: rolloutOf(same, target) });
      // The device did not ask for it: the cloud starts it (Particle's auto-update).
      emit(deviceId, EVENTS.status, 'auto-update');
      emit(deviceId, EVENTS.flash, 'started ');
      return started;
    },

    /** The connection dropped mid-transfer: what was sent and acknowledged is kept for the resume. */
    interrupted: (r: UpdateRecord, progress: { bytesSent: number; offset: number }): Promise<UpdateRecord> => write(r, 'downloading', progress),

    /** The device holds the whole image, checked, and applies it: the outcome comes with its return. */
    applying: (r: UpdateRecord, progress: { bytesSent: number; offset: number }): Promise<UpdateRecord> => write(r, 'applying', progress),

    async succeeded(r: UpdateRecord): Promise<void> {
      await write(r, 'succeeded', { error: null });
      deps.metrics?.outcome('succeeded');
      emit(r.deviceId, EVENTS.flash, 'success ');
    },

    async failed(r: UpdateRecord, error: string, progress: Partial<UpdateRecord> = {}): Promise<void> {
      await write(r, 'failed', { ...progress, error });
      announceFailure(r.deviceId);
    },

    /** The sweep's failures, written by a statement of their own, make their events and metrics here. */
    expired(deviceId: string): void {
      handedIn.delete(deviceId);
      announceFailure(deviceId);
    },

    /** Waits for every write handed in so far. */
    async settle(): Promise<void> {
      while (outstanding.size > 0) await Promise.all([...outstanding]);
    },

    /** The device's stance on updates changed (its `hello`). */
    enabledChanged(deviceId: string, enabled: boolean): void {
      emit(deviceId, EVENTS.enabled, enabled ? 'true' : 'false');
    },
  };
}

export type UpdateRecords = ReturnType<typeof createUpdateRecords>;
