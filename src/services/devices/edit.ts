import { DomainError } from '../../domain/errors.js';
import { validateDeviceName, validateNotes } from '../../domain/devices.js';
import { parseFlag } from '../../domain/firmware.js';
import type { Clock } from '../../platform/clock.js';
import type { DeviceRecord, DevicesRepository } from '../../repositories/devices.repository.js';
import { permissionDenied } from './access.js';

export interface DeviceChangeBody { name?: unknown; notes?: unknown; development?: unknown; desired_firmware_version?: unknown; firmware_updates_forced?: unknown }

/** A device record's own fields: name and notes (any route), development mode, firmware lock and forced updates (product routes only). */
export function createDeviceEdits(deps: {
  repo: Pick<DevicesRepository, 'update'>; clock: Clock;
  /** A device became a development device: its own values now win, and its configuration may change. */
  becameDevelopment?: (productId: number, deviceId: string) => void;
}) {
  return {
    async update(d: DeviceRecord, body: DeviceChangeBody, productRoute: boolean): Promise<Record<string, unknown>> {
      const change: { name?: string; notes?: string | null; development?: boolean; desiredFirmwareVersion?: number | null; firmwareUpdatesForced?: boolean } = {};
      if (body.name !== undefined) change.name = validateDeviceName(body.name);
      if (body.notes !== undefined) change.notes = validateNotes(body.notes);
      if (productRoute && body.development !== undefined) {
        if (body.development !== true && body.development !== false && body.development !== 'true' && body.development !== 'false') throw new DomainError('invalid_request', 'development must be true or false');
        change.development = body.development === true || body.development === 'true';
      }
      if (productRoute && body.desired_firmware_version !== undefined) {
        const v = body.desired_firmware_version;
        if (v === null || v === 'null') change.desiredFirmwareVersion = null;
        else if ((typeof v === 'number' || (typeof v === 'string' && /^\d{1,9}$/.test(v))) && Number.isInteger(Number(v)) && Number(v) >= 1) change.desiredFirmwareVersion = Number(v);
        else throw new DomainError('invalid_request', 'desired_firmware_version must be a firmware version number, or null to unlock');
      }
      if (productRoute && body.firmware_updates_forced !== undefined) change.firmwareUpdatesForced = parseFlag(body.firmware_updates_forced, 'firmware_updates_forced');
      if (Object.keys(change).length === 0) throw new DomainError('invalid_request', productRoute ? 'Nothing to change: send name, notes, development, desired_firmware_version (with flash), firmware_updates_forced or groups' : 'Nothing to change: send name or notes');
      const updated = await deps.repo.update(d.id, change, deps.clock.now());
      if (!updated) throw permissionDenied();
      if (change.development === true && !d.development && updated.productId !== null) deps.becameDevelopment?.(updated.productId, updated.id);
      // The answer names what changed, as Particle's does.
      const out: Record<string, unknown> = { id: updated.id, updated_at: updated.updatedAt.toISOString() };
      if (change.name !== undefined) out.name = updated.name;
      if (change.notes !== undefined) out.notes = updated.notes;
      if (change.development !== undefined) out.development = updated.development;
      if (change.desiredFirmwareVersion !== undefined) out.desired_firmware_version = updated.desiredFirmwareVersion;
      if (change.firmwareUpdatesForced !== undefined) out.firmware_updates_forced = updated.firmwareUpdatesForced;
      return out;
    },
  };
}

export type DeviceEdits = ReturnType<typeof createDeviceEdits>;
