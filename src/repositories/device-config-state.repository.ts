import type { Queryable } from '../storage/db.js';

export interface HeldModule { module: string; hash: string | null; value: Record<string, unknown> | null; status: 'in_sync' | 'rejected'; code: number | null; updatedAt: Date }

/** What a device holds of its configuration, module by module. */
export function createDeviceConfigStateRepository(db: Queryable) {
  return {
    async held(deviceId: string): Promise<Map<string, HeldModule>> {
      const rows = await db.query<{ module: string; hash: string | null; value_text: string | null; status: 'in_sync' | 'rejected'; code: number | null; updated_at: Date }>(
        'SELECT module, hash, value_text, status, code, updated_at FROM device_config_state WHERE device_id = $1', [deviceId]);
      return new Map(rows.map((r) => [r.module, {
        module: r.module, hash: r.hash, value: r.value_text === null ? null : JSON.parse(r.value_text) as Record<string, unknown>,
        status: r.status, code: r.code, updatedAt: new Date(r.updated_at),
      }]));
    },
    async record(deviceId: string, m: { module: string; hash: string | null; value: Record<string, unknown> | null; status: 'in_sync' | 'rejected'; code: number | null }, at: Date): Promise<void> {
      await db.query(
        `INSERT INTO device_config_state (device_id, module, hash, value_text, status, code, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (device_id, module) DO UPDATE SET
           hash = CASE WHEN EXCLUDED.status = 'in_sync' THEN EXCLUDED.hash ELSE device_config_state.hash END,
           value_text = CASE WHEN EXCLUDED.status = 'in_sync' THEN EXCLUDED.value_text ELSE device_config_state.value_text END,
           status = EXCLUDED.status, code = EXCLUDED.code, updated_at = EXCLUDED.updated_at`,
        [deviceId, m.module, m.hash, m.value === null ? null : JSON.stringify(m.value), m.status, m.code, at]);
    },
  };
}

export type DeviceConfigStateRepository = ReturnType<typeof createDeviceConfigStateRepository>;
