import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { Session } from '../../../lib/session.js';
import { ConfirmButton } from '../../../components/Confirm.js';
import { SecretOnce } from '../../../components/SecretOnce.js';
import { bodyFor, KINDS, kindOf, type ClientKind, type ClientRecord, type NewClient } from '../utils/client-kinds.js';
import { clientKeys, clientsQuery, type ClientsAt } from '../api/clients.js';

interface Created { id: string; secret: string; web: boolean }

/**
 * OAuth clients of an owner: the user's (`/v1/clients`) or a product's
 * (`/v1/products/:p/clients`). One piece for both; `at` says whose.
 */
export function Clients({ session, at, title }: { session: Session; at: ClientsAt; title: string }) {
  const client = useQueryClient();
  const list = useQuery(clientsQuery(session, at));
  const [kind, setKind] = useState<ClientKind>('mobile');
  // The secret lives in this state alone: gone on reload, as the API never gives it again.
  const [created, setCreated] = useState<Created | null>(null);
  const refresh = () => client.invalidateQueries({ queryKey: clientKeys.at(at) });
  const create = useMutation({
    mutationFn: (body: NewClient) => at.create(session.token, body),
    onSuccess: async (r, body) => {
      setCreated({ id: r.client.id, secret: r.client.secret ?? '', web: body.type === 'web' });
      await refresh();
    },
  });

  function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    // The form keeps what was typed when the API refuses it; on success the secret replaces it.
    create.mutate(bodyFor(kind, String(f.get('name')).trim(), String(f.get('redirect_uri') ?? '').trim()));
  }

  return (
    <section aria-labelledby="clients-title">
      <h3 id="clients-title">{title}</h3>
      {created ? (
        <SecretOnce label="Client secret" value={created.secret} onDone={() => setCreated(null)}>
          <p>Client ID: <code>{created.id}</code></p>
          {created.web && <p>A web app uses its client ID alone in the browser: never put the secret in a web page.</p>}
        </SecretOnce>
      ) : (
        <form onSubmit={submit} className="card" aria-label="New OAuth client">
          <fieldset>
            <legend>Kind</legend>
            {KINDS.map((k) => (
              <label key={k.kind} className="choice">
                <input type="radio" name="kind" value={k.kind} checked={kind === k.kind} onChange={() => setKind(k.kind)} />
                <span>{k.label}<span className="hint">{k.hint}</span></span>
              </label>
            ))}
          </fieldset>
          <label>Name<input name="name" required maxLength={100} /></label>
          {kind === 'web' && <label>Redirect URI<input name="redirect_uri" type="url" required maxLength={2000} placeholder="https://app.example.com/setup" /></label>}
          <button type="submit" disabled={create.isPending}>Create client</button>
          {create.error && <p role="alert" className="error">{create.error.message}</p>}
        </form>
      )}
      {list.isPending && <p>Loading…</p>}
      {list.error && <p role="alert" className="error">{list.error.message}</p>}
      {list.data && list.data.clients.length === 0 && <p>No OAuth clients yet.</p>}
      {list.data && list.data.clients.length > 0 && (
        <table>
          <thead><tr><th scope="col">Name</th><th scope="col">Kind</th><th scope="col">Client ID</th><th scope="col" className="actions">Actions</th></tr></thead>
          <tbody>
            {list.data.clients.map((c) => <ClientRow key={c.id} session={session} at={at} record={c} onChange={refresh} />)}
          </tbody>
        </table>
      )}
    </section>
  );
}

function ClientRow({ session, at, record, onChange }: { session: Session; at: ClientsAt; record: ClientRecord; onChange: () => Promise<void> }) {
  const [renaming, setRenaming] = useState(false);
  const rename = useMutation({
    mutationFn: (name: string) => at.rename(session.token, record.id, name),
    onSuccess: async () => { setRenaming(false); await onChange(); },
  });
  const remove = useMutation({ mutationFn: () => at.remove(session.token, record.id), onSuccess: onChange });
  function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    rename.mutate(String(new FormData(e.currentTarget).get('name')).trim());
  }
  return (
    <tr>
      <td>{record.name}</td>
      <td>{kindOf(record)}</td>
      <td><code>{record.id}</code></td>
      <td className="actions">
        {renaming ? (
          <form onSubmit={submit} className="inline-form" aria-label={`Rename ${record.name}`}>
            <label>New name<input name="name" defaultValue={record.name} required maxLength={100} /></label>
            <button type="submit" disabled={rename.isPending}>Save</button>
            <button type="button" className="secondary" onClick={() => setRenaming(false)}>Cancel</button>
          </form>
        ) : (
          <div className="row-actions">
            <button type="button" className="secondary" onClick={() => setRenaming(true)} aria-label={`Rename ${record.name}`}>Rename</button>
            <ConfirmButton label="Delete" subject={record.name} question={`Delete ${record.name}? Every token it made is revoked.`} confirmLabel="Yes, delete it" pending={remove.isPending} onConfirm={() => remove.mutate()} />
          </div>
        )}
        {(rename.error ?? remove.error) && <p role="alert" className="error">{(rename.error ?? remove.error)?.message}</p>}
      </td>
    </tr>
  );
}
