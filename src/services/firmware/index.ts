import type { Bus } from '../../bus/bus.js';
import type { Clock } from '../../platform/clock.js';
import type { DeviceGroupsRepository } from '../../repositories/device-groups.repository.js';
import type { FirmwareRepository } from '../../repositories/firmware.repository.js';
import type { FirmwareRolloutsRepository } from '../../repositories/firmware-rollouts.repository.js';
import type { Log } from '../../platform/log.js';
import type { Db } from '../../storage/db.js';
import type { AuditService } from '../audit.service.js';
import type { DeviceEdits } from '../devices/edit.js';
import { createDeviceChanges } from './device-changes.js';
import { createGroups } from './groups.js';
import { createImages, type UserNames } from './images.js';
import { createReleases } from './releases.js';
import { createRollouts } from './rollouts/index.js';
import type { Publish } from './shared.js';
import { createTargets } from './targets.js';
import type { TtlCache } from '../../platform/ttl-cache.js';

export { FIRMWARE_RELEASED, type FirmwareReleased, type FirmwareTarget } from './targets.js';
export type { Actor } from './shared.js';

/**
 * Product firmware (docs/firmware.md; docs/architecture.md, "Firmware"): images and their module
 * checks, releases and the signing key, staged rollouts, device groups, the firmware fields of a
 * device, and the targets the node holding a device sends it (the transfer itself: services/firmware/updates/).
 */
export function createFirmware(deps: {
  db: Db;
  repo: FirmwareRepository;
  groups: DeviceGroupsRepository;
  rollouts: FirmwareRolloutsRepository;
  bus: Bus;
  log: () => Log;
  clock: Clock;
  audit: AuditService;
  /** Puts a cloud event on the streams and its webhooks (resolves once their deliveries are stored). */
  publish: Publish;
  userNames: UserNames;
  edits: DeviceEdits;
  /** FIRMWARE_MAX_BYTES: the largest image an upload takes. */
  maxBytes: number;
  /** Which products have nothing a device view shows of firmware (targets.ts); none: views read it every time. */
  views?: TtlCache<boolean> | undefined;
}) {
  const { db, repo, clock, audit, publish } = deps;
  const targets = createTargets({ repo, bus: deps.bus, views: deps.views });
  const images = createImages({ db, repo, clock, audit, publish, userNames: deps.userNames, maxBytes: deps.maxBytes });
  const groups = createGroups({ db, repo: deps.groups, firmware: repo, targets, clock, audit });
  const rollouts = createRollouts({ db, repo: deps.rollouts, firmware: repo, groups: deps.groups, targets, clock, audit, publish, log: deps.log });
  const releases = createReleases({ db, repo, groups: deps.groups, rollouts: { repo: deps.rollouts, start: rollouts.start }, images, targets, clock, audit, publish });
  const devices = createDeviceChanges({ repo, edits: deps.edits, groups, targets, clock, publish });
  return { images, groups, releases, rollouts, devices, targets };
}

export type Firmware = ReturnType<typeof createFirmware>;
