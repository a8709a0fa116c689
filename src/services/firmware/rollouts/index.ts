import { DomainError } from '../../../domain/errors.js';
import { decide, parseRolloutGroups, parseRolloutSpec, type RolloutState } from '../../../domain/firmware-rollouts.js';
import { parseFirmwareVersion, validateText } from '../../../domain/firmware.js';
import type { Clock } from '../../../platform/clock.js';
import type { Log } from '../../../platform/log.js';
import type { DeviceGroupsRepository } from '../../../repositories/device-groups.repository.js';
import type { FirmwareRolloutsRepository, RolloutChange, RolloutRecord } from '../../../repositories/firmware-rollouts.repository.js';
import type { FirmwareRepository } from '../../../repositories/firmware.repository.js';
import type { ProductRecord } from '../../../repositories/products.repository.js';
import type { Db, Tx } from '../../../storage/db.js';
import type { AuditService, AuditType } from '../../audit.service.js';
import { productEvent, takeProductTurn, type Actor, type Publish } from '../shared.js';
import type { Targets } from '../targets.js';
import { createRollout } from './start.js';
import { rolloutView, type RolloutView } from './view.js';

export { RolloutViewSchema, type RolloutView } from './view.js';

/** The event of the product's stream at each step of a rollout (docs/firmware.md, "Staged rollouts"). */
export const ROLLOUT_EVENT = 'particle/firmware/rollout';

/** Devices one tick starts at most, whatever the rate: a wave of 100,000 goes over a few ticks. */
const MAX_STARTS_PER_TICK = 20_000;

/** How long a started, connected device may go without its update beginning before it is told again. */
const RETELL_MS = 60_000;

type Step = { action: 'started' | 'paused' | 'resumed' | 'aborted' | 'wave_started' | 'completed'; wave?: number; reason?: string };

/**
 * Staged rollouts (docs/firmware.md, "Staged rollouts"): made, paused, resumed, aborted and
 * advanced by a person through the API; advanced by `tick`, which the composition root runs once
 * per cluster (the leader; the node itself on its own). Every change is one transaction on the
 * product's turn and the rollout's row, so two ticks, or a tick and a person, never cross; the
 * devices a tick starts are marked in one statement and the nodes holding them are told once it
 * has committed.
 */
export function createRollouts(deps: {
  db: Db; repo: FirmwareRolloutsRepository; firmware: FirmwareRepository; groups: DeviceGroupsRepository; targets: Targets;
  clock: Clock; audit: AuditService; publish: Publish; log: () => Log; random?: () => number;
}) {
  const { db, repo, clock } = deps;

  async function view(r: RolloutRecord): Promise<RolloutView> {
    return rolloutView(r, (await repo.progress(r, r.waves.length, r.errorsSince)).waves);
  }

  async function find(productId: number, id: number, tx?: Tx, lock = false): Promise<RolloutRecord> {
    const r = Number.isSafeInteger(id) ? await repo.find(productId, id, tx, lock) : undefined;
    if (!r) throw new DomainError('not_found', `The product has no rollout ${id}`);
    return r;
  }

  const announce = async (r: Pick<RolloutRecord, 'id' | 'productId' | 'version'>, steps: Step[]) => {
    for (const s of steps) {
      await deps.publish(productEvent(clock, r.productId, ROLLOUT_EVENT, { id: r.id, version: r.version, ...s }))
        .catch((err) => deps.log().warn({ err, rollout: r.id }, 'rollout event not published'));
    }
  };

  const audit = (r: Pick<RolloutRecord, 'id' | 'productId' | 'version'>, account: Actor['account'], type: AuditType, tx: Tx, details: Record<string, unknown> = {}, ip: string | null = null) =>
    deps.audit.record({ account, type, ip, details: { product_id: r.productId, rollout_id: r.id, version: r.version, ...details } }, tx);

  /** The rollout's creator: the account the changes made by ticks are recorded for. */
  const creator = (r: RolloutRecord) => r.createdBy as Actor['account'];

  /**
   * The last wave is done (or a person ended it): the version is released to the target, as PUT
   * …/release would, so that devices joining later get it too; the rollout no longer binds its
   * devices (the release does), nor do aborted ones before it.
   */
  async function complete(r: RolloutRecord, message: string, at: Date, tx: Tx): Promise<void> {
    const f = await deps.firmware.find(r.productId, r.version, tx, true);
    if (f) {
      const names = r.groups ? [...new Set([...f.groups, ...r.groups])] : f.groups;
      const groups = await deps.groups.findMany(r.productId, names, tx);
      await deps.firmware.release(r.productId, r.version, { productDefault: r.groups === null ? true : f.productDefault, groupIds: groups.map((g) => g.id), intelligent: false, signature: null }, at, tx);
    }
    await repo.update(r.id, { state: 'completed', reason: { code: 'completed', message }, binds: false, finishedAt: at }, at, tx);
    await repo.unbindAborted(r.productId, tx);
    tx.afterCommit(() => deps.targets.notify({ productId: r.productId, deviceIds: null, immediate: false, cause: 'release' }));
  }

  const released = (r: RolloutRecord) => deps.publish(productEvent(clock, r.productId, 'particle/firmware/release', { immediate: false, version: r.version }))
    .catch((err) => deps.log().warn({ err, rollout: r.id }, 'release event not published'));

  /** One tick of one running rollout: pause, complete, or advance and start the next devices up to its rate. */
  async function advance(productId: number, id: number): Promise<void> {
    const now = clock.now();
    const out = await db.transaction(async (tx) => {
      await takeProductTurn(productId, tx);
      const r = await repo.find(productId, id, tx, true);
      if (!r || r.state !== 'running') return null;
      const { waves, recent } = await repo.progress(r, r.waves.length, r.errorsSince, tx);
      const d = decide(r, waves, recent);
      if (d.kind === 'pause') {
        await repo.update(r.id, { state: 'paused', reason: { code: 'error_threshold', message: d.reason } }, now, tx);
        await audit(r, creator(r), 'firmware.rollout_paused', tx, { reason: d.reason, by: 'error_threshold' });
        return { r, steps: [{ action: 'paused', reason: d.reason }] as Step[], completed: false };
      }
      if (d.kind === 'complete') {
        await complete(r, 'Every wave met its success threshold', now, tx);
        await audit(r, creator(r), 'firmware.rollout_completed', tx);
        return { r, steps: [{ action: 'completed' }] as Step[], completed: true };
      }
      if (d.wave !== r.currentWave) {
        await repo.update(r.id, { currentWave: d.wave }, now, tx);
        await audit(r, creator(r), 'firmware.rollout_advanced', tx, { wave: d.wave + 1, by: 'success_threshold' });
      }
      const budget = r.ratePerMinute === null ? MAX_STARTS_PER_TICK : Math.min(MAX_STARTS_PER_TICK, r.ratePerMinute - await repo.startedSince(r.id, new Date(now.getTime() - 60_000), tx));
      const started = budget > 0 ? await repo.start(r, d.wave, budget, now, tx) : [];
      // Told again: connected devices started a while ago whose update never began (their node died before telling).
      const untold = await repo.untold(r, new Date(now.getTime() - RETELL_MS), tx);
      // The nodes holding them start them now (an offline device gets it when it connects).
      const told = [...started, ...untold];
      if (told.length > 0) tx.afterCommit(() => deps.targets.notify({ productId, deviceIds: told, immediate: true, cause: 'rollout' }));
      return { r, steps: d.started.map((w) => ({ action: 'wave_started', wave: w + 1 })) as Step[], completed: false };
    });
    if (!out) return;
    if (out.completed) await released(out.r);
    await announce(out.r, out.steps);
  }

  let ticking: Promise<void> = Promise.resolve();

  /** A change a person makes to a rollout in one of `from` states. */
  async function change(product: ProductRecord, id: number, from: RolloutState[], verb: string, apply: (r: RolloutRecord, at: Date, tx: Tx) => Promise<Step>): Promise<RolloutView> {
    const at = clock.now();
    const out = await db.transaction(async (tx) => {
      await takeProductTurn(product.id, tx);
      const r = await find(product.id, id, tx, true);
      if (!from.includes(r.state)) throw new DomainError('conflict', `Rollout ${id} is ${r.state}: only a ${from.join(' or ')} rollout can be ${verb}`);
      return { r, step: await apply(r, at, tx) };
    });
    if (out.step.action === 'completed') await released(out.r);
    await announce(out.r, [out.step]);
    return view(await find(product.id, id));
  }

  const reasonOf = (body: Record<string, unknown>, fallback: string) => validateText(body.reason, 'reason', 500) || fallback;

  return {
    /** POST …/firmware/rollouts (and PUT …/firmware/release with `rollout`). */
    async start(product: ProductRecord, body: Record<string, unknown>, actor: Actor): Promise<RolloutView> {
      const version = parseFirmwareVersion(body.version);
      const spec = parseRolloutSpec(body, version, parseRolloutGroups(body.groups ?? body['groups[]']));
      const at = clock.now();
      const made = await db.transaction(async (tx) => {
        const m = await createRollout({ repo, firmware: deps.firmware, groups: deps.groups, random: deps.random ?? Math.random }, product.id, spec, actor, at, tx);
        await deps.audit.record({ account: actor.account, type: 'firmware.rollout_started', ip: actor.ip, details: { product_id: product.id, rollout_id: m.id, version, groups: spec.groups, waves: m.waves, devices: m.devices } }, tx);
        return m;
      });
      await announce({ id: made.id, productId: product.id, version }, [{ action: 'started', wave: 1 }]);
      return view(await find(product.id, made.id));
    },

    async list(product: ProductRecord): Promise<{ rollouts: RolloutView[] }> {
      return { rollouts: await Promise.all((await repo.list(product.id)).map(view)) };
    },

    get: async (product: ProductRecord, id: number): Promise<RolloutView> => view(await find(product.id, id)),

    /** A person pauses it: no device is started until it is resumed; updates under way go on. */
    pause: (product: ProductRecord, id: number, body: Record<string, unknown>, actor: Actor) => change(product, id, ['running'], 'paused', async (r, at, tx) => {
      const reason = reasonOf(body, 'Paused by a person');
      await repo.update(r.id, { state: 'paused', reason: { code: 'paused', message: reason } }, at, tx);
      await audit(r, actor.account, 'firmware.rollout_paused', tx, { reason, by: 'person' }, actor.ip);
      return { action: 'paused', reason };
    }),

    /** Runs again; the error threshold counts the updates that finish from now on. */
    resume: (product: ProductRecord, id: number, actor: Actor) => change(product, id, ['paused'], 'resumed', async (r, at, tx) => {
      await repo.update(r.id, { state: 'running', reason: null, errorsSince: at } satisfies RolloutChange, at, tx);
      await audit(r, actor.account, 'firmware.rollout_resumed', tx, {}, actor.ip);
      return { action: 'resumed' };
    }),

    /**
     * Ends it for good: no device is started any more; started devices whose update has not
     * reached them whole follow the releases again (a transfer under way stops); those updated keep
     * the version until the product's next release.
     */
    abort: (product: ProductRecord, id: number, body: Record<string, unknown>, actor: Actor) => change(product, id, ['running', 'paused'], 'aborted', async (r, at, tx) => {
      const reason = reasonOf(body, 'Aborted by a person');
      await repo.update(r.id, { state: 'aborted', reason: { code: 'aborted', message: reason }, finishedAt: at }, at, tx);
      const dropped = await repo.drop(r, at, tx);
      await audit(r, actor.account, 'firmware.rollout_aborted', tx, { reason, dropped: dropped.length }, actor.ip);
      if (dropped.length > 0) tx.afterCommit(() => deps.targets.notify({ productId: r.productId, deviceIds: dropped, immediate: true, cause: 'rollout' }));
      return { action: 'aborted', reason };
    }),

    /** A person starts the next wave now (`advance: manual`, or without waiting for the threshold); after the last, it completes. */
    next: (product: ProductRecord, id: number, actor: Actor) => change(product, id, ['running'], 'advanced', async (r, at, tx) => {
      if (r.currentWave >= r.waves.length - 1) {
        await complete(r, 'Completed by a person after the last wave', at, tx);
        await audit(r, actor.account, 'firmware.rollout_completed', tx, { by: 'person' }, actor.ip);
        return { action: 'completed' };
      }
      await repo.update(r.id, { currentWave: r.currentWave + 1 }, at, tx);
      await audit(r, actor.account, 'firmware.rollout_advanced', tx, { wave: r.currentWave + 2, by: 'person' }, actor.ip);
      return { action: 'wave_started', wave: r.currentWave + 2 };
    }),

    /**
     * Advances every running rollout once (docs/firmware.md, "Staged rollouts": how a tick
     * decides). Run once per cluster; ticks asked for meanwhile run after it, one at a time.
     */
    tick(): Promise<void> {
      const run = async () => {
        for (const r of await repo.running()) {
          await advance(r.productId, r.id).catch((err) => deps.log().warn({ err, rollout: r.id }, 'rollout tick failed'));
        }
      };
      ticking = ticking.then(run, run);
      return ticking;
    },
  };
}

export type Rollouts = ReturnType<typeof createRollouts>;
