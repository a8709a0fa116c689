import type { Bus } from '../../bus/bus.js';
import { DomainError } from '../../domain/errors.js';
import { targetOf, targetVersion } from '../../domain/firmware.js';
import type { ListedDevice } from '../../repositories/devices.repository.js';
import type { FirmwareRepository } from '../../repositories/firmware.repository.js';
import type { TtlCache } from '../../platform/ttl-cache.js';
import { createBatcher } from '../../storage/batcher.js';

/**
 * Which image each device should run, for the node that holds its connection (the transfer is
 * not here: services/firmware/updates/), and the notice that tells every node when that may have
 * changed (docs/firmware.md, "Which version a device runs").
 */

/** The bus notice sent once a change that may give devices another target has committed. */
export const FIRMWARE_RELEASED = 'firmware.released';
/** Device ids per notice: a rollout's wave of 100,000 devices goes as a few messages well under NATS's 1 MiB. */
const NOTICE_DEVICES = 10_000;

export interface FirmwareReleased {
  productId: number;
  /** The devices concerned; null: any device of the product (a release). */
  deviceIds: string[] | null;
  /**
   * Whether connected devices that take updates should start now: an intelligent release, a lock
   * with `flash`, updates forced, a group change onto an intelligent release. Otherwise they are
   * given their target at their next connection.
   */
  immediate: boolean;
  cause: 'release' | 'lock' | 'groups' | 'forced' | 'rollout';
}

/** The image a device should run: what the transfer sends and checks. */
export interface FirmwareTarget {
  productId: number;
  version: number;
  /** SHA-256 of the whole image, hex. */
  sha256: string;
  size: number;
  /** Ed25519 signature of the whole image, when it was uploaded or released with one. */
  signature: Buffer | null;
  /** The rollout that gives the device this version, if one does: its update counts for the rollout. */
  rolloutId?: number | null;
}

export function createTargets(deps: { repo: FirmwareRepository; bus: Bus; views?: TtlCache<boolean> | undefined }) {
  const { repo } = deps;

  /**
   * Whether each product has nothing a device view shows of firmware (true: no group, no default
   * release, no rollout that binds), so that the views of its devices need no statement: a
   * device's view read its firmware facts from the store every time, which made
   * `GET /v1/devices/:id` three times dearer (docs/benchmarks.md, "Product fleets"). A cache of
   * the hub (docs/architecture.md, "Caches in a cluster"): a change that may give a product's
   * devices groups or a target drops the product's entry here and on every node (`notify`,
   * `groupMade`), and an answer read across such a drop is not kept. Without a cache (its time
   * 0), views read their facts as before.
   */
  const views = deps.views;
  const forget = (productId: number): void => views?.delete(String(productId));

  /** Which of the products have nothing a device view shows of firmware, each read once and kept. */
  async function withoutFacts(productIds: readonly number[]): Promise<Set<number>> {
    if (!views) return new Set();
    const known = productIds.map((p) => views.get(String(p)));
    const none = known.includes(undefined)
      ? await Promise.all(productIds.map((p, i) => known[i] ?? views.load(String(p), () => repo.withoutViewFacts(p))))
      : known;
    return new Set(productIds.filter((_, i) => none[i] === true));
  }

  /** Tells every node (this one included) once the change has committed; many devices in notices of at most NOTICE_DEVICES. */
  function notify(notice: FirmwareReleased): void {
    forget(notice.productId);
    const ids = notice.deviceIds;
    if (ids === null || ids.length <= NOTICE_DEVICES) return deps.bus.notify(FIRMWARE_RELEASED, notice);
    for (let i = 0; i < ids.length; i += NOTICE_DEVICES) deps.bus.notify(FIRMWARE_RELEASED, { ...notice, deviceIds: ids.slice(i, i + NOTICE_DEVICES) });
  }

  /** Many devices' targets in two statements (a reconnect storm's devices, grouped by the caller). */
  async function targetsFor(deviceIds: readonly string[]): Promise<Map<string, FirmwareTarget | null>> {
    const facts = await repo.targetingFacts(deviceIds.map((id) => id.toLowerCase()));
    const wanted = new Map<string, { productId: number; version: number }>();
    for (const f of facts.values()) {
      const version = targetVersion(f);
      if (version !== null) wanted.set(`${f.productId}:${version}`, { productId: f.productId, version });
    }
    const images = new Map((await repo.imageMeta([...wanted.values()])).map((m) => [`${m.productId}:${m.version}`, m]));
    const out = new Map<string, FirmwareTarget | null>();
    for (const id of deviceIds) {
      const f = facts.get(id.toLowerCase());
      const version = f ? targetVersion(f) : null;
      // A lock to a version since deleted (locks are checked when made) gives nothing to send.
      const image = f && version !== null ? images.get(`${f.productId}:${version}`) ?? null : null;
      const rolloutId = f && f.rolloutId !== null && targetOf(f)?.source === 'rollout' ? f.rolloutId : null;
      out.set(id, image && (rolloutId === null ? image : { ...image, rolloutId }));
    }
    return out;
  }

  // The devices a node looks at together (a release's, a reconnect storm's, those that take freed
  // transfer slots) share two statements instead of two each: a release to 1,000 devices made
  // 2,744 pairs of them before, 169 after (docs/benchmarks.md, "Firmware updates").
  const oneByOne = createBatcher<string, FirmwareTarget | null>(async (ids) => {
    const found = await targetsFor([...new Set(ids)]);
    return ids.map((id) => found.get(id) ?? null);
  }, { maxBatch: 1000 });

  return {
    targetsFor,
    /** The image a device should run now, or null (no product, a development device, nothing released); calls of one turn are read together. */
    targetFor: (deviceId: string): Promise<FirmwareTarget | null> => oneByOne.add(deviceId),

    /** An image's bytes (the node holding devices keeps one copy per version). */
    async image(productId: number, version: number): Promise<Buffer> {
      const image = await repo.image(productId, version);
      if (!image) throw new DomainError('not_found', `Product ${productId} has no firmware version ${version}`);
      return image;
    },

    notify,

    /** A group was made (once committed): device views of the product may show groups from now on, on every node. */
    groupMade: forget,

    /**
     * What device views show of firmware: each device's groups and the version it is targeted
     * with, for a page of devices in one statement, or none when their products have no groups,
     * releases or rollouts.
     */
    async describe(devices: readonly ListedDevice[]): Promise<Map<string, { groups: string[]; target: number | null }>> {
      const inProducts = devices.filter((d) => d.productId !== null);
      if (inProducts.length === 0) return new Map();
      const productIds = [...new Set(inProducts.map((d) => d.productId as number))];
      const none = await withoutFacts(productIds);
      const asked = inProducts.filter((d) => !none.has(d.productId as number));
      // A device of a product without groups, releases or rollouts can still be locked to a version (its own row says so).
      const facts = asked.length === 0
        ? { groups: new Map<string, Array<{ name: string; version: number | null }>>(), defaults: new Map<number, number>(), rollouts: new Map<string, number>() }
        : await repo.viewFacts(asked.map((d) => d.id), productIds.filter((p) => !none.has(p)));
      return new Map(inProducts.map((d) => {
        const groups = facts.groups.get(d.id) ?? [];
        const target = targetOf({
          development: d.development, desiredFirmwareVersion: d.desiredFirmwareVersion, productDefault: facts.defaults.get(d.productId as number) ?? null,
          rolloutVersion: facts.rollouts.get(d.id) ?? null,
          groupVersions: groups.map((g) => g.version).filter((v): v is number => v !== null),
        });
        return [d.id, { groups: groups.map((g) => g.name), target: target?.version ?? null }];
      }));
    },
  };
}

export type Targets = ReturnType<typeof createTargets>;
