import { useState, type FormEvent } from 'react';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { Session } from '../../../lib/session.js';
import { deliveriesQuery, webhookKeys, type Delivery, type WebhooksAt } from '../api/webhooks.js';
import { localInput } from '../utils/form.js';
import { deliveryStatus, plural, when } from '../utils/words.js';

/** How often the log is asked again while it is open: deliveries and their attempts come as they are made. */
const EVERY_MS = 2000;

/**
 * A webhook's delivery log (docs/webhooks.md, "The delivery log and replay"), newest first, a page
 * at a time: each delivery with its attempts, a Resend button each, and a replay of a time range.
 * Pages follow the API's cursor (`next_before`), so a page stays put while new deliveries come.
 */
export function DeliveryLog({ session, at, id }: { session: Session; at: WebhooksAt; id: string }) {
  const client = useQueryClient();
  // The `before` of each page opened: the first page has none.
  const [cursors, setCursors] = useState<Array<string | null>>([null]);
  const before = cursors[cursors.length - 1] ?? null;
  const page = useQuery({ ...deliveriesQuery(session, at, id, before), refetchInterval: EVERY_MS, placeholderData: keepPreviousData });
  const refresh = () => client.invalidateQueries({ queryKey: webhookKeys.at(at) });
  const next = page.data?.next_before ?? null;
  return (
    <section aria-labelledby="log-title">
      <h4 id="log-title">Delivery log</h4>
      <Replay session={session} at={at} id={id} onDone={refresh} />
      {page.isPending && <p>Loading…</p>}
      {page.error && <p role="alert" className="error">{page.error.message}</p>}
      {page.data && page.data.deliveries.length === 0 && <p>No deliveries {cursors.length > 1 ? 'before these' : 'in the last 30 days'}.</p>}
      {page.data && page.data.deliveries.length > 0 && (
        <ol className="deliveries" aria-label="Deliveries">
          {page.data.deliveries.map((d) => <DeliveryItem key={d.id} session={session} at={at} id={id} delivery={d} onResent={refresh} />)}
        </ol>
      )}
      {(cursors.length > 1 || next !== null) && (
        <nav aria-label="Pages of the delivery log" className="pager">
          <button type="button" disabled={cursors.length === 1} onClick={() => setCursors(cursors.slice(0, -1))}>Newer</button>
          <span aria-live="polite">Page {cursors.length}</span>
          <button type="button" disabled={next === null} onClick={() => setCursors([...cursors, next])}>Older</button>
        </nav>
      )}
    </section>
  );
}

function DeliveryItem({ session, at, id, delivery: d, onResent }: { session: Session; at: WebhooksAt; id: string; delivery: Delivery; onResent: () => Promise<void> }) {
  const resend = useMutation({ mutationFn: () => at.resend(session.token, id, d.id), onSuccess: onResent });
  const title = `d-${d.id}`;
  return (
    <li>
      <article aria-labelledby={title} className="card delivery">
        <h5 id={title}><code>{d.event.name}</code> at {when(d.created_at)}: {deliveryStatus(d)}</h5>
        <p>
          Delivery <code>{d.id}</code>
          {d.next_at && <>; next attempt at {when(d.next_at)}</>}
          {d.resend_of && <>; sends <code>{d.resend_of}</code> again</>}
        </p>
        <p>Data: {d.event.data === null ? 'none' : <code>{d.event.data}</code>}, from <code>{d.event.coreid}</code></p>
        {d.attempts.length === 0 ? <p>No attempt yet.</p> : (
          <div className="table-wrap">
            <table>
              <caption>Attempts</caption>
              <thead><tr><th scope="col">Attempt</th><th scope="col">Time</th><th scope="col">Outcome</th><th scope="col">HTTP status</th><th scope="col">Latency</th><th scope="col">Answer or error</th></tr></thead>
              <tbody>
                {d.attempts.map((a) => (
                  <tr key={a.n}>
                    <td>{a.n}</td>
                    <td>{when(a.at)}</td>
                    <td>{a.outcome}</td>
                    <td>{a.status ?? 'none'}</td>
                    <td>{a.latency_ms} ms</td>
                    <td className="details">{a.error ? <span className="error">{a.error}</span> : a.answer === null ? 'no answer body' : <code>{a.answer}</code>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <div className="buttons">
          <button type="button" className="secondary" aria-label={`Resend delivery ${d.id}`} disabled={resend.isPending} onClick={() => resend.mutate()}>Resend</button>
          {resend.data && <span role="status">Resent as <code>{resend.data.delivery_id}</code>.</span>}
        </div>
        {resend.error && <p role="alert" className="error">{resend.error.message}</p>}
      </article>
    </li>
  );
}

/** Sends again every delivery made in a time range, after the receiver was down, as new deliveries. */
function Replay({ session, at, id, onDone }: { session: Session; at: WebhooksAt; id: string; onDone: () => Promise<void> }) {
  const [from, setFrom] = useState(() => localInput(new Date(Date.now() - 3600_000)));
  const [to, setTo] = useState(() => localInput(new Date(Date.now() + 60_000)));
  const [problem, setProblem] = useState<string | null>(null);
  const replay = useMutation({
    mutationFn: (range: { from: string; to: string }) => at.replay(session.token, id, range.from, range.to),
    onSuccess: onDone,
  });
  function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const f = new Date(from);
    const t = new Date(to);
    if (Number.isNaN(f.getTime()) || Number.isNaN(t.getTime())) {
      setProblem('Give both times: from and to.');
      return;
    }
    setProblem(null);
    // The inputs hold the browser's local time; the API takes ISO 8601 with its zone.
    replay.mutate({ from: f.toISOString(), to: t.toISOString() });
  }
  return (
    <form onSubmit={submit} className="card compact" aria-labelledby="replay-title">
      <h5 id="replay-title">Replay a time range</h5>
      <p className="hint">Every delivery made from the first time until the second (the log keeps 30 days) is sent again, as new deliveries, oldest first.</p>
      <div className="row">
        <label>From<input type="datetime-local" step={1} required value={from} onChange={(e) => setFrom(e.target.value)} /></label>
        <label>To<input type="datetime-local" step={1} required value={to} onChange={(e) => setTo(e.target.value)} /></label>
      </div>
      <button type="submit" disabled={replay.isPending}>Replay</button>
      {replay.data && <p role="status">Replayed {plural(replay.data.count, 'delivery', 'deliveries')}.</p>}
      {(problem ?? replay.error) && <p role="alert" className="error">{problem ?? replay.error?.message}</p>}
    </form>
  );
}
