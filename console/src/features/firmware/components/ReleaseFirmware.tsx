import { useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { groupKeys, groupsQuery } from '../../../lib/groups.js';
import type { Session } from '../../../lib/session.js';
import { ConfirmButton } from '../../../components/Confirm.js';
import { firmwareKeys, impactQuery, releaseFirmware, type FirmwareVersion, type Released, type ReleaseChoice } from '../api/firmware.js';
import { impactInWords, plural, releasedTo } from '../utils/words.js';

/** Where a release sends the version, in words for its question. */
function targetsInWords(r: ReleaseChoice): string {
  const places = [...(r.productDefault ? ['the whole fleet (as the product default)'] : []), ...(r.groups.length > 0 ? [`${r.groups.length === 1 ? 'group' : 'groups'} ${r.groups.join(', ')}`] : [])];
  return places.length > 0 ? places.join(' and ') : 'nowhere (it stops being released)';
}

/**
 * Releases one version (PUT …/firmware/release): to the fleet as the product default, to exactly
 * the groups ticked, now to online devices (intelligent) or as they reconnect. How many devices
 * would update is asked of the API as the choice changes (GET …/impact), and said again in the
 * question before the release is made. Skyport releases a version no device has run yet, where
 * Particle refuses; the API's warning says so after the release.
 */
export function ReleaseFirmware({ session, product, firmware: f, onClose }: { session: Session; product: string; firmware: FirmwareVersion; onClose: () => void }) {
  const client = useQueryClient();
  const groups = useQuery(groupsQuery(session, product));
  const [choice, setChoice] = useState<ReleaseChoice>({ version: f.version, productDefault: f.product_default, groups: f.groups, intelligent: f.intelligent });
  const impact = useQuery({ ...impactQuery(session, product, choice), placeholderData: (previous) => previous });
  const [done, setDone] = useState<Released | null>(null);
  const release = useMutation({
    mutationFn: () => releaseFirmware(session, product, choice),
    onSuccess: async (r) => {
      setDone(r);
      await client.invalidateQueries({ queryKey: firmwareKeys.of(product) });
      await client.invalidateQueries({ queryKey: groupKeys.of(product) });
    },
  });
  const change = (c: Partial<ReleaseChoice>) => {
    setChoice({ ...choice, ...c });
    setDone(null);
    release.reset();
  };
  const toggleGroup = (name: string, on: boolean) => change({ groups: on ? [...choice.groups, name].sort() : choice.groups.filter((g) => g !== name) });
  const count = impact.data ? ` ${impactInWords(impact.data)}` : '';

  return (
    <section className="card" aria-labelledby="release-title">
      <h4 id="release-title">Release version {f.version}</h4>
      <p>Now: {releasedTo(f)}. {f.title}</p>
      <fieldset>
        <legend>Release to</legend>
        <label className="choice">
          <input type="checkbox" checked={choice.productDefault} onChange={(e) => change({ productDefault: e.target.checked })} />
          <span>The whole fleet (product default)<span className="hint">Devices in no group with a release run it; one version is the default at a time.</span></span>
        </label>
        {groups.data?.groups.map((g) => (
          <label className="choice" key={g.name}>
            <input type="checkbox" checked={choice.groups.includes(g.name)} onChange={(e) => toggleGroup(g.name, e.target.checked)} />
            <span>
              {g.color && <span className="swatch" style={{ background: g.color }} aria-hidden="true" />} Group {g.name}
              <span className="hint">{plural(g.device_count, 'device')}{g.fw_version !== null && g.fw_version !== f.version ? `; version ${g.fw_version} is released to it now` : ''}</span>
            </span>
          </label>
        ))}
        {groups.data && groups.data.groups.length === 0 && <p className="hint">This product has no groups yet: <Link to={`/products/${encodeURIComponent(product)}/groups`}>make some</Link> to release to part of the fleet.</p>}
        {groups.error && <p role="alert" className="error">{groups.error.message}</p>}
      </fieldset>
      <label className="choice">
        <input type="checkbox" checked={choice.intelligent} onChange={(e) => change({ intelligent: e.target.checked })} />
        <span>Update online devices now<span className="hint">Otherwise devices take it when they next connect.</span></span>
      </label>
      <p role="status" aria-label="Impact">{impact.isPending ? 'Counting the devices it would update…' : impact.data ? impactInWords(impact.data) : ''}</p>
      {impact.error && <p role="alert" className="error">{impact.error.message}</p>}
      <div className="buttons">
        <ConfirmButton
          label={`Release version ${f.version}…`} destructive={false}
          question={`Release version ${f.version} to ${targetsInWords(choice)}?${count}`}
          confirmLabel="Yes, release it" pending={release.isPending} onAsk={() => release.reset()}
          onConfirm={() => release.mutateAsync()}
        />
        <button type="button" className="secondary" onClick={onClose}>Close</button>
      </div>
      {done && (
        <div role="status">
          <p>Version {done.version} is released to {releasedTo(done)}.</p>
          {done.warnings.map((w) => <p key={w} className="warning">{w}</p>)}
        </div>
      )}
      {release.error && <p role="alert" className="error">{release.error.message}</p>}
    </section>
  );
}
