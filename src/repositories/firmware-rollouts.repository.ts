import type { Queryable, Tx } from '../storage/db.js';
import { emptyProgress, type Progress, type ProgressState, type RolloutSpec, type RolloutState, type WaveSpec } from '../domain/firmware-rollouts.js';

/** A rollout as stored (migration 0015): what was asked for, and where it stands. */
export interface RolloutRecord extends Omit<RolloutSpec, 'waves'> {
  id: number;
  productId: number;
  /** The waves, with the last one the others left (`rest`). */
  waves: WaveSpec[];
  /** Devices of the target left out when it was made, by why. */
  excluded: Record<string, number>;
  state: RolloutState;
  reason: { code: string; message: string } | null;
  currentWave: number;
  errorsSince: Date;
  binds: boolean;
  createdBy: { kind: string; id: string };
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
}

export type NewRollout = Omit<RolloutRecord, 'id' | 'state' | 'reason' | 'currentWave' | 'binds' | 'updatedAt' | 'finishedAt'>;

interface Row {
  id: number | string; product_id: number | string; version: number; target_groups: string[] | null; waves: WaveSpec[]; rate_per_minute: number | null;
  success_percent: number | string; advance: 'auto' | 'manual'; error_count: number | null; error_percent: number | string | null; error_min_finished: number;
  excluded: Record<string, number>; state: RolloutState; reason_code: string | null; reason: string | null; current_wave: number; errors_since: Date;
  binds: boolean; created_by_kind: string; created_by_id: string; created_at: Date; updated_at: Date; finished_at: Date | null;
}

const COLUMNS = `id, product_id, version, target_groups, waves, rate_per_minute, success_percent, advance, error_count, error_percent, error_min_finished,
  excluded, state, reason_code, reason, current_wave, errors_since, binds, created_by_kind, created_by_id, created_at, updated_at, finished_at`;

const toRecord = (r: Row): RolloutRecord => ({
  id: Number(r.id), productId: Number(r.product_id), version: r.version, groups: r.target_groups, waves: r.waves, ratePerMinute: r.rate_per_minute,
  successPercent: Number(r.success_percent), advance: r.advance,
  errorThreshold: r.error_count === null && r.error_percent === null ? null : { count: r.error_count, percent: r.error_percent === null ? null : Number(r.error_percent), minFinished: r.error_min_finished },
  excluded: r.excluded, state: r.state, reason: r.reason_code === null ? null : { code: r.reason_code, message: r.reason ?? '' },
  currentWave: r.current_wave, errorsSince: new Date(r.errors_since), binds: r.binds, createdBy: { kind: r.created_by_kind, id: r.created_by_id },
  createdAt: new Date(r.created_at), updatedAt: new Date(r.updated_at), finishedAt: r.finished_at === null ? null : new Date(r.finished_at),
});

/** What a change of state writes (the columns not given stay). */
export interface RolloutChange {
  state?: RolloutState;
  reason?: { code: string; message: string } | null;
  currentWave?: number;
  errorsSince?: Date;
  binds?: boolean;
  finishedAt?: Date | null;
}

/**
 * A device's state in a rollout (domain PROGRESS_STATES), of rollout $1 (version $2, product $3):
 * a finished update first; a started device that runs the version without an update (it ran it
 * already) succeeded; one now a development device, locked or moved is left alone; then not
 * started; else where its update stands (none yet: pending, as an offline device is).
 */
const STATE = `CASE
    WHEN u.state IN ('succeeded', 'failed') THEN u.state
    WHEN rd.started_at IS NOT NULL AND u.state IS NULL AND d.firmware_version = $2 THEN 'succeeded'
    WHEN d.product_id IS DISTINCT FROM $3 OR d.development OR d.desired_firmware_version IS NOT NULL THEN 'excluded'
    WHEN rd.started_at IS NULL THEN 'not_started'
    ELSE COALESCE(u.state, 'pending') END`;

/** A product's devices as a rollout's target sees them: what their target depends on. */
export interface TargetedDevice { id: string; development: boolean; desired: number | null; groupIds: number[] }

/** Staged rollouts (migration 0015): the rollouts, their devices, their progress. */
export function createFirmwareRolloutsRepository(db: Queryable) {
  return {
    async insert(r: NewRollout, tx: Tx): Promise<number> {
      const rows = await tx.query<{ id: number | string }>(
        `INSERT INTO firmware_rollouts (product_id, version, target_groups, waves, rate_per_minute, success_percent, advance, error_count, error_percent,
           error_min_finished, excluded, state, errors_since, created_by_kind, created_by_id, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'running', $12, $13, $14, $15, $15) RETURNING id`,
        [r.productId, r.version, r.groups, JSON.stringify(r.waves), r.ratePerMinute, r.successPercent, r.advance, r.errorThreshold?.count ?? null,
          r.errorThreshold?.percent ?? null, r.errorThreshold?.minFinished ?? 1, JSON.stringify(r.excluded), r.errorsSince, r.createdBy.kind, r.createdBy.id, r.createdAt]);
      return Number(rows[0]?.id);
    },

    /** The devices of a new rollout, by wave and in the order they start. */
    async addMembers(rolloutId: number, members: ReadonlyArray<{ id: string; wave: number; position: number }>, tx: Tx): Promise<void> {
      for (let i = 0; i < members.length; i += 10_000) {
        const part = members.slice(i, i + 10_000);
        await tx.query(
          `INSERT INTO firmware_rollout_devices (rollout_id, device_id, wave, position)
           SELECT $1, * FROM unnest($2::text[], $3::int[], $4::int[])`, [rolloutId, part.map((m) => m.id), part.map((m) => m.wave), part.map((m) => m.position)]);
      }
    },

    /** The product's devices (or those in any of `groupIds`), with what their target depends on. */
    async targeted(productId: number, groupIds: number[] | null, tx: Tx): Promise<TargetedDevice[]> {
      const rows = await tx.query<{ id: string; development: boolean; desired: number | null; groups: Array<number | string> | null }>(
        `SELECT d.id, d.development, d.desired_firmware_version AS desired,
           ARRAY(SELECT m.group_id FROM device_group_members m WHERE m.device_id = d.id) AS groups
         FROM devices d WHERE d.product_id = $1${groupIds ? ' AND EXISTS (SELECT 1 FROM device_group_members m WHERE m.device_id = d.id AND m.group_id = ANY($2::bigint[]))' : ''}
         ORDER BY d.id`, groupIds ? [productId, groupIds] : [productId]);
      return rows.map((r) => ({ id: r.id, development: r.development, desired: r.desired, groupIds: (r.groups ?? []).map(Number) }));
    },

    /** One rollout of a product; with `lock`, its row is held for the rest of the transaction. */
    async find(productId: number, id: number, q: Queryable = db, lock = false): Promise<RolloutRecord | undefined> {
      const rows = await q.query<Row>(`SELECT ${COLUMNS} FROM firmware_rollouts WHERE product_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`, [productId, id]);
      return rows[0] && toRecord(rows[0]);
    },

    async list(productId: number): Promise<RolloutRecord[]> {
      const rows = await db.query<Row>(`SELECT ${COLUMNS} FROM firmware_rollouts WHERE product_id = $1 ORDER BY id DESC`, [productId]);
      return rows.map(toRecord);
    },

    /** The product's rollout under way (running or paused), if any. */
    async live(productId: number, q: Queryable = db): Promise<number | null> {
      const rows = await q.query<{ id: number | string }>(`SELECT id FROM firmware_rollouts WHERE product_id = $1 AND state IN ('running', 'paused')`, [productId]);
      return rows[0] ? Number(rows[0].id) : null;
    },

    /** The running rollouts of every product, for the leader's tick. */
    async running(): Promise<Array<{ id: number; productId: number }>> {
      const rows = await db.query<{ id: number | string; product_id: number | string }>(`SELECT id, product_id FROM firmware_rollouts WHERE state = 'running' ORDER BY id`);
      return rows.map((r) => ({ id: Number(r.id), productId: Number(r.product_id) }));
    },

    /**
     * A rollout's devices counted by wave and state, and the updates finished (and failed) since
     * `since` (its error threshold counts those).
     */
    async progress(r: Pick<RolloutRecord, 'id' | 'version' | 'productId'>, waves: number, since: Date, q: Queryable = db): Promise<{ waves: Progress[]; recent: { failed: number; finished: number } }> {
      const rows = await q.query<{ wave: number; state: ProgressState; n: number | string; recent: number | string }>(
        `SELECT rd.wave, ${STATE} AS state, count(*) AS n, count(*) FILTER (WHERE u.finished_at >= $4) AS recent
         FROM firmware_rollout_devices rd JOIN devices d ON d.id = rd.device_id
         LEFT JOIN firmware_updates u ON u.device_id = rd.device_id AND u.version = $2 AND u.rollout_id = $1
         WHERE rd.rollout_id = $1 GROUP BY 1, 2`, [r.id, r.version, r.productId, since]);
      const out = Array.from({ length: waves }, emptyProgress);
      const recent = { failed: 0, finished: 0 };
      for (const row of rows) {
        const p = out[row.wave];
        if (p) p[row.state] += Number(row.n);
        if (row.state === 'failed') recent.failed += Number(row.recent);
        if (row.state === 'failed' || row.state === 'succeeded') recent.finished += Number(row.recent);
      }
      return { waves: out, recent };
    },

    /** Devices the rollout started after `since` (its rate counts those). */
    async startedSince(rolloutId: number, since: Date, tx: Tx): Promise<number> {
      const rows = await tx.query<{ n: number | string }>('SELECT count(*) AS n FROM firmware_rollout_devices WHERE rollout_id = $1 AND started_at > $2', [rolloutId, since]);
      return Number(rows[0]?.n ?? 0);
    },

    /**
     * Starts the next `limit` devices of waves up to `wave`, in their order, skipping those now
     * left alone (development, locked, moved): one statement, so a device is started once.
     */
    async start(r: Pick<RolloutRecord, 'id' | 'productId'>, wave: number, limit: number, at: Date, tx: Tx): Promise<string[]> {
      const rows = await tx.query<{ device_id: string }>(
        `UPDATE firmware_rollout_devices rd SET started_at = $4
         FROM (SELECT n.device_id FROM firmware_rollout_devices n JOIN devices d ON d.id = n.device_id
               WHERE n.rollout_id = $1 AND n.started_at IS NULL AND n.wave <= $2
                 AND d.product_id = $5 AND NOT d.development AND d.desired_firmware_version IS NULL
               ORDER BY n.wave, n.position LIMIT $3) s
         WHERE rd.rollout_id = $1 AND rd.device_id = s.device_id AND rd.started_at IS NULL
         RETURNING rd.device_id`, [r.id, wave, limit, at, r.productId]);
      return rows.map((x) => x.device_id);
    },

    /**
     * Online devices the rollout started before `before` whose update has not begun: a node that
     * died between the start's commit and its notice told nobody (they are told again).
     */
    async untold(r: Pick<RolloutRecord, 'id' | 'version'>, before: Date, tx: Tx): Promise<string[]> {
      const rows = await tx.query<{ device_id: string }>(
        `SELECT rd.device_id FROM firmware_rollout_devices rd JOIN devices d ON d.id = rd.device_id
         WHERE rd.rollout_id = $1 AND rd.started_at < $3 AND NOT rd.dropped AND d.online AND d.firmware_version IS DISTINCT FROM $2
           AND NOT d.development AND d.desired_firmware_version IS NULL
           AND NOT EXISTS (SELECT 1 FROM firmware_updates u WHERE u.device_id = rd.device_id AND u.version = $2 AND u.rollout_id = $1)
         LIMIT 10000`, [r.id, r.version, before]);
      return rows.map((x) => x.device_id);
    },

    async update(id: number, c: RolloutChange, at: Date, tx: Tx): Promise<void> {
      await tx.query(
        `UPDATE firmware_rollouts SET
           state = COALESCE($2, state),
           reason_code = CASE WHEN $3::boolean THEN $4 ELSE reason_code END, reason = CASE WHEN $3::boolean THEN $5 ELSE reason END,
           current_wave = COALESCE($6, current_wave), errors_since = COALESCE($7, errors_since), binds = COALESCE($8, binds),
           finished_at = CASE WHEN $9::boolean THEN $10 ELSE finished_at END, updated_at = $11
         WHERE id = $1`,
        [id, c.state ?? null, c.reason !== undefined, c.reason?.code ?? null, c.reason?.message ?? null, c.currentWave ?? null, c.errorsSince ?? null,
          c.binds ?? null, c.finishedAt !== undefined, c.finishedAt ?? null, at]);
    },

    /**
     * An abort: the started devices whose update has not reached the device whole (not applying,
     * not succeeded, not running the version) follow the releases again; their updates waiting or
     * cut count failed (`aborted`). Answers those devices.
     */
    async drop(r: Pick<RolloutRecord, 'id' | 'version'>, at: Date, tx: Tx): Promise<string[]> {
      const rows = await tx.query<{ device_id: string }>(
        `UPDATE firmware_rollout_devices rd SET dropped = true
         WHERE rd.rollout_id = $1 AND rd.started_at IS NOT NULL AND NOT rd.dropped
           AND NOT EXISTS (SELECT 1 FROM devices d WHERE d.id = rd.device_id AND d.firmware_version = $2)
           AND NOT EXISTS (SELECT 1 FROM firmware_updates u WHERE u.device_id = rd.device_id AND u.version = $2 AND u.rollout_id = $1 AND u.state IN ('applying', 'succeeded'))
         RETURNING rd.device_id`, [r.id, r.version]);
      await tx.query(
        `UPDATE firmware_updates SET state = 'failed', error = 'aborted', finished_at = $3, updated_at = $3
         WHERE rollout_id = $1 AND version = $2 AND state IN ('pending', 'downloading')`, [r.id, r.version, at]);
      return rows.map((x) => x.device_id);
    },

    /**
     * A release of the product (or a rollout's completion) takes over the devices that aborted
     * rollouts had updated: they follow the releases again. Answers those devices.
     */
    async unbindAborted(productId: number, tx: Tx): Promise<string[]> {
      const rows = await tx.query<{ device_id: string }>(
        `WITH ended AS (UPDATE firmware_rollouts SET binds = false WHERE product_id = $1 AND state = 'aborted' AND binds RETURNING id)
         SELECT rd.device_id FROM firmware_rollout_devices rd JOIN ended e ON e.id = rd.rollout_id WHERE rd.started_at IS NOT NULL AND NOT rd.dropped`, [productId]);
      return rows.map((x) => x.device_id);
    },
  };
}

export type FirmwareRolloutsRepository = ReturnType<typeof createFirmwareRolloutsRepository>;
