import type { Bus } from '../../../bus/bus.js';
import type { Hello } from '../../../domain/device-protocol.js';
import { FAILURES, nextStep, outcomeOnReturn, type UpdateRecord } from '../../../domain/firmware-updates.js';
import type { OtaMessage } from '../../../domain/ota-protocol.js';
import type { Clock } from '../../../platform/clock.js';
import type { Log } from '../../../platform/log.js';
import type { Secrets } from '../../../platform/secrets.js';
import type { FirmwareUpdatesRepository, UpdatingDevice } from '../../../repositories/firmware-updates.repository.js';
import { createBatcher } from '../../../storage/batcher.js';
import { createDeviceTurns } from '../../config/turns.js';
import { FIRMWARE_RELEASED, type FirmwareReleased } from '../targets.js';
import { createImageCache } from './image-cache.js';
import { createUpdateRecords, type EmitEvent } from './records.js';
import type { FirmwareSource } from './source.js';
import { createNodeTransfers, type FirmwareLinks, type Refusal } from './transfers.js';

export type { FirmwareSource, FirmwareTarget } from './source.js';
export type { FirmwareLinks } from './transfers.js';
export type { OtaLink } from './transfer.js';

/** Idle images a node keeps for the next devices of a release (in use ones stay whatever their size). */
const IDLE_IMAGE_BYTES = 64 * 1024 * 1024;
/** How often the node looks for stalled transfers and for updates whose device never came back. */
const SWEEP_MS = 5000;

export interface FirmwareUpdateMetrics {
  bytesSent(bytes: number): void;
  outcome(outcome: 'succeeded' | 'failed'): void;
}

/**
 * Firmware updates of the devices connected to this node (docs/device-protocol.md, "Firmware
 * updates"): on a device's `hello` and on a release that concerns it, the version it should run
 * is asked of the product firmware (`source`), and when it differs from what the device runs, an
 * update starts (or waits, while the device does not take updates and the product does not force
 * them). The transfer runs on the node holding the device's connection; a device that reconnects
 * elsewhere resumes there, from what it holds. The update's state is in the store, written at each
 * change, so any node (and the product's rollout) reads where it stands.
 */
export function createFirmwareUpdates(deps: {
  repo: FirmwareUpdatesRepository; source: FirmwareSource; links: FirmwareLinks; bus: Bus; clock: Clock; secrets: Pick<Secrets, 'token'>; log: () => Log;
  emit: EmitEvent;
  /** FIRMWARE_TRANSFERS: transfers this node runs at once; FIRMWARE_UPDATE_TIMEOUT_SECONDS: how long a device may take to come back. */
  settings: { transfers: number; timeoutSeconds: number };
  metrics?: FirmwareUpdateMetrics;
  /** A device's row changed (whether it takes updates): its cached copies go. */
  changed?: (deviceId: string) => void;
  /** Resolves once the device's last `hello` (the version it runs) is stored, or could not be. */
  described?: (deviceId: string) => Promise<void>;
  batchWindowMs?: number;
}) {
  const log = deps.log;
  const records = createUpdateRecords({ repo: deps.repo, clock: deps.clock, log, emit: deps.emit, metrics: deps.metrics, batchWindowMs: deps.batchWindowMs });
  const cache = createImageCache({ load: (productId, version) => deps.source.image(productId, version), maxIdleBytes: IDLE_IMAGE_BYTES });
  const turns = createDeviceTurns();
  // Devices that wait for a slot, in the order they came; a slot that frees takes the next one still here.
  const queue = new Set<string>();
  let draining = 0;
  const batch = { maxBatch: 1000, inFlight: 1, waitMs: deps.batchWindowMs ?? 0 };
  // A reconnect storm's hellos read their devices together, and their stances are written together.
  const reads = createBatcher<string, UpdatingDevice | undefined>(async (ids) => {
    const found = new Map((await deps.repo.devices(ids)).map((d) => [d.id, d]));
    return ids.map((id) => found.get(id));
  }, batch);
  const stances = createBatcher<{ id: string; enabled: boolean }, boolean>(async (list) => {
    const changed = new Set(await deps.repo.setUpdatesEnabled(list));
    return list.map((c) => changed.has(c.id));
  }, batch);

  const transfers = createNodeTransfers({
    links: deps.links, cache, records, clock: deps.clock, secrets: deps.secrets, log, limit: deps.settings.transfers,
    sent: (n) => deps.metrics?.bytesSent(n),
    freed: () => drain(),
    // The device refused for want of taking updates: it is taken at its word, and waits.
    disabled: (deviceId, newest, target) => {
      void stance(deviceId, false).then(() => records.pending(deviceId, newest, target, 'disabled'))
        .catch((err) => log().warn({ err, device: deviceId }, 'firmware update: pending state not stored'));
    },
  });

  const considered = (what: string, deviceId: string) => (err: unknown) => log().warn({ err, device: deviceId }, `firmware update: ${what} failed`);

  /** Stores whether the device takes updates; its owner hears of a change. */
  async function stance(deviceId: string, enabled: boolean): Promise<void> {
    if (!(await stances.add({ id: deviceId, enabled }))) return;
    deps.changed?.(deviceId);
    records.enabledChanged(deviceId, enabled);
  }

  /** The devices waiting for a slot take the free ones, one consideration per slot. */
  function drain(): void {
    for (const id of queue) {
      if (transfers.free() - draining <= 0) return;
      queue.delete(id);
      if (!deps.links.holds(id)) continue;
      draining += 1;
      void consider(id, {}).catch(considered('a queued update', id)).finally(() => {
        draining -= 1;
        drain();
      });
    }
  }

  /**
   * Looks at one device connected here, in its turn: the outcome of the update it applied (on the
   * first `hello` of a connection), then whether an update should start, resume or wait.
   */
  function consider(deviceId: string, how: { hello?: Hello; first?: boolean; released?: boolean }): Promise<void> {
    return turns.run(deviceId, async () => {
      if (!deps.links.holds(deviceId)) return;
      const device = await reads.add(deviceId);
      if (!device) return;
      let enabled = device.updatesEnabled;
      const said = how.hello?.updatesEnabled;
      if (said !== undefined && said !== enabled) {
        enabled = said;
        await stance(deviceId, said);
      }
      const running = how.hello?.firmwareVersion ?? device.firmwareVersion;
      // What this node wrote last may not be in what was read (a transfer that just ended).
      const known = records.newest(deviceId, device.newest);
      const newest = how.first ? await settleReturn(known, running) : known;
      // Only a product's devices are given firmware; a transfer under way goes on unless a notice changed its target.
      if (device.productId === null || (transfers.has(deviceId) && !how.released)) return;
      const target = await deps.source.targetFor(deviceId);
      if (transfers.has(deviceId)) {
        if (transfers.versionOf(deviceId) === (target?.version ?? null)) return;
        await transfers.cancel(deviceId, FAILURES.superseded);
      }
      if (!target) return;
      // A transfer that ended while the target was read (the device said `done`) wrote its state
      // here meanwhile: judged by what was known before the read, it would be resumed.
      const latest = records.newest(deviceId, newest);
      // A rollout that starts the device is a new word: an earlier failure of the version is tried again.
      const anew = target.rolloutId != null && latest?.version === target.version && latest.rolloutId !== target.rolloutId;
      const step = nextStep({ target: target.version, running, enabled, forced: device.updatesForced, newest: latest, released: how.released === true || anew });
      if (step === 'none') return;
      if (step === 'pending') return records.pending(deviceId, latest, target, 'disabled');
      if (transfers.start(deviceId, latest, target, device.updatesForced) !== 'busy') return;
      queue.add(deviceId);
      await records.pending(deviceId, latest, target, 'busy');
    });
  }

  /** The device came back: the update it applied succeeded or failed by the version it runs. */
  async function settleReturn(newest: UpdateRecord | null, running: number | null): Promise<UpdateRecord | null> {
    const outcome = outcomeOnReturn(newest, running);
    if (!newest || !outcome) return newest;
    // The outcome follows the version it is judged by into the store: whoever reads an update
    // succeeded reads the device on its new version (the hello is written in batches).
    await deps.described?.(newest.deviceId);
    if (outcome === 'succeeded') await records.succeeded(newest);
    else await records.failed(newest, FAILURES.oldVersion);
    return { ...newest, state: outcome };
  }

  // Devices held here that a release named without `immediate`: their next `hello` counts as released.
  const named = new Set<string>();

  const unlisten = deps.bus.listen(FIRMWARE_RELEASED, (payload) => {
    const notice = payload as Partial<FirmwareReleased>;
    if (!Number.isInteger(notice.productId)) {
      log().warn({ notice }, 'bad firmware release notice ignored');
      return;
    }
    const only = Array.isArray(notice.deviceIds) ? new Set(notice.deviceIds) : null;
    for (const id of deps.links.heldIn(notice.productId as number)) {
      if (only && !only.has(id)) continue;
      // A standard release reaches devices at their next connection; an intelligent one (a lock
      // with flash, forced updates) at once.
      if (notice.immediate === false) named.add(id);
      else void consider(id, { released: true }).catch(considered('a release', id));
    }
  });

  async function sweep(): Promise<void> {
    const now = deps.clock.now();
    transfers.sweep(now.getTime());
    const expired = await deps.repo.expireApplying(new Date(now.getTime() - deps.settings.timeoutSeconds * 1000), now, FAILURES.noReturn);
    for (const r of expired) records.expired(r.deviceId);
  }
  const sweeping = setInterval(() => { sweep().catch((err) => log().warn({ err }, 'firmware update sweep failed')); }, SWEEP_MS);
  sweeping.unref();

  return {
    /** A device connected here said `hello` (`first`: the first of its connection, after a restart). */
    onHello(deviceId: string, hello: Hello, first: boolean): void {
      const released = named.delete(deviceId);
      void consider(deviceId, { hello, first, released }).catch(considered('a hello', deviceId));
    },

    /** What the device said about a transfer (`ota/…`); a refusal is answered on `cloud/error`. */
    onMessage: (deviceId: string, message: OtaMessage): Refusal | null => transfers.onMessage(deviceId, message),

    /** Where a device's newest update stands, or null when it never had one. */
    stateOf: (deviceId: string): Promise<UpdateRecord | null> => deps.repo.newest(deviceId),

    /** A product's updates counted by version and state (a rollout's progress, the console). */
    counts: (productId: number) => deps.repo.counts(productId),

    /**
     * Fails the transfers that stalled and the updates whose device did not come back within the
     * time-out. It runs every few seconds; tests that move a manual clock run it at once. Any node
     * may: each expired update is failed by one statement, once.
     */
    sweep,

    /** Resolves once what was queued for the device here (a `hello`, a release) has been looked at. */
    settled: (deviceId: string): Promise<void> => turns.run(deviceId, async () => undefined),

    /** Transfers running on this node now. */
    inProgress: (): number => transfers.size,

    /** Images held by this node (its memory for firmware). */
    imagesHeld: () => cache.held(),

    /** Stops the sweep and waits for the states handed in to be stored. */
    async close(): Promise<void> {
      clearInterval(sweeping);
      unlisten();
      await records.settle();
    },
  };
}

export type FirmwareUpdates = ReturnType<typeof createFirmwareUpdates>;
