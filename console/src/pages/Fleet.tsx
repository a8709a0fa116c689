import { useState } from 'react';
import { useQuery } from '@tanstack/react-query';
import { api } from '../api.js';
import type { Session } from '../session.js';

interface DeviceRow { id: string; name: string | null; online: boolean; development?: boolean; last_heard: string | null; firmware_version?: number | null }
interface Page { devices: DeviceRow[]; meta: { page: number; per_page: number; total: number; total_pages: number } }

/** The fleet's devices, a page at a time, as GET /v1/products/:p/devices gives them. */
export function Fleet({ session, product }: { session: Session; product: string }) {
  const [page, setPage] = useState(1);
  const [prefix, setPrefix] = useState('');
  const list = useQuery({
    queryKey: ['devices', product, page, prefix],
    queryFn: () => api<Page>(`/v1/products/${encodeURIComponent(product)}/devices?page=${page}&per_page=25${prefix ? `&deviceId=${encodeURIComponent(prefix)}` : ''}`, { token: session.token }),
    placeholderData: (previous) => previous,
  });
  return (
    <section aria-labelledby="fleet-title">
      <h3 id="fleet-title">Devices</h3>
      <label className="inline">Device ID starts with
        <input value={prefix} onChange={(e) => { setPrefix(e.target.value.trim()); setPage(1); }} maxLength={24} />
      </label>
      {list.error && <p role="alert" className="error">{list.error.message}</p>}
      {list.data && list.data.devices.length === 0 && <p>No devices in this product yet.</p>}
      {list.data && list.data.devices.length > 0 && (
        <>
          <table>
            <thead><tr><th scope="col">Device ID</th><th scope="col">Name</th><th scope="col">State</th><th scope="col">Last heard</th></tr></thead>
            <tbody>
              {list.data.devices.map((d) => (
                <tr key={d.id}>
                  <td><code>{d.id}</code>{d.development ? ' (development)' : ''}</td>
                  <td>{d.name ?? ''}</td>
                  <td>{d.online ? 'online' : 'offline'}</td>
                  <td>{d.last_heard ? new Date(d.last_heard).toLocaleString() : 'never'}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <nav aria-label="Pages of devices" className="row">
            <button type="button" disabled={page <= 1} onClick={() => setPage(page - 1)}>Previous</button>
            <span>Page {list.data.meta.page} of {Math.max(1, list.data.meta.total_pages)} ({list.data.meta.total} devices)</span>
            <button type="button" disabled={page >= list.data.meta.total_pages} onClick={() => setPage(page + 1)}>Next</button>
          </nav>
        </>
      )}
    </section>
  );
}
