import { DomainError } from '../../../domain/errors.js';
import { assignWaves, exclusionOf, type Exclusion, type RolloutSpec } from '../../../domain/firmware-rollouts.js';
import { factsOf, type ReleaseState } from '../../../domain/firmware.js';
import type { DeviceGroupsRepository } from '../../../repositories/device-groups.repository.js';
import type { FirmwareRolloutsRepository } from '../../../repositories/firmware-rollouts.repository.js';
import type { FirmwareRepository } from '../../../repositories/firmware.repository.js';
import type { Tx } from '../../../storage/db.js';
import { releasedSignature } from '../release-signature.js';
import { takeProductTurn, type Actor } from '../shared.js';

/** Shuffles in place (Fisher–Yates): a wave is a sample of the fleet, not its oldest devices. */
function shuffle<T>(list: T[], random: () => number): T[] {
  for (let i = list.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [list[i], list[j]] = [list[j] as T, list[i] as T];
  }
  return list;
}

/**
 * Makes a rollout, in the caller's transaction (docs/firmware.md, "Staged rollouts"): the version
 * must exist (and be signed when the product has a key), no other rollout of the product may be
 * under way, the groups named must exist. The target's devices are read once: development and
 * locked devices, and those that a release of the version to the target would not reach, are
 * counted as excluded; the others fall into waves, in a random order, and are stored with the
 * rollout. Answers the rollout's id.
 */
export async function createRollout(deps: {
  repo: FirmwareRolloutsRepository; firmware: FirmwareRepository; groups: DeviceGroupsRepository; random: () => number;
}, productId: number, spec: RolloutSpec, actor: Actor, at: Date, tx: Tx): Promise<{ id: number; devices: number; waves: number }> {
  const { repo, firmware } = deps;
  await takeProductTurn(productId, tx);
  const f = await firmware.find(productId, spec.version, tx, true);
  if (!f) throw new DomainError('not_found', `The product has no firmware version ${spec.version}: upload it first`);
  const live = await repo.live(productId, tx);
  if (live !== null) throw new DomainError('conflict', `Rollout ${live} of the product is under way (running or paused): abort it, or let it complete, before starting another`);
  await releasedSignature(firmware, productId, f, null, tx);

  const named = [...new Set([...(spec.groups ?? []), ...spec.waves.flatMap((w) => ('group' in w ? [w.group] : []))])];
  const known = new Map((await deps.groups.findMany(productId, named, tx)).map((g) => [g.name, g.id]));
  const unknown = named.filter((n) => !known.has(n));
  if (unknown.length > 0) throw new DomainError('invalid_request', `The product has no group ${unknown.map((n) => `"${n}"`).join(', ')}: create it first (POST /v1/products/:p/groups)`);
  const targetIds = spec.groups === null ? null : spec.groups.map((n) => known.get(n) as number);

  // What each device would run once the version is released to the target: who takes part.
  const before = await firmware.releaseState(productId, tx);
  const after: ReleaseState = targetIds === null
    ? { ...before, productDefault: spec.version }
    : { productDefault: before.productDefault, groups: new Map([...before.groups].map(([id, v]) => [id, targetIds.includes(id) ? spec.version : v])) };
  const names = new Map([...known].map(([name, id]) => [id, name]));
  const excluded: Record<Exclusion, number> = { development: 0, locked: 0, other_release: 0 };
  const eligible: Array<{ id: string; groups: string[] }> = [];
  for (const d of await repo.targeted(productId, targetIds, tx)) {
    const why = exclusionOf(factsOf({ development: d.development, desiredFirmwareVersion: d.desired, running: null, groupIds: d.groupIds, count: 1 }, after), spec.version);
    if (why) excluded[why] += 1;
    else eligible.push({ id: d.id, groups: d.groupIds.flatMap((id) => names.get(id) ?? []) });
  }
  const { waves, members } = assignWaves(shuffle(eligible, deps.random), spec.waves);
  const id = await repo.insert({
    productId, version: spec.version, groups: spec.groups, waves, ratePerMinute: spec.ratePerMinute, successPercent: spec.successPercent,
    advance: spec.advance, errorThreshold: spec.errorThreshold, excluded, errorsSince: at, createdBy: actor.account, createdAt: at,
  }, tx);
  await repo.addMembers(id, members, tx);
  // Rolled out is released: the version is kept from now on (a released version is never deleted).
  await firmware.markReleased(productId, spec.version, at, tx);
  return { id, devices: members.length, waves: waves.length };
}
