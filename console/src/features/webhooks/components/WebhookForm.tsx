import { useEffect, useId, useState, type FormEvent, type ReactNode } from 'react';
import { keepPreviousData, useMutation, useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import type { Session } from '../../../lib/session.js';
import { webhookKeys, type Created, type Sample, type WebhookDetail, type WebhookFields, type WebhooksAt } from '../api/webhooks.js';
import { fieldsOf, FormProblem, REQUEST_TYPES, stateOf, type BodyKind, type FormState, type RequestType } from '../utils/form.js';
import { Pairs } from './Pairs.js';

const BODY_KINDS: ReadonlyArray<{ kind: BodyKind; label: string; hint: string }> = [
  { kind: 'default', label: 'Default fields', hint: 'event, data, published_at, coreid (and a product\'s userid, fw_version, productID): a form for POST and PUT, the query string for GET and DELETE.' },
  { kind: 'json', label: 'JSON', hint: 'A JSON object whose texts are templates ({{PARTICLE_EVENT_VALUE}}, or a key of the event\'s JSON data), or one template that renders JSON.' },
  { kind: 'form', label: 'Form', hint: 'Sent as application/x-www-form-urlencoded; each value is a template.' },
  { kind: 'body', label: 'Custom body', hint: 'Any text, a template; no default fields are added.' },
];

/**
 * A webhook's fields, to create one or change one (docs/webhooks.md, "Fields"), with a preview of
 * the request a sample event makes: the API renders it with the same templates as a delivery.
 */
export function WebhookForm({ session, at, editing, onCreated, onSaved, cancelTo }: {
  session: Session;
  at: WebhooksAt;
  /** The webhook being changed; absent for a new one. */
  editing?: WebhookDetail;
  onCreated: (created: Created) => void;
  onSaved: () => void;
  cancelTo: string;
}) {
  const [s, setS] = useState<FormState>(() => stateOf(editing));
  const [problem, setProblem] = useState<string | null>(null);
  const set = (change: Partial<FormState>) => setS((old) => ({ ...old, ...change }));
  const forUser = at.product === null;
  const keptUser = editing?.auth?.username ?? null;
  const fields = (): WebhookFields => fieldsOf(s, { forUser, keptUser });

  const save = useMutation({
    mutationFn: async (body: WebhookFields) => {
      if (editing) {
        await at.update(session.token, editing.id, body);
        return null;
      }
      return at.create(session.token, body);
    },
    onSuccess: (created) => (created ? onCreated(created) : onSaved()),
  });

  function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    setProblem(null);
    try {
      save.mutate(fields());
    } catch (err) {
      if (err instanceof FormProblem) setProblem(err.message);
      else throw err;
    }
  }

  const ids = useId();
  const title = editing ? `Edit ${editing.name ?? editing.event}` : 'New webhook';
  return (
    <section aria-labelledby="webhook-form-title">
      <h3 id="webhook-form-title">{title}</h3>
      <form onSubmit={submit} className="card" aria-labelledby="webhook-form-title">
        <Field label="Name" hint="For people; optional.">
          {(hint) => <input value={s.name} maxLength={100} aria-describedby={hint} onChange={(e) => set({ name: e.target.value })} />}
        </Field>
        <Field label="Event name prefix" hint="Events whose name starts with it trigger the webhook (case-sensitive): temp takes temp, temperature and temp/basement.">
          {(hint) => <input value={s.event} required maxLength={64} aria-describedby={hint} onChange={(e) => set({ event: e.target.value })} />}
        </Field>
        <Field label="URL" hint="http:// or https://; the path and query may hold templates ({{PARTICLE_DEVICE_ID}}), the host may not.">
          {(hint) => <input value={s.url} required maxLength={2048} inputMode="url" aria-describedby={hint} placeholder="https://example.com/hooks" onChange={(e) => set({ url: e.target.value })} />}
        </Field>
        <label>Request type
          <select value={s.requestType} onChange={(e) => set({ requestType: e.target.value as RequestType })}>
            {REQUEST_TYPES.map((t) => <option key={t} value={t}>{t}</option>)}
          </select>
        </label>
        {forUser && (
          <Field label="Device" hint="Only this device's events (its ID or name); empty: every device you own, and what you publish.">
            {(hint) => <input value={s.deviceID} maxLength={100} aria-describedby={hint} onChange={(e) => set({ deviceID: e.target.value })} />}
          </Field>
        )}
        <fieldset>
          <legend>Request body</legend>
          {BODY_KINDS.map((k) => (
            <div key={k.kind} className="field">
              <label className="choice">
                <input type="radio" name="bodyKind" value={k.kind} checked={s.bodyKind === k.kind} aria-describedby={`${ids}-${k.kind}`} onChange={() => set({ bodyKind: k.kind })} />
                {k.label}
              </label>
              <p className="hint choice-hint" id={`${ids}-${k.kind}`}>{k.hint}</p>
            </div>
          ))}
          {s.bodyKind === 'json' && <label>JSON template<textarea value={s.json} rows={6} className="code" onChange={(e) => set({ json: e.target.value })} /></label>}
          {s.bodyKind === 'form' && <Pairs legend="Form fields" what="Form field" rows={s.form} onChange={(form) => set({ form })} />}
          {s.bodyKind === 'body' && <label>Body template<textarea value={s.body} rows={6} className="code" onChange={(e) => set({ body: e.target.value })} /></label>}
          <label className="inline">
            <input type="checkbox" checked={s.noDefaults} onChange={(e) => set({ noDefaults: e.target.checked })} />
            Send only the templates (no default fields)
          </label>
        </fieldset>
        <Pairs legend="Query parameters" what="Query parameter" rows={s.query} onChange={(query) => set({ query })} hint="Added to the URL's query string; values are templates." />
        <Pairs legend="Headers" what="Header" rows={s.headers} onChange={(headers) => set({ headers })} hint="Values are templates. Host, Content-Length and the webhook-* headers are the cloud's." />
        <fieldset>
          <legend>HTTP Basic authentication</legend>
          <label>User name<input value={s.username} maxLength={256} autoComplete="off" onChange={(e) => set({ username: e.target.value })} /></label>
          <Field label="Password" {...(keptUser !== null ? { hint: 'Leave it empty to keep the stored one (it is never shown).' } : {})}>
            {(hint) => <input type="password" value={s.password} maxLength={256} autoComplete="new-password" aria-describedby={hint} onChange={(e) => set({ password: e.target.value })} />}
          </Field>
        </fieldset>
        <label className="inline">
          <input type="checkbox" checked={s.rejectUnauthorized} onChange={(e) => set({ rejectUnauthorized: e.target.checked })} />
          Verify the receiver's HTTPS certificate
        </label>
        <fieldset>
          <legend>Answers</legend>
          <p className="hint">A 2xx answer is published as an event (hook-response/…), a failure as hook-error/….</p>
          <Field label="Response template" hint="How the answer becomes the event's data: a template over the answer's JSON keys.">
            {(hint) => <textarea value={s.responseTemplate} rows={3} className="code" aria-describedby={hint} onChange={(e) => set({ responseTemplate: e.target.value })} />}
          </Field>
          <label>Response topic<input value={s.responseTopic} maxLength={256} placeholder="hook-response/{{PARTICLE_EVENT_NAME}}" onChange={(e) => set({ responseTopic: e.target.value })} /></label>
          <label>Error response topic<input value={s.errorResponseTopic} maxLength={256} placeholder="hook-error/{{PARTICLE_EVENT_NAME}}" onChange={(e) => set({ errorResponseTopic: e.target.value })} /></label>
        </fieldset>
        <RequestPreview session={session} at={at} fields={fields} defaultName={s.event} />
        <div className="buttons">
          <button type="submit" disabled={save.isPending}>{editing ? 'Save changes' : 'Create webhook'}</button>
          <Link to={cancelTo}>Cancel</Link>
        </div>
        {(problem ?? save.error) && <p role="alert" className="error">{problem ?? save.error?.message}</p>}
      </form>
    </section>
  );
}

/**
 * A labelled control with its hint beside it, not in its label: the hint is its description
 * (aria-describedby), so that the control's name stays its label alone.
 */
function Field({ label, hint, children }: { label: string; hint?: string; children: (describedBy: string | undefined) => ReactNode }) {
  const id = useId();
  return (
    <div className="field">
      <label>{label}{children(hint === undefined ? undefined : id)}</label>
      {hint !== undefined && <p id={id} className="hint">{hint}</p>}
    </div>
  );
}

/**
 * The latest value, once it has stayed the same for `ms`: a preview per pause in typing, not per
 * key. `now` takes the latest at once (a click asks for what the form holds, not what it held).
 */
function useSettled<T>(value: T, ms: number): [T, () => void] {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return [settled, () => setSettled(value)];
}

/**
 * The request a sample event makes with the form's fields, asked of the API (POST …/preview),
 * again as the fields change once it has been shown. No secret is in it: the API masks the auth
 * header and leaves the signature out.
 */
function RequestPreview({ session, at, fields, defaultName }: { session: Session; at: WebhooksAt; fields: () => WebhookFields; defaultName: string }) {
  const [shown, setShown] = useState(false);
  const [sample, setSample] = useState({ name: '', data: '{"temp":21.5}', coreid: '' });
  let asked: { body: WebhookFields & { sample: Sample } } | { problem: string };
  try {
    asked = { body: { ...fields(), sample: { name: sample.name.trim() || null, data: sample.data === '' ? null : sample.data, coreid: sample.coreid.trim() || null } } };
  } catch (err) {
    if (!(err instanceof FormProblem)) throw err;
    asked = { problem: err.message };
  }
  // Compared by value: a new object of the same fields is the same preview.
  const [key, settleNow] = useSettled(JSON.stringify(asked), 400);
  const settled = JSON.parse(key) as typeof asked;
  const preview = useQuery({
    queryKey: [...webhookKeys.at(at), 'preview', key],
    queryFn: () => at.preview(session.token, (settled as { body: WebhookFields & { sample: Sample } }).body),
    enabled: shown && 'body' in settled,
    placeholderData: keepPreviousData,
  });
  const problem = 'problem' in settled ? settled.problem : null;
  return (
    <fieldset>
      <legend>Preview</legend>
      <p className="hint">The request a sample event makes with the fields above. Nothing is saved or sent.</p>
      <label>Sample event name<input value={sample.name} maxLength={64} placeholder={defaultName || 'the event name prefix'} onChange={(e) => setSample({ ...sample, name: e.target.value })} /></label>
      <label>Sample event data<textarea value={sample.data} rows={2} maxLength={1024} className="code" onChange={(e) => setSample({ ...sample, data: e.target.value })} /></label>
      <Field label="Sample device ID" hint="Empty: the webhook's device, or a made-up one.">
        {(hint) => <input value={sample.coreid} maxLength={100} aria-describedby={hint} onChange={(e) => setSample({ ...sample, coreid: e.target.value })} />}
      </Field>
      {!shown && <button type="button" className="secondary" onClick={() => { settleNow(); setShown(true); }}>Preview the request</button>}
      {shown && problem && <p role="alert" className="error">{problem}</p>}
      {shown && !problem && preview.error && <p role="alert" className="error">{preview.error.message}</p>}
      {shown && !problem && preview.isPending && <p>Loading…</p>}
      {shown && !problem && !preview.error && preview.data && (
        <div role="region" aria-label="Request preview" className="preview">
          <p><code>{preview.data.method} {preview.data.url}</code></p>
          <table>
            <caption>Headers</caption>
            <thead><tr><th scope="col">Header</th><th scope="col">Value</th></tr></thead>
            <tbody>
              {Object.entries(preview.data.headers).map(([name, value]) => <tr key={name}><th scope="row"><code>{name}</code></th><td><code>{value}</code></td></tr>)}
            </tbody>
          </table>
          <p>Body</p>
          {preview.data.body === '' ? <p className="hint">None.</p> : <pre className="json">{preview.data.body}</pre>}
          <p className="hint">The signature is made with the webhook's signing secret at each attempt; the timestamp and id are those of the attempt.</p>
        </div>
      )}
    </fieldset>
  );
}
