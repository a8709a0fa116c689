import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams } from 'react-router';
import type { Session } from '../../../lib/session.js';
import { ConfirmButton } from '../../../components/Confirm.js';
import { SecretOnce } from '../../../components/SecretOnce.js';
import { webhookKeys, webhookQuery, type WebhooksAt } from '../api/webhooks.js';
import { countsInWords, stateInWords, when } from '../utils/words.js';
import { DeliveryLog } from './DeliveryLog.js';

/** A signing secret to show once: after create (`rotated` null) or a rotation (when the old one stops signing). */
export interface ShownSecret { id: string; value: string; rotated: string | null }

/**
 * One webhook: its fields, its state and counts, what can be done with it (edit, test, enable or
 * disable, rotate its secret, delete) and its delivery log with resends and replay.
 */
export function WebhookPage({ session, at, base, secret, onSecret }: {
  session: Session;
  at: WebhooksAt;
  base: string;
  secret: ShownSecret | null;
  onSecret: (s: ShownSecret | null) => void;
}) {
  const { id = '' } = useParams();
  const client = useQueryClient();
  const navigate = useNavigate();
  // Counts change as deliveries are made: asked again while the page is open.
  const webhook = useQuery({ ...webhookQuery(session, at, id), refetchInterval: 5000 });
  const refresh = () => client.invalidateQueries({ queryKey: webhookKeys.at(at) });
  const [testData, setTestData] = useState('');

  const toggle = useMutation({
    mutationFn: (disabled: boolean) => at.update(session.token, id, { disabled }),
    onSuccess: refresh,
  });
  const test = useMutation({
    mutationFn: () => at.test(session.token, id, testData === '' ? null : testData),
    onSuccess: refresh,
  });
  const rotate = useMutation({
    mutationFn: () => at.rotate(session.token, id),
    onSuccess: (r) => onSecret({ id, value: r.secret, rotated: r.previous_secret_expires_at }),
  });
  const remove = useMutation({
    mutationFn: () => at.remove(session.token, id),
    onSuccess: async () => {
      onSecret(null);
      await refresh();
      await navigate(base);
    },
  });

  const back = <p><Link to={base}>All integrations</Link></p>;
  if (webhook.error) return <>{back}<p role="alert" className="error">{webhook.error.message}</p></>;
  if (!webhook.data) return <>{back}<p>Loading…</p></>;
  const w = webhook.data;
  const title = w.name ?? w.event;
  const shown = secret?.id === id ? secret : null;

  function sendTest(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    test.mutate();
  }

  return (
    <section aria-labelledby="webhook-title">
      {back}
      <h3 id="webhook-title">{title}</h3>
      {shown && (
        <SecretOnce label="Signing secret" value={shown.value} onDone={() => onSecret(null)}>
          {shown.rotated === null
            ? <p>Receivers check the <code>webhook-signature</code> header of every request with it (Standard Webhooks).</p>
            : <p>A new signing secret. The old one still signs deliveries until {when(shown.rotated)}: give receivers the new one before then.</p>}
        </SecretOnce>
      )}
      <dl className="pairs">
        <dt>Event name prefix</dt><dd><code>{w.event}</code></dd>
        {w.deviceID && <><dt>Device</dt><dd><code>{w.deviceID}</code></dd></>}
        <dt>Sends</dt><dd><code>{w.requestType} {w.url}</code></dd>
        <dt>State</dt><dd>{stateInWords(w)}</dd>
        {w.failing_since && <><dt>Failing since</dt><dd>{when(w.failing_since)}</dd></>}
        <dt>Last 30 days</dt><dd>{countsInWords(w.counts)}</dd>
        <dt>Created</dt><dd>{when(w.created_at)}</dd>
      </dl>
      <div className="buttons">
        <Link to={`${base}/${encodeURIComponent(id)}/edit`} className="button">Edit</Link>
        <button type="button" className="secondary" disabled={toggle.isPending} onClick={() => toggle.mutate(!w.disabled)}>{w.disabled ? 'Enable' : 'Disable'}</button>
        <ConfirmButton
          label="Rotate secret" destructive={false}
          question="Make a new signing secret? The current one keeps signing for 24 hours."
          confirmLabel="Yes, make a new secret" pending={rotate.isPending} onAsk={() => rotate.reset()}
          onConfirm={() => rotate.mutateAsync()}
        />
        <ConfirmButton
          label="Delete" name={`Delete ${title}`}
          question={`Delete ${title}? Its delivery log goes with it, and deliveries waiting are not sent.`}
          confirmLabel="Yes, delete it" pending={remove.isPending} onConfirm={() => remove.mutate()}
        />
      </div>
      {w.disabled && <p className="hint">While it is disabled its deliveries wait; enabling it sends them.</p>}
      {toggle.isSuccess && <p role="status">{toggle.variables ? 'Disabled: deliveries wait.' : 'Enabled.'}</p>}
      {(toggle.error ?? rotate.error ?? remove.error) && <p role="alert" className="error">{(toggle.error ?? rotate.error ?? remove.error)?.message}</p>}

      <form onSubmit={sendTest} className="card compact" aria-labelledby="test-title">
        <h4 id="test-title">Send a test event</h4>
        <label>Test event data<input value={testData} maxLength={1024} placeholder='{"temp":21.5}' onChange={(e) => setTestData(e.target.value)} /></label>
        <button type="submit" disabled={test.isPending}>Send a test event</button>
        {test.data && <p role="status">Test event queued as <code>{test.data.delivery_id}</code>: it shows in the delivery log.</p>}
        {test.error && <p role="alert" className="error">{test.error.message}</p>}
      </form>

      <DeliveryLog session={session} at={at} id={id} />
    </section>
  );
}
