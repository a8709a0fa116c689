import { Type, type Static } from '@sinclair/typebox';
import { emptyProgress, PROGRESS_STATES, waveSize, waveSucceeded, type Progress } from '../../../domain/firmware-rollouts.js';
import type { RolloutRecord } from '../../../repositories/firmware-rollouts.repository.js';

const S = Type.String();
const I = Type.Integer();
const N = Type.Number();
const nullable = <T extends ReturnType<typeof Type.Object> | ReturnType<typeof Type.String> | ReturnType<typeof Type.Integer> | ReturnType<typeof Type.Number>>(t: T) =>
  Type.Unsafe<Static<T> | null>({ ...t, nullable: true });

const ProgressSchema = Type.Object(Object.fromEntries(PROGRESS_STATES.map((s) => [s, I])) as Record<(typeof PROGRESS_STATES)[number], typeof I>, {
  description: 'Devices by state: not_started (its wave has not reached it), pending (started; its update waits, or the device is offline), downloading, applying, succeeded, failed, excluded (now a development device, locked, or moved out of the product)',
});

/** A rollout as the API answers it (schema `FirmwareRollout`, docs/firmware.md, "Staged rollouts"). */
export const RolloutViewSchema = Type.Object({
  id: I, product_id: I, version: I,
  fleet: Type.Boolean({ description: 'The whole fleet is the target (else `groups`)' }),
  groups: Type.Array(S, { description: 'The target groups (empty for the fleet)' }),
  state: Type.Union([Type.Literal('running'), Type.Literal('paused'), Type.Literal('aborted'), Type.Literal('completed')]),
  reason: nullable(Type.Object({ code: Type.String({ description: 'error_threshold, paused, aborted, completed, manual' }), message: S })),
  current_wave: Type.Integer({ description: 'The wave under way, from 1' }),
  awaiting_advance: Type.Boolean({ description: 'advance is manual and the current wave has met its success threshold: POST …/next starts the next' }),
  waves: Type.Array(Type.Object({
    wave: I,
    percent: Type.Optional(N), count: Type.Optional(I), group: Type.Optional(S), rest: Type.Optional(Type.Boolean({ description: 'The devices the waves given left' })),
    devices: Type.Integer({ description: 'Devices in the wave, excluded ones too' }),
    state: Type.Union([Type.Literal('waiting'), Type.Literal('current'), Type.Literal('done')]),
    succeeded_share: Type.Number({ description: 'Succeeded devices in % of the wave (excluded ones left out)' }),
    progress: ProgressSchema,
  })),
  progress: ProgressSchema,
  excluded: Type.Object({ development: I, locked: I, other_release: I }, { description: 'Targeted devices left out when it started: development devices, locked devices, and devices a release of their groups keeps on another version' }),
  rate_per_minute: nullable(I),
  success_threshold: N,
  advance: Type.Union([Type.Literal('auto'), Type.Literal('manual')]),
  error_threshold: nullable(Type.Object({ count: nullable(I), percent: nullable(N), min_finished: I })),
  created_by: Type.Object({ kind: S, id: S }),
  created_at: S, updated_at: S, finished_at: nullable(S),
}, { $id: 'FirmwareRollout' });

export type RolloutView = Static<typeof RolloutViewSchema>;

const round = (n: number) => Math.round(n * 10) / 10;

/** The answer for a rollout and its progress by wave (repo.progress). */
export function rolloutView(r: RolloutRecord, waves: readonly Progress[]): RolloutView {
  const total = emptyProgress();
  for (const p of waves) for (const s of PROGRESS_STATES) total[s] += p[s];
  const current = waves[r.currentWave] ?? emptyProgress();
  const last = r.currentWave >= r.waves.length - 1;
  return {
    id: r.id, product_id: r.productId, version: r.version, fleet: r.groups === null, groups: r.groups ?? [],
    state: r.state, reason: r.reason, current_wave: r.currentWave + 1,
    awaiting_advance: r.state === 'running' && r.advance === 'manual' && !last && waveSucceeded(current, r.successPercent),
    waves: r.waves.map((w, i) => {
      const p = waves[i] ?? emptyProgress();
      const size = waveSize(p);
      return {
        wave: i + 1, ...w, devices: size + p.excluded,
        state: i < r.currentWave || r.state === 'completed' ? 'done' as const : i === r.currentWave ? 'current' as const : 'waiting' as const,
        succeeded_share: size === 0 ? 100 : round((p.succeeded * 100) / size), progress: p,
      };
    }),
    progress: total,
    excluded: { development: r.excluded.development ?? 0, locked: r.excluded.locked ?? 0, other_release: r.excluded.other_release ?? 0 },
    rate_per_minute: r.ratePerMinute, success_threshold: r.successPercent, advance: r.advance,
    error_threshold: r.errorThreshold && { count: r.errorThreshold.count, percent: r.errorThreshold.percent, min_finished: r.errorThreshold.minFinished },
    created_by: r.createdBy, created_at: r.createdAt.toISOString(), updated_at: r.updatedAt.toISOString(), finished_at: r.finishedAt?.toISOString() ?? null,
  };
}
