import { useState, type FormEvent } from 'react';
import { useMutation, useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api, type ApiAnswer, type ApiBody } from '../../../lib/api-client.js';
import type { Session } from '../../../lib/session.js';
import { firmwareQuery } from '../api/firmware.js';

type Device = ApiAnswer<'/v1/products/{productIdOrSlug}/devices/{deviceId}'>;
type Change = Pick<ApiBody<'/v1/products/{productIdOrSlug}/devices/{deviceId}', 'put'>, 'desired_firmware_version' | 'flash' | 'firmware_updates_forced'>;

const versionOf = (v: number | null, none: string) => (v === null ? none : `version ${v}`);

/**
 * A device's firmware on its page (docs/firmware.md, "Devices"): what it runs, what the cloud
 * gives it and why, its lock (set with "flash now", or removed), whether it takes updates now (as
 * the device reports it) and whether they are forced on it. `onChanged` refreshes the device.
 */
export function DeviceFirmware({ session, product, device: d, onChanged }: { session: Session; product: string; device: Device; onChanged: () => Promise<unknown> }) {
  const versions = useQuery(firmwareQuery(session, product));
  const [said, setSaid] = useState<string | null>(null);
  const change = useMutation({
    mutationFn: (body: Change) => api(session.token).PUT('/v1/products/{productIdOrSlug}/devices/{deviceId}', { params: { path: { productIdOrSlug: product, deviceId: d.id } }, body }),
    onSuccess: async (_r, body) => {
      setSaid(saidOf(body));
      await onChanged();
    },
  });
  const locked = d.desired_firmware_version;
  // The box shows the change asked for until the device is read again after it.
  const asked = change.isPending ? change.variables.firmware_updates_forced : undefined;
  const forced = asked === undefined ? d.firmware_updates_forced : asked === true || asked === 'true';

  function lock(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    change.mutate({ desired_firmware_version: Number(f.get('version')), flash: f.get('flash') === 'on' });
  }

  return (
    <section aria-labelledby="device-firmware-title" className="card">
      <h4 id="device-firmware-title">Firmware</h4>
      <dl className="pairs">
        <dt>Running</dt><dd>{versionOf(d.firmware_version, 'not reported')}</dd>
        <dt>Targeted</dt><dd>{versionOf(d.targeted_firmware_release_version, d.development ? 'none: a development device is not updated by the cloud' : 'none: no release reaches it')}</dd>
        <dt>Locked to</dt><dd>{versionOf(locked, 'not locked')}</dd>
        <dt>Updates</dt><dd>{d.firmware_updates_enabled ? 'enabled' : 'disabled by the device'}<span className="hint">As the device reports it (System.disableUpdates()).</span></dd>
      </dl>
      {d.development && <p className="warning">A development device: the cloud does not update it, locked or not. Make it a regular device for its lock or releases to apply.</p>}
      <label className="choice">
        <input type="checkbox" checked={forced} disabled={change.isPending} onChange={(e) => change.mutate({ firmware_updates_forced: e.target.checked })} />
        <span>Force updates<span className="hint">Send it updates even while it does not take them.</span></span>
      </label>
      <form onSubmit={lock} className="row-form" aria-label="Lock to a version">
        <label>Lock to version
          <select name="version" required defaultValue={locked ?? ''} key={locked ?? 'none'}>
            <option value="" disabled>Choose a version</option>
            {versions.data?.map((f) => <option key={f.version} value={f.version}>{f.version}: {f.title}</option>)}
          </select>
        </label>
        <label className="choice"><input type="checkbox" name="flash" defaultChecked /> <span>Flash now<span className="hint">Update it at once if it is online.</span></span></label>
        <button type="submit" disabled={change.isPending || !versions.data || versions.data.length === 0}>Lock</button>
        {locked !== null && <button type="button" className="secondary" disabled={change.isPending} onClick={() => change.mutate({ desired_firmware_version: null })}>Unlock</button>}
      </form>
      {versions.data && versions.data.length === 0 && <p className="hint">The product has no firmware yet: <Link to={`/products/${encodeURIComponent(product)}/firmware`}>upload a version</Link> to lock devices to it.</p>}
      {versions.error && <p role="alert" className="error">{versions.error.message}</p>}
      {said && !change.error && <p role="status">{said}</p>}
      {change.error && <p role="alert" className="error">{change.error.message}</p>}
    </section>
  );
}

function saidOf(body: Change): string {
  if (body.firmware_updates_forced !== undefined) return body.firmware_updates_forced ? 'Updates are forced on this device.' : 'Updates are no longer forced.';
  if (body.desired_firmware_version === null) return 'Unlocked: it runs what its groups or the product default give it.';
  return `Locked to version ${String(body.desired_firmware_version)}${body.flash ? ': it updates now if it is online' : ''}.`;
}
