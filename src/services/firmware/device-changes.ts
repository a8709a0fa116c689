import { DomainError } from '../../domain/errors.js';
import { parseFirmwareVersion, parseFlag, parseGroupNames } from '../../domain/firmware.js';
import type { Clock } from '../../platform/clock.js';
import type { DeviceRecord } from '../../repositories/devices.repository.js';
import type { FirmwareRepository } from '../../repositories/firmware.repository.js';
import type { ProductRecord } from '../../repositories/products.repository.js';
import type { DeviceEdits } from '../devices/edit.js';
import type { Groups } from './groups.js';
import { deviceEvent, type Actor, type Publish } from './shared.js';
import { verifies } from './signing.js';
import type { Targets } from './targets.js';

/** The fields of a device record that edits.ts writes. */
const RECORD_FIELDS = ['name', 'notes', 'development', 'desired_firmware_version', 'firmware_updates_forced'] as const;

const given = (body: Record<string, unknown>, key: string) => body[key] !== undefined;

/**
 * PUT /v1/products/:p/devices/:id with firmware fields (docs/firmware.md, "Devices"): a lock
 * (`desired_firmware_version`) to an uploaded version, `flash` to update now, forced updates, and
 * the device's groups; the record's other fields go to the device edits as before. Everything is
 * checked before anything is written.
 */
export function createDeviceChanges(deps: { repo: FirmwareRepository; edits: DeviceEdits; groups: Groups; targets: Targets; clock: Clock; publish: Publish }) {
  const { repo } = deps;

  /** A lock names a version the product has, signed when the product has a key (the device would refuse it otherwise). */
  async function checkLock(product: ProductRecord, value: unknown): Promise<void> {
    if (value === null || value === 'null') return;
    const version = parseFirmwareVersion(value, 'desired_firmware_version');
    const f = await repo.find(product.id, version);
    if (!f) throw new DomainError('invalid_request', `desired_firmware_version: the product has no firmware version ${version}; upload it first`);
    const key = await repo.signingKey(product.id);
    if (!key) return;
    const image = f.signature ? await repo.image(product.id, version) : undefined;
    if (!f.signature || !image || !verifies(key.publicKey, image, f.signature)) {
      throw new DomainError('invalid_signature', `The product has a firmware signing key and version ${version} carries no signature it verifies: release it with a signature first`);
    }
  }

  return {
    async update(product: ProductRecord, d: DeviceRecord, body: Record<string, unknown>, actor: Actor): Promise<Record<string, unknown>> {
      const groupsField = given(body, 'groups') ? 'groups' : given(body, 'groups[]') ? 'groups[]' : null;
      if (groupsField) parseGroupNames(body[groupsField]);
      const flash = given(body, 'flash') ? parseFlag(body.flash, 'flash') : false;
      const lock = body.desired_firmware_version;
      if (flash && (lock === null || lock === 'null')) throw new DomainError('invalid_request', 'flash updates the device to its lock now: send it with desired_firmware_version, not with an unlock');
      if (lock !== undefined) await checkLock(product, lock);
      const record = RECORD_FIELDS.some((k) => given(body, k));
      if (!record && !groupsField && !flash) throw new DomainError('invalid_request', 'Nothing to change: send name, notes, development, desired_firmware_version (with flash), firmware_updates_forced or groups');

      const out: Record<string, unknown> = record ? await deps.edits.update(d, body, true) : { id: d.id, updated_at: deps.clock.now().toISOString() };
      if (groupsField) out.groups = await deps.groups.setDeviceGroups(product, d, body[groupsField], actor);

      const forced = out.firmware_updates_forced;
      if (typeof forced === 'boolean' && forced !== d.firmwareUpdatesForced) {
        await deps.publish(deviceEvent(deps.clock, d, 'particle/device/updates/forced', String(forced)));
        if (forced) deps.targets.notify({ productId: product.id, deviceIds: [d.id], immediate: true, cause: 'forced' });
      }
      const development = typeof out.development === 'boolean' ? out.development : d.development;
      if (flash && !development) deps.targets.notify({ productId: product.id, deviceIds: [d.id], immediate: true, cause: 'lock' });
      if ((flash || (lock !== undefined && lock !== null && lock !== 'null')) && development) {
        out.warnings = ['The device is a development device: the cloud does not update it, lock or not. Return it to the fleet (development: false) for its lock to apply.'];
      }
      return out;
    },
  };
}

export type DeviceFirmwareChanges = ReturnType<typeof createDeviceChanges>;
