import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api } from '../../../lib/api-client.js';
import { GROUP_NAME_RULES, groupKeys, groupsQuery } from '../../../lib/groups.js';
import type { Session } from '../../../lib/session.js';
import { deviceKeys } from '../api/queries.js';
import type { DeviceAt, DeviceDetail } from './Device.js';

/**
 * A device's groups (PUT …/devices/:id {groups}, the whole list each time): take it out of one,
 * or put it in another, existing or new.
 */
export function DeviceGroups({ session, at, device: d, product }: { session: Session; at: DeviceAt; device: DeviceDetail; product: string }) {
  const client = useQueryClient();
  const groups = useQuery(groupsQuery(session, product));
  const [name, setName] = useState('');
  const save = useMutation({
    mutationFn: (list: string[]) => api(session.token).PUT('/v1/products/{productIdOrSlug}/devices/{deviceId}', { ...at, body: { groups: list } }),
    onSuccess: async () => {
      setName('');
      await client.invalidateQueries({ queryKey: deviceKeys.one(product, d.id) });
      await client.invalidateQueries({ queryKey: deviceKeys.fleet(product) });
      await client.invalidateQueries({ queryKey: groupKeys.of(product) });
    },
  });
  const others = groups.data?.groups.filter((g) => !d.groups.includes(g.name)) ?? [];
  function add(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    save.mutate([...d.groups, name.trim()]);
  }
  const base = `/products/${encodeURIComponent(product)}`;
  return (
    <section aria-labelledby="device-groups-title" className="card">
      <h4 id="device-groups-title">Groups</h4>
      {d.groups.length === 0 ? <p>In no group.</p> : (
        <ul className="plain" aria-label="Its groups">
          {d.groups.map((g) => (
            <li key={g} className="row-actions">
              <Link to={`${base}?group=${encodeURIComponent(g)}`}>{g}</Link>
              <button type="button" className="secondary" aria-label={`Take it out of ${g}`} disabled={save.isPending} onClick={() => save.mutate(d.groups.filter((x) => x !== g))}>Take out</button>
            </li>
          ))}
        </ul>
      )}
      <form onSubmit={add} className="row-form" aria-label="Put it in a group">
        <label>Group
          <input value={name} onChange={(e) => setName(e.target.value)} list="device-group-names" required maxLength={64} autoCapitalize="none" spellCheck={false} aria-describedby="device-group-rules" />
          <datalist id="device-group-names">{others.map((g) => <option key={g.name} value={g.name} />)}</datalist>
        </label>
        <button type="submit" disabled={save.isPending}>Put it in the group</button>
        <span id="device-group-rules" className="hint">An existing group, or a new name: {GROUP_NAME_RULES.toLowerCase()}</span>
      </form>
      {save.error && <p role="alert" className="error">{save.error.message}</p>}
    </section>
  );
}
