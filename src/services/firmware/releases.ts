import { DomainError } from '../../domain/errors.js';
import { factsOf, impactOf, parseFirmwareVersion, parseFlag, parseGroupNames, type Impact, type ReleaseState } from '../../domain/firmware.js';
import type { Clock } from '../../platform/clock.js';
import type { DeviceGroupsRepository } from '../../repositories/device-groups.repository.js';
import type { FirmwareRepository } from '../../repositories/firmware.repository.js';
import type { ProductRecord } from '../../repositories/products.repository.js';
import type { Db } from '../../storage/db.js';
import type { AuditService } from '../audit.service.js';
import type { FirmwareView, Images } from './images.js';
import { releasedSignature } from './release-signature.js';
import { productEvent, takeProductTurn, type Actor, type Publish } from './shared.js';
import { keyView, parsePublicKey, parseSignature, verifies } from './signing.js';
import type { Targets } from './targets.js';
import type { Rollouts, RolloutView } from './rollouts/index.js';
import type { FirmwareRolloutsRepository } from '../../repositories/firmware-rollouts.repository.js';

export interface ReleaseView extends FirmwareView {
  /** What Skyport allows where Particle refuses, said to the caller (docs/particle-compatibility.md). */
  warnings: string[];
  /** The rollout started instead of the release, when the request had `rollout`. */
  rollout?: RolloutView;
}

const flag = (v: unknown, field: string, fallback: boolean) => (v === undefined || v === null || v === '' ? fallback : parseFlag(v, field));

/** `groups` as JSON sends it, or `groups[]` as a form does (Particle's curl examples). */
const groupsOf = (body: Record<string, unknown>, field = 'groups') => parseGroupNames(body[field] ?? body[`${field}[]`], field);

/**
 * Releases (docs/firmware.md, "Releases"): a version to the fleet (the product default) and to
 * groups; what a release or a group change would update; the product's signing key.
 */
export function createReleases(deps: {
  db: Db; repo: FirmwareRepository; groups: DeviceGroupsRepository; images: Images; targets: Targets; clock: Clock; audit: AuditService; publish: Publish;
  /** Aborted rollouts' devices follow a release again; a release with `rollout` starts one instead. */
  rollouts: { repo: Pick<FirmwareRolloutsRepository, 'unbindAborted'>; start: Rollouts['start'] };
}) {
  const { repo, clock } = deps;


  async function signingKey(product: ProductRecord) {
    const key = await repo.signingKey(product.id);
    if (!key) throw new DomainError('not_found', 'The product has no firmware signing key');
    return { ...keyView(key.publicKey), created_at: key.createdAt.toISOString() };
  }

  /**
   * PUT …/firmware/release with `rollout` (Particle's body and Skyport's rollout): a staged rollout
   * of the version to the fleet (`product_default: true`) or to `groups`, instead of a release now.
   */
  async function asRollout(product: ProductRecord, body: Record<string, unknown>, actor: Actor): Promise<ReleaseView> {
    const rollout = body.rollout;
    if (typeof rollout !== 'object' || rollout === null || Array.isArray(rollout)) throw new DomainError('invalid_request', 'rollout must be an object: {waves, rate_per_minute, success_threshold, advance, error_threshold}');
    const groups = groupsOf(body);
    const fleet = flag(body.product_default, 'product_default', groups.length === 0);
    if (fleet === (groups.length > 0)) throw new DomainError('invalid_request', 'A rollout goes to the fleet (product_default: true) or to groups, not both and not neither');
    const started = await deps.rollouts.start(product, { ...rollout, version: body.version, groups: fleet ? null : groups }, actor);
    const view = await deps.images.get(product, started.version);
    const warnings = view.device_count === 0 ? [`No device of the product runs version ${started.version} yet: the rollout's first wave tries it.`] : [];
    return { ...view, warnings, rollout: started };
  }

  return {
    /**
     * PUT /v1/products/:p/firmware/release: the version becomes the product default (or stops
     * being it) and is released to exactly `groups` (each group's earlier release replaced).
     * Particle refuses a version no device of the product runs; Skyport releases it and says so.
     */
    async release(product: ProductRecord, body: Record<string, unknown>, actor: Actor): Promise<ReleaseView> {
      if (body.rollout !== undefined && body.rollout !== null) return asRollout(product, body, actor);
      const version = parseFirmwareVersion(body.version);
      const intelligent = flag(body.intelligent, 'intelligent', false);
      const groupsGiven = body.groups !== undefined || body['groups[]'] !== undefined;
      const defaultGiven = body.product_default !== undefined;
      const names = groupsOf(body);
      const given = parseSignature(body.signature);
      const released = await deps.db.transaction(async (tx) => {
        await takeProductTurn(product.id, tx);
        const f = await repo.find(product.id, version, tx, true);
        if (!f) throw new DomainError('not_found', `The product has no firmware version ${version}: upload it first`);
        // What is left out stays as it is; neither given is particle-api-js's "release as the product default".
        const productDefault = defaultGiven ? flag(body.product_default, 'product_default', false) : groupsGiven ? f.productDefault : true;
        const wanted = groupsGiven ? names : f.groups;
        const groups = await deps.groups.findMany(product.id, wanted, tx);
        const unknown = wanted.filter((n) => !groups.some((g) => g.name === n));
        if (unknown.length > 0) throw new DomainError('invalid_request', `The product has no group ${unknown.map((n) => `"${n}"`).join(', ')}: create it first (POST /v1/products/:p/groups)`);
        const releases = productDefault || groups.length > 0;
        const signature = releases ? await releasedSignature(repo, product.id, f, given, tx) : given;
        await repo.release(product.id, version, { productDefault, groupIds: groups.map((g) => g.id), intelligent, signature }, clock.now(), tx);
        // The devices an aborted rollout updated follow the releases again (the notice below reaches them).
        if (releases) await deps.rollouts.repo.unbindAborted(product.id, tx);
        await deps.audit.record({ account: actor.account, type: 'firmware.released', ip: actor.ip, details: { product_id: product.id, version, product_default: productDefault, groups: wanted, intelligent } }, tx);
        tx.afterCommit(() => deps.targets.notify({ productId: product.id, deviceIds: null, immediate: intelligent, cause: 'release' }));
        return releases;
      });
      if (released) await deps.publish(productEvent(clock, product.id, 'particle/firmware/release', { immediate: intelligent, version }));
      const view = await deps.images.get(product, version);
      const warnings = released && view.device_count === 0
        ? [`No device of the product runs version ${version} yet. Particle refuses to release such a version; Skyport releases it: try it on a group or in a staged rollout first.`]
        : [];
      return { ...view, warnings };
    },

    /**
     * GET /v1/products/:p/impact: how many devices a change would update. Particle's action
     * `edit_groups_for_firmware` (`firmware_version` released to exactly `groups`, and as the
     * product default or not); Skyport's `edit_device_groups` (`devices` given exactly `groups`).
     */
    async impact(product: ProductRecord, q: Record<string, unknown>): Promise<{ devices: { firmware_update: Impact } }> {
      const before = await repo.releaseState(product.id);
      const groups = new Map((await deps.groups.list(product.id)).map((g) => [g.name, g.id]));
      const idsOf = (names: string[]) => names.map((n) => {
        const id = groups.get(n);
        if (id === undefined) throw new DomainError('invalid_request', `The product has no group "${n}"`);
        return id;
      });
      if (q.action === 'edit_groups_for_firmware') {
        const version = parseFirmwareVersion(q.firmware_version, 'firmware_version');
        if (!(await repo.find(product.id, version))) throw new DomainError('not_found', `The product has no firmware version ${version}`);
        const targeted = new Set(idsOf(groupsOf(q)));
        const productDefault = flag(q.product_default, 'product_default', false);
        const after: ReleaseState = {
          productDefault: productDefault ? version : before.productDefault === version ? null : before.productDefault,
          groups: new Map([...before.groups].map(([id, v]) => [id, targeted.has(id) ? version : v === version ? null : v])),
        };
        const classes = await repo.deviceClasses(product.id);
        return { devices: { firmware_update: impactOf(classes.map((c) => ({ count: c.count, running: c.running, before: factsOf(c, before), after: factsOf(c, after) }))) } };
      }
      if (q.action === 'edit_device_groups') {
        const ids = typeof q.devices === 'string' ? q.devices.split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== '') : [];
        if (ids.length === 0 || ids.length > 10_000 || !ids.every((id) => /^[0-9a-f]{24}$/.test(id))) throw new DomainError('invalid_request', 'devices must be device ids separated by commas (1 to 10,000)');
        const newGroups = idsOf(groupsOf(q));
        const classes = await repo.deviceClasses(product.id, ids);
        return { devices: { firmware_update: impactOf(classes.map((c) => ({ count: c.count, running: c.running, before: factsOf(c, before), after: factsOf(c, before, newGroups) }))) } };
      }
      throw new DomainError('invalid_request', 'action must be edit_groups_for_firmware (firmware_version, groups, product_default) or edit_device_groups (devices, groups)');
    },

    signingKey,

    /**
     * Sets the product's key. Versions released before without a signature it verifies still
     * target devices, which will refuse them: the answer names them, to release again signed.
     */
    async setSigningKey(product: ProductRecord, body: { public_key?: unknown }, actor: Actor) {
      const raw = parsePublicKey(body.public_key);
      await repo.setSigningKey(product.id, raw, clock.now());
      await deps.audit.record({ account: actor.account, type: 'firmware.signing_key_set', ip: actor.ip, details: { product_id: product.id, fingerprint: keyView(raw).fingerprint } });
      const live = (await repo.list(product.id)).filter((f) => f.productDefault || f.groups.length > 0);
      const unsigned: number[] = [];
      for (const f of live) {
        const image = f.signature ? await repo.image(product.id, f.version) : undefined;
        if (!f.signature || !image || !verifies(raw, image, f.signature)) unsigned.push(f.version);
      }
      const warnings = unsigned.length === 0 ? [] : [`Released version${unsigned.length === 1 ? '' : 's'} ${unsigned.join(', ')} carr${unsigned.length === 1 ? 'ies' : 'y'} no signature this key verifies: devices that check signatures will refuse ${unsigned.length === 1 ? 'it' : 'them'}. Release ${unsigned.length === 1 ? 'it' : 'them'} again with a signature.`];
      return { ...(await signingKey(product)), warnings };
    },

    async removeSigningKey(product: ProductRecord, actor: Actor): Promise<void> {
      if (!(await repo.deleteSigningKey(product.id))) throw new DomainError('not_found', 'The product has no firmware signing key');
      await deps.audit.record({ account: actor.account, type: 'firmware.signing_key_removed', ip: actor.ip, details: { product_id: product.id } });
    },
  };
}

export type Releases = ReturnType<typeof createReleases>;
