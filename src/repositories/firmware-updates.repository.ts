import type { Queryable } from '../storage/db.js';
import type { UpdateRecord, UpdateState } from '../domain/firmware-updates.js';

type Row = {
  device_id: string; version: number; product_id: number | string; state: UpdateState; size: number | string; bytes_sent: number | string;
  offset_bytes: number | string; error: string | null; rollout_id: number | string | null; started_at: Date | null; finished_at: Date | null; updated_at: Date;
};
const COLUMNS = 'device_id, version, product_id, state, size, bytes_sent, offset_bytes, error, rollout_id, started_at, finished_at, updated_at';

const date = (d: Date | null) => (d === null ? null : new Date(d));
const toRecord = (r: Row): UpdateRecord => ({
  deviceId: r.device_id, version: Number(r.version), productId: Number(r.product_id), state: r.state, size: Number(r.size),
  bytesSent: Number(r.bytes_sent), offset: Number(r.offset_bytes), error: r.error, rolloutId: r.rollout_id === null ? null : Number(r.rollout_id),
  startedAt: date(r.started_at), finishedAt: date(r.finished_at), updatedAt: new Date(r.updated_at),
});

/** What an update of a device depends on, besides the version it should run. */
export interface UpdatingDevice {
  id: string;
  productId: number | null;
  firmwareVersion: number | null;
  updatesEnabled: boolean;
  updatesForced: boolean;
  /** Its newest update, if any. */
  newest: UpdateRecord | null;
}

/** Firmware updates of devices (migration 0014) and the device columns they read and write. */
export function createFirmwareUpdatesRepository(db: Queryable) {
  return {
    /** Devices that said `hello` together, with their newest update, in one read. */
    async devices(ids: string[]): Promise<UpdatingDevice[]> {
      if (ids.length === 0) return [];
      const rows = await db.query<Partial<Row> & { id: string; dev_product: number | string | null; firmware_version: number | null; firmware_updates_enabled: boolean; firmware_updates_forced: boolean }>(
        `SELECT d.id, d.product_id AS dev_product, d.firmware_version, d.firmware_updates_enabled, d.firmware_updates_forced, u.*
         FROM devices d LEFT JOIN LATERAL (
           SELECT ${COLUMNS} FROM firmware_updates u WHERE u.device_id = d.id ORDER BY u.updated_at DESC, u.version DESC LIMIT 1
         ) u ON true
         WHERE d.id = ANY($1::text[])`, [ids]);
      return rows.map((r) => ({
        id: r.id, productId: r.dev_product === null ? null : Number(r.dev_product), firmwareVersion: r.firmware_version,
        updatesEnabled: r.firmware_updates_enabled, updatesForced: r.firmware_updates_forced,
        newest: r.device_id ? toRecord(r as Row) : null,
      }));
    },

    /** A device's newest update. */
    async newest(deviceId: string): Promise<UpdateRecord | null> {
      const rows = await db.query<Row>(`SELECT ${COLUMNS} FROM firmware_updates WHERE device_id = $1 ORDER BY updated_at DESC, version DESC LIMIT 1`, [deviceId]);
      return rows[0] ? toRecord(rows[0]) : null;
    },

    /**
     * Stores many updates' states in one statement; for one device and version the last of the
     * batch wins (ON CONFLICT may not touch a row twice). A rollout id once set stays.
     */
    async write(records: UpdateRecord[]): Promise<void> {
      if (records.length === 0) return;
      const list = [...new Map(records.map((r) => [`${r.deviceId}/${r.version}`, r])).values()];
      await db.query(
        `INSERT INTO firmware_updates (${COLUMNS})
         SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[], $4::text[], $5::bigint[], $6::bigint[], $7::bigint[], $8::text[], $9::bigint[], $10::timestamptz[], $11::timestamptz[], $12::timestamptz[])
         ON CONFLICT (device_id, version) DO UPDATE SET
           product_id = EXCLUDED.product_id, state = EXCLUDED.state, size = EXCLUDED.size, bytes_sent = EXCLUDED.bytes_sent,
           offset_bytes = EXCLUDED.offset_bytes, error = EXCLUDED.error, rollout_id = COALESCE(EXCLUDED.rollout_id, firmware_updates.rollout_id),
           started_at = EXCLUDED.started_at, finished_at = EXCLUDED.finished_at, updated_at = EXCLUDED.updated_at`,
        [list.map((r) => r.deviceId), list.map((r) => r.version), list.map((r) => r.productId), list.map((r) => r.state), list.map((r) => r.size),
          list.map((r) => r.bytesSent), list.map((r) => r.offset), list.map((r) => r.error), list.map((r) => r.rolloutId),
          list.map((r) => r.startedAt), list.map((r) => r.finishedAt), list.map((r) => r.updatedAt)]);
    },

    /**
     * Whether devices take updates now, as their `hello` said; answers those whose stored value
     * changed (their owners hear of it), so that two nodes never both announce one change.
     */
    async setUpdatesEnabled(changes: Array<{ id: string; enabled: boolean }>): Promise<string[]> {
      if (changes.length === 0) return [];
      const last = [...new Map(changes.map((c) => [c.id, c])).values()];
      const rows = await db.query<{ id: string }>(
        `UPDATE devices d SET firmware_updates_enabled = c.enabled
         FROM unnest($1::text[], $2::boolean[]) AS c(id, enabled)
         WHERE d.id = c.id AND d.firmware_updates_enabled <> c.enabled
         RETURNING d.id`, [last.map((c) => c.id), last.map((c) => c.enabled)]);
      return rows.map((r) => r.id);
    },

    /** Updates whose device said `done` before `cutoff` and has not come back: failed, answered. */
    async expireApplying(cutoff: Date, now: Date, error: string): Promise<UpdateRecord[]> {
      const rows = await db.query<Row>(
        `UPDATE firmware_updates SET state = 'failed', error = $3, finished_at = $2, updated_at = $2
         WHERE state = 'applying' AND updated_at < $1
         RETURNING ${COLUMNS}`, [cutoff, now, error]);
      return rows.map(toRecord);
    },

    /** A product's updates counted by version and state. */
    async counts(productId: number): Promise<Array<{ version: number; state: UpdateState; count: number }>> {
      const rows = await db.query<{ version: number; state: UpdateState; count: number | string }>(
        'SELECT version, state, count(*) AS count FROM firmware_updates WHERE product_id = $1 GROUP BY version, state ORDER BY version, state', [productId]);
      return rows.map((r) => ({ version: Number(r.version), state: r.state, count: Number(r.count) }));
    },
  };
}

export type FirmwareUpdatesRepository = ReturnType<typeof createFirmwareUpdatesRepository>;
