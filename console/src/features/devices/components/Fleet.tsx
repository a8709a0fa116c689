import { useEffect, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { fleetQuery } from '../api/queries.js';
import type { Session } from '../../../lib/session.js';
import { describeStream, useEventStream } from '../../../lib/events.js';
import { groupsQuery } from '../../../lib/groups.js';
import { AddDevices } from './AddDevices.js';
import { AssignGroups } from './AssignGroups.js';
import { ImportDevices } from './ImportDevices.js';
import { Pager } from '../../../components/Pager.js';

/** What the event stream said of a device since the list was read. */
interface Live { online: boolean; at: string }

/**
 * The fleet's devices, a page at a time, as GET /v1/products/:p/devices gives them, filtered by
 * the start of their ID and by group (`?group=` in the address, so a group's devices are a link);
 * each device's online state follows the fleet's `spark/status` events while the page is open.
 * Devices ticked in the list are added to a group or taken out of one together.
 */
export function Fleet({ session, product }: { session: Session; product: string }) {
  const [page, setPage] = useState(1);
  const [prefix, setPrefix] = useState('');
  const [search, setSearch] = useSearchParams();
  const group = search.get('group') ?? '';
  const [panel, setPanel] = useState<'add' | 'import' | null>(null);
  const [live, setLive] = useState<ReadonlyMap<string, Live>>(new Map());
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const list = useQuery({
    ...fleetQuery(session, product, page, prefix, group),
    placeholderData: (previous) => previous,
  });
  const groups = useQuery(groupsQuery(session, product));
  const stream = useEventStream(`/v1/products/${encodeURIComponent(product)}/events/spark%2Fstatus`, session.token, (e) => {
    if (e.data !== 'online' && e.data !== 'offline') return;
    setLive((m) => new Map(m).set(e.coreid, { online: e.data === 'online', at: e.published_at }));
  });
  // Once the stream is (again) open, the list is read again: what happened before it opened, or
  // while it was down, is in the list, and what happens next comes through the stream.
  const { refetch } = list;
  useEffect(() => {
    if (stream.state === 'live') {
      setLive(new Map());
      void refetch();
    }
  }, [stream.state, refetch]);

  const toggle = (p: 'add' | 'import') => setPanel(panel === p ? null : p);
  const choose = (ids: string[], on: boolean) => setSelected((now) => {
    const next = new Set(now);
    for (const id of ids) {
      if (on) next.add(id);
      else next.delete(id);
    }
    return next;
  });
  const filterBy = (name: string) => {
    setSearch(name === '' ? {} : { group: name }, { replace: true });
    setPage(1);
  };
  const onPage = list.data?.devices.map((d) => d.id) ?? [];
  const allOnPage = onPage.length > 0 && onPage.every((id) => selected.has(id));
  return (
    <section aria-labelledby="fleet-title">
      <div className="row">
        <h3 id="fleet-title">Devices</h3>
        <div className="buttons">
          <button type="button" aria-expanded={panel === 'add'} onClick={() => toggle('add')}>Add devices</button>
          <button type="button" aria-expanded={panel === 'import'} onClick={() => toggle('import')}>Import devices</button>
        </div>
      </div>
      {panel === 'add' && <AddDevices session={session} product={product} onClose={() => setPanel(null)} />}
      {panel === 'import' && <ImportDevices session={session} product={product} onClose={() => setPanel(null)} />}
      <div className="buttons">
        <label className="inline">Device ID starts with
          <input value={prefix} onChange={(e) => { setPrefix(e.target.value.trim()); setPage(1); }} maxLength={24} />
        </label>
        <label className="inline">Group
          <select value={group} onChange={(e) => filterBy(e.target.value)}>
            <option value="">All devices</option>
            {/* The group in the address is kept as a choice even before the list of groups has come. */}
            {group !== '' && !groups.data?.groups.some((g) => g.name === group) && <option value={group}>{group}</option>}
            {groups.data?.groups.map((g) => <option key={g.name} value={g.name}>{g.name} ({g.device_count})</option>)}
          </select>
        </label>
      </div>
      {selected.size > 0 && <AssignGroups session={session} product={product} selected={[...selected]} onClear={() => setSelected(new Set())} />}
      <p role="status" className="hint">{describeStream(stream.state, stream.why)}</p>
      {list.error && <p role="alert" className="error">{list.error.message}</p>}
      {list.data && list.data.devices.length === 0 && <p>{group === '' && prefix === '' ? 'No devices in this product yet.' : 'No devices match.'}</p>}
      {list.data && list.data.devices.length > 0 && (
        <>
          <table>
            <thead>
              <tr>
                <th scope="col"><input type="checkbox" aria-label="Select every device of this page" checked={allOnPage} onChange={(e) => choose(onPage, e.target.checked)} /></th>
                <th scope="col">Device ID</th><th scope="col">Name</th><th scope="col">Groups</th><th scope="col">State</th><th scope="col">Last heard</th>
              </tr>
            </thead>
            <tbody>
              {list.data.devices.map((d) => {
                const now = live.get(d.id);
                const online = now ? now.online : d.online;
                const heard = now?.at ?? d.last_heard;
                return (
                  <tr key={d.id}>
                    <td><input type="checkbox" aria-label={`Select ${d.id}`} checked={selected.has(d.id)} onChange={(e) => choose([d.id], e.target.checked)} /></td>
                    <td><Link to={`devices/${d.id}`}><code>{d.id}</code></Link>{d.development ? ' (development)' : ''}</td>
                    <td>{d.name ?? ''}</td>
                    <td>{d.groups.join(', ')}</td>
                    <td>{online ? 'online' : 'offline'}</td>
                    <td>{heard ? new Date(heard).toLocaleString() : 'never'}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          <Pager label="Pages of devices" page={list.data.meta.page} pages={list.data.meta.total_pages} onPage={setPage} count={`${list.data.meta.total} devices`} />
        </>
      )}
    </section>
  );
}
