import { useEffect } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import type { Session } from '../../../lib/session.js';
import { ShareBar } from '../../../components/ShareBar.js';
import { firmwareKeys, updatesQuery, type VersionProgress } from '../api/firmware.js';
import { plural } from '../utils/words.js';

/** How often the progress is read while the page is open: a transfer takes seconds. */
const EVERY_MS = 2000;

type State = keyof VersionProgress['states'];
/** The states in the order a person reads them, with their words. */
const STATES: Array<[State, string]> = [['succeeded', 'updated'], ['applying', 'applying it'], ['downloading', 'downloading'], ['pending', 'waiting'], ['failed', 'failed']];

/** "3 devices: 2 updated, 1 downloading": the states that have devices. */
export function progressInWords(v: VersionProgress): string {
  const parts = STATES.filter(([s]) => v.states[s] > 0).map(([s, words]) => `${v.states[s]} ${words}`);
  return `${plural(v.total, 'device')}: ${parts.join(', ')}`;
}

/**
 * Where the product's updates stand, a bar a version (docs/device-protocol.md, "Firmware
 * updates"): the devices offered it, updated, applying, downloading, waiting (for the device to
 * take updates, or for a transfer slot) and failed. Read again every two seconds while shown; a
 * change also refreshes the versions' device counts.
 */
export function UpdateProgress({ session, product }: { session: Session; product: string }) {
  const client = useQueryClient();
  const updates = useQuery({ ...updatesQuery(session, product), refetchInterval: EVERY_MS });
  const { data } = updates;
  // The answer keeps its identity while nothing changes (TanStack Query shares equal data): the
  // versions' device counts are read again only when an update moved.
  useEffect(() => {
    if (data) void client.invalidateQueries({ queryKey: firmwareKeys.list(product) });
  }, [data, client, product]);
  return (
    <section aria-labelledby="updates-title" className="card">
      <h4 id="updates-title">Updates</h4>
      {updates.error && <p role="alert" className="error">{updates.error.message}</p>}
      {data && data.length === 0 && <p>No device has been offered an update yet: release a version and its devices take it.</p>}
      {data && data.length > 0 && (
        <>
          <p className="legend" aria-hidden="true">
            {STATES.map(([s, words]) => <span key={s}><span className={`swatch ${s}`} /> {words} </span>)}
          </p>
          <ul className="rollout" aria-label="Updates by version">
            {data.map((v) => (
              <ShareBar key={v.version} label={`Version ${v.version}`} parts={STATES.map(([s]) => [s, v.states[s]])} total={v.total} words={progressInWords(v)} />
            ))}
          </ul>
        </>
      )}
    </section>
  );
}
