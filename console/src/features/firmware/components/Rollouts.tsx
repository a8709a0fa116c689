import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import type { Session } from '../../../lib/session.js';
import { firmwareQuery } from '../api/firmware.js';
import { rolloutsQuery, underWay } from '../api/rollouts.js';
import { progressInWords, stateInWords, targetInWords } from '../utils/rollout-words.js';
import { when } from '../utils/words.js';
import { RolloutCard } from './RolloutCard.js';
import { StartRollout } from './StartRollout.js';

/** How often the rollouts are read while one is under way: a wave moves within seconds. */
const EVERY_MS = 2000;

/**
 * The product's staged rollouts on its Firmware page (docs/console.md, "Firmware"): start one,
 * the one under way with its waves, thresholds and live progress and the steps a person takes
 * (pause, resume, next wave, abort), and the rollouts that ended.
 */
export function Rollouts({ session, product }: { session: Session; product: string }) {
  const versions = useQuery(firmwareQuery(session, product));
  const list = useQuery({
    ...rolloutsQuery(session, product),
    refetchInterval: (q) => (q.state.data?.some(underWay) ? EVERY_MS : false),
  });
  const [starting, setStarting] = useState(false);
  const rollouts = list.data ?? [];
  const current = rollouts.find(underWay);
  const ended = rollouts.filter((r) => r !== current);
  return (
    <section aria-labelledby="rollouts-title" className="card">
      <div className="row">
        <h4 id="rollouts-title">Staged rollouts</h4>
        {!current && (versions.data?.length ?? 0) > 0 && <button type="button" aria-expanded={starting} onClick={() => setStarting(!starting)}>Start a rollout</button>}
      </div>
      <p>A version given to the fleet or to groups wave by wave, pausing by itself when too many updates fail; once its last wave updates, the version is released to its target.</p>
      {list.error && <p role="alert" className="error">{list.error.message}</p>}
      {starting && !current && versions.data && <StartRollout session={session} product={product} versions={versions.data} onClose={() => setStarting(false)} />}
      {current && <RolloutCard session={session} product={product} rollout={current} />}
      {list.data && rollouts.length === 0 && <p>No rollout yet.</p>}
      {ended.length > 0 && (
        <div className="table-wrap">
          <table>
            <caption>Rollouts that ended, newest first</caption>
            <thead><tr><th scope="col">Version</th><th scope="col">Target</th><th scope="col">State</th><th scope="col">Devices</th><th scope="col">Ended</th></tr></thead>
            <tbody>
              {ended.map((r) => (
                <tr key={r.id}>
                  <th scope="row">{r.version}</th>
                  <td>{targetInWords(r)}</td>
                  <td>{stateInWords(r)}</td>
                  <td>{progressInWords(r.progress)}</td>
                  <td>{r.finished_at ? when(r.finished_at) : ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
