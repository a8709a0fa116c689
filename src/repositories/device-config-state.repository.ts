import type { Queryable } from '../storage/db.js';

export interface HeldModule { module: string; hash: string | null; value: Record<string, unknown> | null; status: 'in_sync' | 'rejected'; code: number | null; refusedHash: string | null; updatedAt: Date }

/** What a device holds of its configuration, module by module. */
export function createDeviceConfigStateRepository(db: Queryable) {
  return {
    async held(deviceId: string): Promise<Map<string, HeldModule>> {
      const rows = await db.query<{ module: string; hash: string | null; value_text: string | null; status: 'in_sync' | 'rejected'; code: number | null; refused_hash: string | null; updated_at: Date }>(
        'SELECT module, hash, value_text, status, code, refused_hash, updated_at FROM device_config_state WHERE device_id = $1', [deviceId]);
      return new Map(rows.map((r) => [r.module, {
        module: r.module, hash: r.hash, value: r.value_text === null ? null : JSON.parse(r.value_text) as Record<string, unknown>,
        status: r.status, code: r.code, refusedHash: r.refused_hash, updatedAt: new Date(r.updated_at),
      }]));
    },
    /** `hash` and `value` are what the device holds once in sync, or the value it refused. */
    async record(deviceId: string, m: { module: string; hash: string; value: Record<string, unknown>; status: 'in_sync' | 'rejected'; code: number | null }, at: Date): Promise<void> {
      const inSync = m.status === 'in_sync';
      await db.query(
        `INSERT INTO device_config_state (device_id, module, hash, value_text, status, code, refused_hash, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (device_id, module) DO UPDATE SET
           hash = CASE WHEN EXCLUDED.status = 'in_sync' THEN EXCLUDED.hash ELSE device_config_state.hash END,
           value_text = CASE WHEN EXCLUDED.status = 'in_sync' THEN EXCLUDED.value_text ELSE device_config_state.value_text END,
           status = EXCLUDED.status, code = EXCLUDED.code, refused_hash = EXCLUDED.refused_hash, updated_at = EXCLUDED.updated_at`,
        [deviceId, m.module, inSync ? m.hash : null, inSync ? JSON.stringify(m.value) : null, m.status, m.code, inSync ? null : m.hash, at]);
    },
  };
}

export type DeviceConfigStateRepository = ReturnType<typeof createDeviceConfigStateRepository>;
