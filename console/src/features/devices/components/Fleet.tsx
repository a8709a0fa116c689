import { useEffect, useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { fleetQuery } from '../api/queries.js';
import type { Session } from '../../../lib/session.js';
import { describeStream, useEventStream } from '../../../lib/events.js';
import { AddDevices } from './AddDevices.js';
import { ImportDevices } from './ImportDevices.js';
import { Pager } from '../../../components/Pager.js';

/** What the event stream said of a device since the list was read. */
interface Live { online: boolean; at: string }

/**
 * The fleet's devices, a page at a time, as GET /v1/products/:p/devices gives them; each device's
 * online state follows the fleet's `spark/status` events while the page is open.
 */
export function Fleet({ session, product }: { session: Session; product: string }) {
  const [page, setPage] = useState(1);
  const [prefix, setPrefix] = useState('');
  const [panel, setPanel] = useState<'add' | 'import' | null>(null);
  const [live, setLive] = useState<ReadonlyMap<string, Live>>(new Map());
  const list = useQuery({
    ...fleetQuery(session, product, page, prefix),
    placeholderData: (previous) => previous,
  });
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
      <label className="inline">Device ID starts with
        <input value={prefix} onChange={(e) => { setPrefix(e.target.value.trim()); setPage(1); }} maxLength={24} />
      </label>
      <p role="status" className="hint">{describeStream(stream.state, stream.why)}</p>
      {list.error && <p role="alert" className="error">{list.error.message}</p>}
      {list.data && list.data.devices.length === 0 && <p>No devices in this product yet.</p>}
      {list.data && list.data.devices.length > 0 && (
        <>
          <table>
            <thead><tr><th scope="col">Device ID</th><th scope="col">Name</th><th scope="col">State</th><th scope="col">Last heard</th></tr></thead>
            <tbody>
              {list.data.devices.map((d) => {
                const now = live.get(d.id);
                const online = now ? now.online : d.online;
                const heard = now?.at ?? d.last_heard;
                return (
                  <tr key={d.id}>
                    <td><Link to={`devices/${d.id}`}><code>{d.id}</code></Link>{d.development ? ' (development)' : ''}</td>
                    <td>{d.name ?? ''}</td>
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
