import type { Progress, Rollout, Wave } from '../api/rollouts.js';
import { plural } from './words.js';

export type ProgressState = keyof Progress;
/** A rollout's device states in the order a person reads them, with their words (the bars' order too). */
export const PROGRESS_STATES: Array<[ProgressState, string]> = [
  ['succeeded', 'updated'], ['applying', 'applying it'], ['downloading', 'downloading'], ['pending', 'started, waiting'],
  ['failed', 'failed'], ['not_started', 'not started'], ['excluded', 'left alone'],
];

export const totalOf = (p: Progress): number => PROGRESS_STATES.reduce((sum, [s]) => sum + p[s], 0);

/** "5 devices: 3 updated, 1 failed, 1 not started": the states that have devices. */
export function progressInWords(p: Progress): string {
  const parts = PROGRESS_STATES.filter(([s]) => p[s] > 0).map(([s, words]) => `${p[s]} ${words}`);
  const total = totalOf(p);
  return parts.length > 0 ? `${plural(total, 'device')}: ${parts.join(', ')}` : 'no devices';
}

/** Where the rollout gives the version: the fleet, or its groups. */
export const targetInWords = (r: Pick<Rollout, 'fleet' | 'groups'>): string =>
  r.fleet ? 'the fleet' : `${r.groups.length === 1 ? 'group' : 'groups'} ${r.groups.join(', ')}`;

/** "Wave 2 (10 %)", "Wave 1 (group canary)", "Wave 3 (the rest)". */
export function waveName(w: Wave): string {
  const what = w.group !== undefined ? `group ${w.group}` : w.percent !== undefined ? `${w.percent} %` : w.count !== undefined ? plural(w.count, 'device') : 'the rest';
  return `Wave ${w.wave} (${what})`;
}

/** What the state of a rollout means for a person, with its reason when it has one. */
export function stateInWords(r: Rollout): string {
  const reason = r.reason ? `: ${r.reason.message}` : '';
  switch (r.state) {
    case 'running': return r.awaiting_advance ? `Wave ${r.current_wave} met its threshold: waiting for you to start the next` : `Running, wave ${r.current_wave} of ${r.waves.length}`;
    case 'paused': return `Paused${reason}`;
    case 'aborted': return `Aborted${reason}`;
    case 'completed': return 'Completed: the version is released to its target';
  }
}

/** The rollout's rules in one sentence: rate, success threshold, advance, error threshold. */
export function rulesInWords(r: Rollout): string {
  const rate = r.rate_per_minute === null ? 'each wave started at once' : `at most ${plural(r.rate_per_minute, 'device')} started a minute`;
  const next = r.advance === 'manual' ? `the next wave when you say so, once ${r.success_threshold} % of a wave updated` : `the next wave by itself once ${r.success_threshold} % of a wave updated`;
  const e = r.error_threshold;
  const limits = e ? [e.count !== null ? plural(e.count, 'failed update') : null, e.percent !== null ? `${e.percent} % of finished updates failed` : null].filter(Boolean).join(' or ') : '';
  const pause = e ? `pauses at ${limits} (after ${plural(e.min_finished, 'finished update')})` : 'never pauses by itself';
  return `${rate}; ${next}; ${pause}.`;
}
