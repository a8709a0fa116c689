import { useState } from 'react';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { securityLogQuery } from '../api/queries.js';
import { Pager } from '../../../components/Pager.js';
import type { Session } from '../../../lib/session.js';

/** The details of an event as "key: value" pairs, short enough for a table cell (empty ones left out). */
const detailsOf = (d: Record<string, unknown>) => Object.entries(d)
  .filter(([, v]) => v !== null && v !== undefined)
  .map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ');

/** The account's security audit log (logins, tokens, MFA, password changes), newest first, paged. */
export function SecurityLog({ session }: { session: Session }) {
  const [page, setPage] = useState(1);
  const log = useQuery({
    ...securityLogQuery(session, page),
    placeholderData: keepPreviousData,
  });
  return (
    <section className="card" aria-labelledby="log-title">
      <h3 id="log-title">Security log</h3>
      {log.isPending && <p>Loading…</p>}
      {log.error && <p role="alert" className="error">{log.error.message}</p>}
      {log.data && log.data.events.length === 0 && <p>Nothing recorded yet.</p>}
      {log.data && log.data.events.length > 0 && (
        <div className="table-wrap">
          <table aria-label="Security events">
            <thead><tr><th scope="col">When</th><th scope="col">Event</th><th scope="col">Address</th><th scope="col">Details</th></tr></thead>
            <tbody>
              {log.data.events.map((e, i) => (
                <tr key={`${e.at}-${i}`}><td>{new Date(e.at).toLocaleString()}</td><td>{e.type}</td><td>{e.ip ?? ''}</td><td className="details">{detailsOf(e.details)}</td></tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {log.data && <Pager page={page} pages={log.data.meta.total_pages} onPage={setPage} label="Security log pages" />}
    </section>
  );
}
