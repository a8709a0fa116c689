import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { groupsQuery } from '../../../lib/groups.js';
import type { Session } from '../../../lib/session.js';
import { firmwareKeys, type FirmwareVersion } from '../api/firmware.js';
import { rolloutKeys, startRollout, type RolloutStart } from '../api/rollouts.js';

type WaveKind = 'percent' | 'count' | 'group';
interface WaveRow { kind: WaveKind; value: string }

const KINDS: Array<[WaveKind, string]> = [['percent', '% of the devices'], ['count', 'devices'], ['group', 'a group']];

/** The form's waves as the API takes them; a value left empty is sent as it is, and the API says what is wrong. */
function wavesOf(rows: WaveRow[]): NonNullable<RolloutStart['waves']> {
  return rows.map((w) => (w.kind === 'group' ? { group: w.value.trim() } : w.kind === 'percent' ? { percent: w.value.trim() } : { count: w.value.trim() }));
}

const orNull = (s: string): string | null => (s.trim() === '' ? null : s.trim());

/**
 * Starts a staged rollout (POST …/firmware/rollouts; docs/firmware.md, "Staged rollouts"): a
 * version, to the fleet or to groups, in waves (a share, a count or a group each; what they leave
 * is a last wave), at a rate, with the share of a wave that must update before the next starts
 * (by itself, or when a person says so) and the failures that pause it. What the API refuses is
 * said in its words.
 */
export function StartRollout({ session, product, versions, onClose }: { session: Session; product: string; versions: FirmwareVersion[]; onClose: () => void }) {
  const client = useQueryClient();
  const groups = useQuery(groupsQuery(session, product));
  const [version, setVersion] = useState(String(versions[0]?.version ?? ''));
  const [target, setTarget] = useState<string[]>([]);
  const [waves, setWaves] = useState<WaveRow[]>([{ kind: 'percent', value: '10' }]);
  const [rate, setRate] = useState('');
  const [success, setSuccess] = useState('100');
  const [manual, setManual] = useState(false);
  const [errorPercent, setErrorPercent] = useState('');
  const [errorCount, setErrorCount] = useState('');
  const [minFinished, setMinFinished] = useState('');
  const start = useMutation({
    mutationFn: (body: RolloutStart) => startRollout(session, product, body),
    onSuccess: async () => {
      await client.invalidateQueries({ queryKey: rolloutKeys.of(product) });
      await client.invalidateQueries({ queryKey: firmwareKeys.of(product) });
      onClose();
    },
  });

  function submit(e: FormEvent) {
    e.preventDefault();
    const threshold = errorPercent.trim() === '' && errorCount.trim() === '' ? null : { percent: orNull(errorPercent), count: orNull(errorCount), min_finished: orNull(minFinished) };
    start.mutate({
      version, groups: target.length > 0 ? target : null, waves: wavesOf(waves), rate_per_minute: orNull(rate),
      success_threshold: orNull(success), advance: manual ? 'manual' : 'auto', error_threshold: threshold,
    });
  }
  const setWave = (i: number, w: Partial<WaveRow>) => setWaves(waves.map((x, j) => (j === i ? { ...x, ...w } : x)));

  return (
    <section className="card" aria-labelledby="start-rollout-title">
      <h4 id="start-rollout-title">Start a rollout</h4>
      <form aria-labelledby="start-rollout-title" onSubmit={submit}>
        <label>Version
          <select value={version} onChange={(e) => setVersion(e.target.value)}>
            {versions.map((f) => <option key={f.version} value={f.version}>{`${f.version} ${f.title}`}</option>)}
          </select>
        </label>
        <fieldset>
          <legend>Target</legend>
          <p className="hint">No group ticked: the whole fleet. Development and locked devices are left alone.</p>
          {groups.data?.groups.map((g) => (
            <label className="choice" key={g.name}>
              <input type="checkbox" checked={target.includes(g.name)} onChange={(e) => setTarget(e.target.checked ? [...target, g.name].sort() : target.filter((x) => x !== g.name))} />
              <span>Group {g.name}</span>
            </label>
          ))}
        </fieldset>
        <fieldset>
          <legend>Waves</legend>
          <p className="hint">In order, each from the devices no earlier wave took; the devices they leave make a last wave.</p>
          {waves.map((w, i) => (
            <div className="inline-form" key={i} role="group" aria-label={`Wave ${i + 1}`}>
              <label>{`Wave ${i + 1} size`}<input value={w.value} required maxLength={64} onChange={(e) => setWave(i, { value: e.target.value })} /></label>
              <label>{`Wave ${i + 1} kind`}
                <select value={w.kind} onChange={(e) => setWave(i, { kind: e.target.value as WaveKind })}>
                  {KINDS.map(([k, words]) => <option key={k} value={k}>{words}</option>)}
                </select>
              </label>
              {waves.length > 1 && <button type="button" className="secondary" onClick={() => setWaves(waves.filter((_, j) => j !== i))}>{`Remove wave ${i + 1}`}</button>}
            </div>
          ))}
          {waves.length < 20 && <button type="button" className="secondary" onClick={() => setWaves([...waves, { kind: 'percent', value: '' }])}>Add a wave</button>}
        </fieldset>
        <fieldset>
          <legend>Pace</legend>
          <label>Devices started per minute<input type="number" min={1} value={rate} onChange={(e) => setRate(e.target.value)} /><span className="hint">Empty: a wave's devices all at once.</span></label>
          <label>Success threshold (%)<input type="number" min={0} max={100} step="any" value={success} onChange={(e) => setSuccess(e.target.value)} /><span className="hint">The share of a wave that must have updated before the next starts.</span></label>
          <label className="choice">
            <input type="checkbox" checked={manual} onChange={(e) => setManual(e.target.checked)} />
            <span>Wait for me before each next wave<span className="hint">Otherwise the next wave starts by itself once the threshold is met.</span></span>
          </label>
        </fieldset>
        <fieldset>
          <legend>Error threshold</legend>
          <p className="hint">The rollout pauses by itself when either is reached; both empty: it never does.</p>
          <label>Failed updates (%)<input type="number" min={0} max={100} step="any" value={errorPercent} onChange={(e) => setErrorPercent(e.target.value)} /></label>
          <label>Failed updates (count)<input type="number" min={1} value={errorCount} onChange={(e) => setErrorCount(e.target.value)} /></label>
          <label>After at least this many finished<input type="number" min={1} value={minFinished} onChange={(e) => setMinFinished(e.target.value)} /></label>
        </fieldset>
        <div className="buttons">
          <button type="submit" disabled={start.isPending || version === ''}>Start the rollout</button>
          <button type="button" className="secondary" onClick={onClose}>Cancel</button>
        </div>
      </form>
      {start.error && <p role="alert" className="error">{start.error.message}</p>}
    </section>
  );
}
