import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import type { Session } from '../../../lib/session.js';
import { webhookQuery, webhooksQuery, type Webhook, type WebhooksAt } from '../api/webhooks.js';
import { countsInWords, stateInWords } from '../utils/words.js';

/** The webhooks of an owner: what each takes, where it sends, whether it is on, and how its last 30 days went. */
export function WebhookList({ session, at, base, title }: { session: Session; at: WebhooksAt; base: string; title: string }) {
  const list = useQuery(webhooksQuery(session, at));
  return (
    <section aria-labelledby="integrations-title">
      <h3 id="integrations-title">{title}</h3>
      <p>
        A webhook sends the events whose name starts with its prefix to your server as HTTP requests, signed, retried
        until they are answered, and logged.
      </p>
      <p><Link to={`${base}/new`} className="button">New webhook</Link></p>
      {list.isPending && <p>Loading…</p>}
      {list.error && <p role="alert" className="error">{list.error.message}</p>}
      {list.data && list.data.length === 0 && <p>No webhooks yet.</p>}
      {list.data && list.data.length > 0 && (
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Webhooks</caption>
            <thead><tr><th scope="col">Webhook</th><th scope="col">Sends to</th><th scope="col">State</th><th scope="col">Last 30 days</th></tr></thead>
            <tbody>
              {list.data.map((w) => <WebhookRow key={w.id} session={session} at={at} base={base} webhook={w} />)}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function WebhookRow({ session, at, base, webhook: w }: { session: Session; at: WebhooksAt; base: string; webhook: Webhook }) {
  // The counts are in each webhook's own answer, not in the list's.
  const detail = useQuery(webhookQuery(session, at, w.id));
  return (
    <tr>
      <th scope="row">
        <Link to={`${base}/${encodeURIComponent(w.id)}`}>{w.name ?? w.event}</Link>
        <span className="hint">event <code>{w.event}</code>{w.deviceID ? <> from <code>{w.deviceID}</code></> : null}</span>
      </th>
      <td><span className="method">{w.requestType}</span> <code>{w.url}</code></td>
      <td>{stateInWords(w)}</td>
      <td>{detail.data ? countsInWords(detail.data.counts) : detail.error ? detail.error.message : '…'}</td>
    </tr>
  );
}
