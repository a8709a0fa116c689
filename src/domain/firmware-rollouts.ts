import { DomainError } from './errors.js';
import { parseGroupNames, targetVersion, validateGroupName, type TargetingFacts } from './firmware.js';

/**
 * Staged rollouts of product firmware (docs/firmware.md, "Staged rollouts") as pure rules: what a
 * rollout request may say, how the targeted devices fall into waves, and what a tick of the
 * leader does with a rollout's progress. No I/O.
 */

export const ROLLOUT_STATES = ['running', 'paused', 'aborted', 'completed'] as const;
export type RolloutState = (typeof ROLLOUT_STATES)[number];

/** Where a started device's update stands, and the devices not started yet or left alone. */
export const PROGRESS_STATES = ['not_started', 'pending', 'downloading', 'applying', 'succeeded', 'failed', 'excluded'] as const;
export type ProgressState = (typeof PROGRESS_STATES)[number];
export type Progress = Record<ProgressState, number>;

export const MAX_WAVES = 20;
export const MAX_RATE_PER_MINUTE = 1_000_000;

/** A wave as asked for: a share of the targeted devices, a count, a group; `rest` is the wave the others leave. */
export type WaveSpec = { percent: number } | { count: number } | { group: string } | { rest: true };

export interface ErrorThreshold {
  /** Pauses once this many updates have failed. */
  count: number | null;
  /** Pauses once this share (in %) of the finished updates failed. */
  percent: number | null;
  /** Neither applies before this many updates finished (succeeded or failed). */
  minFinished: number;
}

export interface RolloutSpec {
  version: number;
  /** null: the fleet; else these groups' devices. */
  groups: string[] | null;
  waves: WaveSpec[];
  /** Devices started per minute, at most; null: a wave's devices all at once. */
  ratePerMinute: number | null;
  /** The share (in %) of a wave's devices that must have succeeded before the next starts. */
  successPercent: number;
  advance: 'auto' | 'manual';
  errorThreshold: ErrorThreshold | null;
}

const bad = (message: string) => new DomainError('invalid_request', message);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function wholeNumber(v: unknown, field: string, min: number, max: number): number {
  const n = typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) throw bad(`${field} must be a whole number from ${min} to ${max}`);
  return n;
}

function share(v: unknown, field: string, min: number): number {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v.trim().replace(/%$/, '')) : v;
  if (typeof n !== 'number' || !Number.isFinite(n) || n < min || n > 100) throw bad(`${field} must be a share in % from ${min} to 100`);
  return n;
}

/** One wave of a request: `{percent}`, `{count}` or `{group}`, or the CLI's short forms `10%`, `25`, `group:beta`. */
export function parseWave(v: unknown, field: string): WaveSpec {
  if (typeof v === 'string') {
    const s = v.trim();
    if (s.endsWith('%')) return { percent: share(s, field, 0.001) };
    if (s.startsWith('group:')) return { group: validateGroupName(s.slice(6), field) };
    return { count: wholeNumber(s, field, 1, 10_000_000) };
  }
  if (!isObject(v)) throw bad(`${field} must be {"percent": n}, {"count": n} or {"group": "name"}`);
  const keys = Object.keys(v);
  if (keys.length !== 1) throw bad(`${field} must have exactly one of percent, count or group`);
  if ('percent' in v) return { percent: share(v.percent, `${field}.percent`, 0.001) };
  if ('count' in v) return { count: wholeNumber(v.count, `${field}.count`, 1, 10_000_000) };
  if ('group' in v) return { group: validateGroupName(v.group, `${field}.group`) };
  throw bad(`${field} must be {"percent": n}, {"count": n} or {"group": "name"}`);
}

function parseErrorThreshold(v: unknown): ErrorThreshold | null {
  if (v === undefined || v === null) return null;
  if (!isObject(v)) throw bad('error_threshold must be {"count": n} or {"percent": n}, with "min_finished" when wanted');
  const unknown = Object.keys(v).filter((k) => !['count', 'percent', 'min_finished'].includes(k));
  if (unknown.length > 0) throw bad(`error_threshold has no field ${unknown.map((k) => `"${k.slice(0, 40)}"`).join(', ')}: it takes count, percent and min_finished`);
  const count = v.count === undefined || v.count === null ? null : wholeNumber(v.count, 'error_threshold.count', 1, 10_000_000);
  const percent = v.percent === undefined || v.percent === null ? null : share(v.percent, 'error_threshold.percent', 0.001);
  if (count === null && percent === null) throw bad('error_threshold needs count (failures that pause the rollout) or percent (the share of finished updates that failed)');
  const minFinished = v.min_finished === undefined || v.min_finished === null ? 1 : wholeNumber(v.min_finished, 'error_threshold.min_finished', 1, 10_000_000);
  return { count, percent, minFinished };
}

/**
 * A rollout request (POST …/firmware/rollouts, or `rollout` of PUT …/firmware/release, whose
 * version and groups it is given): checked whole before anything is read or written.
 */
export function parseRolloutSpec(body: Record<string, unknown>, version: number, groups: string[] | null): RolloutSpec {
  const given = body.waves ?? [{ percent: 100 }];
  if (!Array.isArray(given) || given.length === 0 || given.length > MAX_WAVES) throw bad(`waves must be a list of 1 to ${MAX_WAVES} waves, each {"percent": n}, {"count": n} or {"group": "name"}`);
  const waves = given.map((w, i) => parseWave(w, `waves[${i}]`));
  const rate = body.rate_per_minute;
  const ratePerMinute = rate === undefined || rate === null ? null : wholeNumber(rate, 'rate_per_minute', 1, MAX_RATE_PER_MINUTE);
  const successPercent = body.success_threshold === undefined || body.success_threshold === null ? 100 : share(body.success_threshold, 'success_threshold', 0);
  const advance = body.advance === undefined || body.advance === null ? 'auto' : body.advance;
  if (advance !== 'auto' && advance !== 'manual') throw bad('advance must be "auto" (the next wave starts once the success threshold is met) or "manual" (a person starts it)');
  return { version, groups, waves, ratePerMinute, successPercent, advance, errorThreshold: parseErrorThreshold(body.error_threshold) };
}

/** The `groups` of a rollout request: absent or empty for the fleet. */
export function parseRolloutGroups(value: unknown): string[] | null {
  const names = parseGroupNames(value);
  return names.length === 0 ? null : names;
}

/** Why a targeted device is left out of a rollout (Particle's rules, or a release that would win over it). */
export type Exclusion = 'development' | 'locked' | 'other_release';

/**
 * Whether a device of the rollout's target takes part: development and locked devices never do;
 * nor one that the version, once released to the target, would not reach (a group release wins
 * over the product default; another group of its may have a higher version).
 */
export function exclusionOf(after: TargetingFacts, version: number): Exclusion | null {
  if (after.development) return 'development';
  if (after.desiredFirmwareVersion !== null) return 'locked';
  return targetVersion(after) === version ? null : 'other_release';
}

/**
 * The waves' devices: each wave takes, in order, from the devices no earlier wave took (already
 * in a random order): a share of all of them (rounded up), a count, or those in a group. What the
 * waves leave forms a last wave (`rest`), so that a rollout always reaches its whole target.
 */
export function assignWaves(devices: ReadonlyArray<{ id: string; groups: readonly string[] }>, waves: readonly WaveSpec[]): { waves: WaveSpec[]; members: Array<{ id: string; wave: number; position: number }> } {
  const left = new Set(devices.map((d) => d.id));
  const groupsOf = new Map(devices.map((d) => [d.id, d.groups]));
  const members: Array<{ id: string; wave: number; position: number }> = [];
  const take = (ids: string[], wave: number) => {
    for (const id of ids) {
      left.delete(id);
      members.push({ id, wave, position: members.length });
    }
  };
  const total = devices.length;
  const out = waves.filter((w) => !('rest' in w));
  out.forEach((w, wave) => {
    const order = [...left];
    if ('percent' in w) take(order.slice(0, Math.ceil((w.percent * total) / 100 - 1e-9)), wave);
    else if ('count' in w) take(order.slice(0, w.count), wave);
    else if ('group' in w) take(order.filter((id) => groupsOf.get(id)?.includes(w.group)), wave);
  });
  if (left.size > 0) {
    out.push({ rest: true });
    take([...left], out.length - 1);
  }
  return { waves: out, members };
}

export const emptyProgress = (): Progress => ({ not_started: 0, pending: 0, downloading: 0, applying: 0, succeeded: 0, failed: 0, excluded: 0 });

/** The devices a wave counts: all but those left alone (development, locked, moved). */
export const waveSize = (p: Progress): number => PROGRESS_STATES.reduce((n, s) => n + (s === 'excluded' ? 0 : p[s]), 0);

/** Whether a wave's succeeded share has reached the threshold (an empty wave has). */
export function waveSucceeded(p: Progress, successPercent: number): boolean {
  const size = waveSize(p);
  return size === 0 || p.succeeded * 100 >= successPercent * size;
}

/** The error threshold reached by the updates finished since it counts from, or null; the reason said when it pauses. */
export function errorThresholdReached(t: ErrorThreshold | null, recent: { failed: number; finished: number }): string | null {
  if (!t || recent.finished < t.minFinished || recent.failed === 0) return null;
  const of = `${recent.failed} of ${recent.finished} finished update${recent.finished === 1 ? '' : 's'} failed`;
  if (t.count !== null && recent.failed >= t.count) return `${of}: the error threshold is ${t.count} failure${t.count === 1 ? '' : 's'}`;
  if (t.percent !== null && recent.failed * 100 >= t.percent * recent.finished) return `${of}: the error threshold is ${t.percent} %`;
  return null;
}

/** What a tick does with a running rollout. */
export type TickDecision =
  | { kind: 'pause'; reason: string }
  | { kind: 'complete' }
  /** Start devices of waves up to `wave` (advanced from the current one by the waves `started`). */
  | { kind: 'run'; wave: number; started: number[] };

/**
 * A running rollout's next step from its progress: paused when the error threshold is reached;
 * else the current wave is succeeded enough (its share at the threshold) and the next starts by
 * itself (`auto`; an empty wave is passed at once), or completed after the last; else it runs on.
 */
export function decide(r: { currentWave: number; successPercent: number; advance: 'auto' | 'manual'; errorThreshold: ErrorThreshold | null }, waves: readonly Progress[], recent: { failed: number; finished: number }): TickDecision {
  const reason = errorThresholdReached(r.errorThreshold, recent);
  if (reason) return { kind: 'pause', reason };
  let wave = r.currentWave;
  const started: number[] = [];
  while (waveSucceeded(waves[wave] ?? emptyProgress(), r.successPercent)) {
    if (wave >= waves.length - 1) return { kind: 'complete' };
    if (r.advance === 'manual') break;
    wave += 1;
    started.push(wave);
  }
  return { kind: 'run', wave, started };
}
