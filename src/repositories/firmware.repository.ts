import type { Queryable, Tx } from '../storage/db.js';
import type { DeviceClass, ReleaseState, TargetingFacts } from '../domain/firmware.js';

/** Who uploaded an image: the account of the token (a user, or a product's own token). */
export interface Uploader { kind: string; id: string }

/** A product firmware version as lists show it: everything but the image's bytes. */
export interface FirmwareRecord {
  productId: number;
  version: number;
  title: string;
  description: string;
  fileName: string;
  size: number;
  sha256: string;
  platformId: number;
  signature: Buffer | null;
  uploadedAt: Date;
  uploadedBy: Uploader;
  updatedAt: Date;
  productDefault: boolean;
  intelligent: boolean;
  releasedAt: Date | null;
  /** The groups the version is released to, by name. */
  groups: string[];
}

export type NewFirmware = Omit<FirmwareRecord, 'productDefault' | 'intelligent' | 'releasedAt' | 'groups'> & { image: Buffer };

interface Row {
  product_id: number | string; version: number; title: string; description: string; file_name: string; size: number; sha256: string;
  platform_id: number; signature: Buffer | null; uploaded_at: Date; uploaded_by_kind: string; uploaded_by_id: string; updated_at: Date;
  product_default: boolean; intelligent: boolean; released_at: Date | null; groups: string[] | null;
}

const COLUMNS = `f.product_id, f.version, f.title, f.description, f.file_name, f.size, f.sha256, f.platform_id, f.signature, f.uploaded_at,
  f.uploaded_by_kind, f.uploaded_by_id, f.updated_at, f.product_default, f.intelligent, f.released_at,
  ARRAY(SELECT g.name FROM device_groups g WHERE g.product_id = f.product_id AND g.firmware_version = f.version ORDER BY g.name) AS groups`;

const toRecord = (r: Row): FirmwareRecord => ({
  productId: Number(r.product_id), version: r.version, title: r.title, description: r.description, fileName: r.file_name, size: r.size,
  sha256: r.sha256, platformId: r.platform_id, signature: r.signature, uploadedAt: new Date(r.uploaded_at),
  uploadedBy: { kind: r.uploaded_by_kind, id: r.uploaded_by_id }, updatedAt: new Date(r.updated_at), productDefault: r.product_default,
  intelligent: r.intelligent, releasedAt: r.released_at === null ? null : new Date(r.released_at), groups: r.groups ?? [],
});

/**
 * The rollout that holds device `d` (of the query around it): the newest of its product that
 * started the device and still binds it (docs/firmware.md, "Staged rollouts").
 */
const HOLDING_ROLLOUT = `SELECT r.id, r.version FROM firmware_rollout_devices rd JOIN firmware_rollouts r ON r.id = rd.rollout_id
  WHERE rd.device_id = d.id AND rd.started_at IS NOT NULL AND NOT rd.dropped AND r.binds AND r.product_id = d.product_id
  ORDER BY r.id DESC LIMIT 1`;

/** What the node holding a device needs to send it its target (services/firmware/targets.ts). */
export interface ImageMeta { productId: number; version: number; size: number; sha256: string; signature: Buffer | null }

export function createFirmwareRepository(db: Queryable) {
  return {
    /** Stores a new version; false when the product has that version already. */
    async insert(f: NewFirmware, q: Queryable = db): Promise<boolean> {
      const rows = await q.query(
        `INSERT INTO product_firmware (product_id, version, title, description, file_name, size, sha256, image, platform_id, signature, uploaded_at, uploaded_by_kind, uploaded_by_id, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $11) ON CONFLICT (product_id, version) DO NOTHING RETURNING version`,
        [f.productId, f.version, f.title, f.description, f.fileName, f.size, f.sha256, f.image, f.platformId, f.signature, f.uploadedAt, f.uploadedBy.kind, f.uploadedBy.id]);
      return rows.length === 1;
    },

    async list(productId: number): Promise<FirmwareRecord[]> {
      const rows = await db.query<Row>(`SELECT ${COLUMNS} FROM product_firmware f WHERE f.product_id = $1 ORDER BY f.version DESC`, [productId]);
      return rows.map(toRecord);
    },

    /** One version; with `lock`, its row is held for the rest of the transaction (a release, a deletion). */
    async find(productId: number, version: number, q: Queryable = db, lock = false): Promise<FirmwareRecord | undefined> {
      const rows = await q.query<Row>(`SELECT ${COLUMNS} FROM product_firmware f WHERE f.product_id = $1 AND f.version = $2${lock ? ' FOR UPDATE' : ''}`, [productId, version]);
      return rows[0] && toRecord(rows[0]);
    },

    async image(productId: number, version: number, q: Queryable = db): Promise<Buffer | undefined> {
      const rows = await q.query<{ image: Buffer }>('SELECT image FROM product_firmware WHERE product_id = $1 AND version = $2', [productId, version]);
      return rows[0]?.image;
    },

    async update(productId: number, version: number, change: { title?: string; description?: string }, at: Date): Promise<boolean> {
      const rows = await db.query(
        `UPDATE product_firmware SET title = COALESCE($3, title), description = COALESCE($4, description), updated_at = $5
         WHERE product_id = $1 AND version = $2 RETURNING version`, [productId, version, change.title ?? null, change.description ?? null, at]);
      return rows.length === 1;
    },

    async delete(productId: number, version: number, tx: Tx): Promise<void> {
      await tx.query('DELETE FROM product_firmware WHERE product_id = $1 AND version = $2', [productId, version]);
    },

    /** How many of the product's devices are locked to a version. */
    async lockedTo(productId: number, version: number, q: Queryable = db): Promise<number> {
      const rows = await q.query<{ n: number | string }>('SELECT count(*) AS n FROM devices WHERE product_id = $1 AND desired_firmware_version = $2', [productId, version]);
      return Number(rows[0]?.n ?? 0);
    },

    /** How many of the product's devices run each version (by their last `hello`). */
    async deviceCounts(productId: number, q: Queryable = db): Promise<Map<number, number>> {
      const rows = await q.query<{ v: number; n: number | string }>(
        'SELECT firmware_version AS v, count(*) AS n FROM devices WHERE product_id = $1 AND firmware_version IS NOT NULL GROUP BY firmware_version', [productId]);
      return new Map(rows.map((r) => [r.v, Number(r.n)]));
    },

    /** The product's releases: its default, and each group's version (by group id). */
    async releaseState(productId: number, q: Queryable = db): Promise<ReleaseState> {
      const rows = await q.query<{ id: number | string | null; v: number | null }>(
        `SELECT NULL::bigint AS id, version AS v FROM product_firmware WHERE product_id = $1 AND product_default
         UNION ALL SELECT id, firmware_version FROM device_groups WHERE product_id = $1`, [productId]);
      const groups = new Map<number, number | null>();
      let productDefault: number | null = null;
      for (const r of rows) {
        if (r.id === null) productDefault = r.v;
        else groups.set(Number(r.id), r.v);
      }
      return { productDefault, groups };
    },

    /**
     * Releases a version (the caller holds its row): as the product default or no longer, to
     * exactly these groups (each group's earlier release replaced), how, and its signature when
     * the release brought one.
     */
    async release(productId: number, version: number, r: { productDefault: boolean; groupIds: number[]; intelligent: boolean; signature: Buffer | null }, at: Date, tx: Tx): Promise<void> {
      // The old default first: the unique index is checked row by row, not at the statement's end.
      await tx.query(`UPDATE product_firmware SET product_default = false WHERE product_id = $1 AND product_default AND ${r.productDefault ? 'version <> $2' : 'version = $2'}`, [productId, version]);
      if (r.productDefault) await tx.query('UPDATE product_firmware SET product_default = true WHERE product_id = $1 AND version = $2', [productId, version]);
      await tx.query('UPDATE device_groups SET firmware_version = NULL, updated_at = $4 WHERE product_id = $1 AND firmware_version = $2 AND NOT (id = ANY($3::bigint[]))', [productId, version, r.groupIds, at]);
      await tx.query('UPDATE device_groups SET firmware_version = $2, updated_at = $4 WHERE product_id = $1 AND id = ANY($3::bigint[])', [productId, version, r.groupIds, at]);
      const released = r.productDefault || r.groupIds.length > 0;
      await tx.query(
        `UPDATE product_firmware SET intelligent = $3, signature = COALESCE($4, signature), updated_at = $5,
           released_at = CASE WHEN $6::boolean THEN COALESCE(released_at, $5) ELSE released_at END
         WHERE product_id = $1 AND version = $2`, [productId, version, r.intelligent, r.signature, at, released]);
    },

    /** A rollout started with the version: it counts as released from now (it is never deleted). */
    async markReleased(productId: number, version: number, at: Date, tx: Tx): Promise<void> {
      await tx.query('UPDATE product_firmware SET released_at = COALESCE(released_at, $3) WHERE product_id = $1 AND version = $2', [productId, version, at]);
    },

    async signingKey(productId: number, q: Queryable = db): Promise<{ publicKey: Buffer; createdAt: Date } | undefined> {
      const rows = await q.query<{ public_key: Buffer; created_at: Date }>('SELECT public_key, created_at FROM product_signing_keys WHERE product_id = $1', [productId]);
      return rows[0] && { publicKey: rows[0].public_key, createdAt: new Date(rows[0].created_at) };
    },
    async setSigningKey(productId: number, publicKey: Buffer, at: Date): Promise<void> {
      await db.query(
        `INSERT INTO product_signing_keys (product_id, public_key, created_at) VALUES ($1, $2, $3)
         ON CONFLICT (product_id) DO UPDATE SET public_key = EXCLUDED.public_key, created_at = EXCLUDED.created_at`, [productId, publicKey, at]);
    },
    async deleteSigningKey(productId: number): Promise<boolean> {
      return (await db.query('DELETE FROM product_signing_keys WHERE product_id = $1 RETURNING product_id', [productId])).length === 1;
    },

    /**
     * What the version each device is given depends on (domain/firmware.ts, targetOf), for many
     * devices in one statement; devices outside a product are left out. `rolloutId`: the rollout
     * that holds the device, if any (its updates are counted as the rollout's).
     */
    async targetingFacts(deviceIds: readonly string[], q: Queryable = db): Promise<Map<string, TargetingFacts & { productId: number; rolloutId: number | null }>> {
      if (deviceIds.length === 0) return new Map();
      const rows = await q.query<{
        id: string; product_id: number | string; development: boolean; desired: number | null; versions: number[] | null; product_default: number | null;
        rollout_id: number | string | null; rollout_version: number | null;
      }>(
        `SELECT d.id, d.product_id, d.development, d.desired_firmware_version AS desired,
           ARRAY(SELECT g.firmware_version FROM device_group_members m JOIN device_groups g ON g.id = m.group_id
                 WHERE m.device_id = d.id AND g.firmware_version IS NOT NULL) AS versions,
           (SELECT f.version FROM product_firmware f WHERE f.product_id = d.product_id AND f.product_default) AS product_default,
           ro.id AS rollout_id, ro.version AS rollout_version
         FROM devices d LEFT JOIN LATERAL (${HOLDING_ROLLOUT}) ro ON true
         WHERE d.id = ANY($1::text[]) AND d.product_id IS NOT NULL`, [deviceIds], { prepare: true });
      return new Map(rows.map((r) => [r.id, {
        productId: Number(r.product_id), development: r.development, desiredFirmwareVersion: r.desired, groupVersions: r.versions ?? [], productDefault: r.product_default,
        rolloutVersion: r.rollout_version, rolloutId: r.rollout_id === null ? null : Number(r.rollout_id),
      }]));
    },

    /** The size, digest and signature of images, by product and version. */
    async imageMeta(wanted: ReadonlyArray<{ productId: number; version: number }>, q: Queryable = db): Promise<ImageMeta[]> {
      if (wanted.length === 0) return [];
      const rows = await q.query<{ product_id: number | string; version: number; size: number; sha256: string; signature: Buffer | null }>(
        `SELECT f.product_id, f.version, f.size, f.sha256, f.signature FROM product_firmware f
         JOIN unnest($1::bigint[], $2::int[]) AS w(product_id, version) ON f.product_id = w.product_id AND f.version = w.version`,
        [wanted.map((w) => w.productId), wanted.map((w) => w.version)], { prepare: true });
      return rows.map((r) => ({ productId: Number(r.product_id), version: r.version, size: r.size, sha256: r.sha256, signature: r.signature }));
    },

    /**
     * The product's devices folded into classes of the same facts (development, lock, version run,
     * groups) with their counts: a fleet of thousands makes a few rows, for the impact of a change.
     */
    async deviceClasses(productId: number, deviceIds?: readonly string[]): Promise<DeviceClass[]> {
      const rows = await db.query<{ development: boolean; desired: number | null; running: number | null; groups: Array<number | string> | null; n: number | string }>(
        `SELECT d.development, d.desired_firmware_version AS desired, d.firmware_version AS running,
           ARRAY(SELECT m.group_id FROM device_group_members m WHERE m.device_id = d.id ORDER BY m.group_id) AS groups, count(*) AS n
         FROM devices d WHERE d.product_id = $1${deviceIds ? ' AND d.id = ANY($2::text[])' : ''}
         GROUP BY 1, 2, 3, 4`, deviceIds ? [productId, deviceIds] : [productId]);
      return rows.map((r) => ({
        development: r.development, desiredFirmwareVersion: r.desired, running: r.running, groupIds: (r.groups ?? []).map(Number), count: Number(r.n),
      }));
    },

    /**
     * Whether the product has nothing a device view shows of firmware: no group, no default
     * release, no rollout that binds its devices (services/firmware/targets.ts keeps the answer).
     */
    async withoutViewFacts(productId: number): Promise<boolean> {
      const rows = await db.query<{ none: boolean }>(
        `SELECT NOT EXISTS (SELECT 1 FROM device_groups g WHERE g.product_id = $1)
           AND NOT EXISTS (SELECT 1 FROM product_firmware f WHERE f.product_id = $1 AND f.product_default)
           AND NOT EXISTS (SELECT 1 FROM firmware_rollouts r WHERE r.product_id = $1 AND r.binds) AS none`,
        [productId], { prepare: true });
      return rows[0]?.none === true;
    },

    /**
     * For device views: the groups of each device (with their releases), the default of each
     * product and the version of the rollout holding each device, in one statement.
     */
    async viewFacts(deviceIds: readonly string[], productIds: readonly number[]): Promise<{ groups: Map<string, Array<{ name: string; version: number | null }>>; defaults: Map<number, number>; rollouts: Map<string, number> }> {
      const rows = await db.query<{ kind: string; device_id: string | null; product_id: number | string; name: string | null; version: number | null }>(
        `SELECT 'g' AS kind, m.device_id, g.product_id, g.name, g.firmware_version AS version
           FROM device_group_members m JOIN device_groups g ON g.id = m.group_id WHERE m.device_id = ANY($1::text[])
         UNION ALL
         SELECT 'd', NULL, f.product_id, NULL, f.version FROM product_firmware f WHERE f.product_id = ANY($2::bigint[]) AND f.product_default
         UNION ALL
         SELECT 'r', d.id, d.product_id, NULL, ro.version FROM devices d CROSS JOIN LATERAL (${HOLDING_ROLLOUT}) ro WHERE d.id = ANY($1::text[])`,
        [deviceIds, productIds], { prepare: true });
      const groups = new Map<string, Array<{ name: string; version: number | null }>>();
      const defaults = new Map<number, number>();
      const rollouts = new Map<string, number>();
      for (const r of rows) {
        if (r.kind === 'd') defaults.set(Number(r.product_id), r.version as number);
        else if (r.kind === 'r') rollouts.set(r.device_id as string, r.version as number);
        else groups.set(r.device_id as string, [...(groups.get(r.device_id as string) ?? []), { name: r.name as string, version: r.version }]);
      }
      for (const list of groups.values()) list.sort((a, b) => a.name.localeCompare(b.name));
      return { groups, defaults, rollouts };
    },
  };
}

export type FirmwareRepository = ReturnType<typeof createFirmwareRepository>;
