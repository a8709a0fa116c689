import { useState } from 'react';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { Session } from '../../../lib/session.js';
import { ConfirmButton } from '../../../components/Confirm.js';
import { ShareBar } from '../../../components/ShareBar.js';
import { firmwareKeys } from '../api/firmware.js';
import { rolloutKeys, stepRollout, underWay, type Progress, type Rollout, type Step } from '../api/rollouts.js';
import { PROGRESS_STATES, progressInWords, rulesInWords, stateInWords, targetInWords, totalOf, waveName } from '../utils/rollout-words.js';

/** A bar of a wave's (or the whole rollout's) devices by state; the words beside it say the same. */
function Bar({ label, progress, words }: { label: string; progress: Progress; words: string }) {
  return <ShareBar label={label} parts={PROGRESS_STATES.map(([s]) => [s, progress[s]])} total={totalOf(progress)} words={words} />;
}

const WAVE_STATES = { waiting: 'waiting', current: 'under way', done: 'done' } as const;

/**
 * A rollout under way (or the last one): its target, rules and state; its progress per wave and
 * per state, as bars with the counts in words; and the person's steps it allows now: pause and
 * next wave while it runs, resume while paused, abort (asked first) until it ends.
 */
export function RolloutCard({ session, product, rollout: r }: { session: Session; product: string; rollout: Rollout }) {
  const client = useQueryClient();
  const [reason, setReason] = useState('');
  const step = useMutation({
    mutationFn: (s: Step) => stepRollout(session, product, r.id, s, s === 'pause' || s === 'abort' ? reason.trim() || undefined : undefined),
    onSuccess: async () => {
      setReason('');
      await client.invalidateQueries({ queryKey: rolloutKeys.of(product) });
      await client.invalidateQueries({ queryKey: firmwareKeys.of(product) });
    },
  });
  const title = `Rollout of version ${r.version} to ${targetInWords(r)}`;
  const id = `rollout-${r.id}-title`;
  return (
    <section className="card" aria-labelledby={id}>
      <h5 id={id}>{title}</h5>
      <p role="status" aria-label="Rollout state" className={r.state === 'paused' || r.state === 'aborted' ? 'warning' : undefined}>{stateInWords(r)}</p>
      <p className="hint">{rulesInWords(r)}</p>
      <ul className="rollout" aria-label={`Waves of the rollout of version ${r.version}`}>
        {r.waves.map((w) => (
          <Bar key={w.wave} label={`${waveName(w)}, ${WAVE_STATES[w.state]}`} progress={w.progress} words={`${progressInWords(w.progress)}; ${w.succeeded_share} % updated`} />
        ))}
        <Bar label="All waves" progress={r.progress} words={progressInWords(r.progress)} />
      </ul>
      {(r.excluded.development + r.excluded.locked + r.excluded.other_release) > 0 && (
        <p className="hint">
          Left out at the start: {r.excluded.development} development, {r.excluded.locked} locked, {r.excluded.other_release} kept on another version by their groups' release.
        </p>
      )}
      {underWay(r) && (
        <div className="buttons">
          <label className="inline">Reason (for pause or abort)<input value={reason} maxLength={500} onChange={(e) => setReason(e.target.value)} /></label>
          {r.state === 'running' && <button type="button" className="secondary" disabled={step.isPending} onClick={() => step.mutate('pause')}>Pause</button>}
          {r.state === 'paused' && <button type="button" disabled={step.isPending} onClick={() => step.mutate('resume')}>Resume</button>}
          {r.state === 'running' && (
            <button type="button" className={r.awaiting_advance ? undefined : 'secondary'} disabled={step.isPending} onClick={() => step.mutate('next')}>
              {r.current_wave < r.waves.length ? 'Start the next wave' : 'Complete the rollout'}
            </button>
          )}
          <ConfirmButton
            label="Abort" name={`Abort the rollout of version ${r.version}`}
            question="Abort the rollout? Devices not yet updated stay on what they run; updated ones keep the version."
            confirmLabel="Yes, abort it" pending={step.isPending} onAsk={() => step.reset()}
            onConfirm={() => step.mutateAsync('abort')}
          />
        </div>
      )}
      {step.error && <p role="alert" className="error">{step.error.message}</p>}
    </section>
  );
}
