import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, type ApiAnswer, type ApiBody } from '../../../lib/api-client.js';
import { customerKeys, customersQuery } from '../api/queries.js';
import type { Session } from '../../../lib/session.js';
import { ConfirmButton } from '../../../components/Confirm.js';
import { Pager } from '../../../components/Pager.js';

type Customer = ApiAnswer<'/v1/products/{productIdOrSlug}/customers'>['customers'][number];

/**
 * A product's customers, a page at a time, each with its devices: created with a password
 * (they log in themselves through the product's client) or without one (a shadow customer of
 * the two-legged design, whose tokens the product's server mints).
 */
export function Customers({ session, product }: { session: Session; product: string }) {
  const client = useQueryClient();
  const [page, setPage] = useState(1);
  const [withPassword, setWithPassword] = useState(true);
  const list = useQuery({
    ...customersQuery(session, product, page),
    placeholderData: (previous) => previous,
  });
  const refresh = () => client.invalidateQueries({ queryKey: customerKeys.of(product) });
  const create = useMutation({
    // With the team's token the answer is the customer (with client credentials it would be a token).
    mutationFn: async (body: ApiBody<'/v1/products/{productIdOrSlug}/customers', 'post'>) => {
      const r = await api(session.token).POST('/v1/products/{productIdOrSlug}/customers', { params: { path: { productIdOrSlug: product } }, body });
      return 'customer' in r ? r.customer : null;
    },
    onSuccess: refresh,
  });

  function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const form = e.currentTarget;
    const f = new FormData(form);
    const email = String(f.get('email')).trim();
    create.mutate(withPassword ? { email, password: String(f.get('password')) } : { email, no_password: true }, { onSuccess: () => form.reset() });
  }

  return (
    <section aria-labelledby="customers-title">
      <h3 id="customers-title">Customers</h3>
      <form onSubmit={submit} className="card" aria-label="New customer">
        <label>E-mail<input name="email" type="email" required maxLength={254} /></label>
        <fieldset>
          <legend>Signing in</legend>
          <label className="choice">
            <input type="radio" name="signin" checked={withPassword} onChange={() => setWithPassword(true)} />
            <span>With a password<span className="hint">The customer logs in through the product's Simple Auth client.</span></span>
          </label>
          <label className="choice">
            <input type="radio" name="signin" checked={!withPassword} onChange={() => setWithPassword(false)} />
            <span>No password (shadow customer)<span className="hint">Two-legged: your server mints the customer's tokens with its client.</span></span>
          </label>
        </fieldset>
        {withPassword && <label>Password<input name="password" type="password" autoComplete="new-password" required minLength={8} maxLength={256} /></label>}
        <button type="submit" disabled={create.isPending}>Create customer</button>
        {create.data && <p role="status">Customer {create.data.username} created.</p>}
        {create.error && <p role="alert" className="error">{create.error.message}</p>}
      </form>
      {list.isPending && <p>Loading…</p>}
      {list.error && <p role="alert" className="error">{list.error.message}</p>}
      {list.data && list.data.customers.length === 0 && <p>No customers in this product yet.</p>}
      {list.data && list.data.customers.length > 0 && (
        <>
          <table>
            <thead><tr><th scope="col">E-mail</th><th scope="col">Signs in</th><th scope="col">Devices</th><th scope="col">Created</th><th scope="col" className="actions">Actions</th></tr></thead>
            <tbody>
              {list.data.customers.map((c) => <CustomerRow key={c.id} session={session} product={product} customer={c} onChange={refresh} />)}
            </tbody>
          </table>
          <Pager label="Pages of customers" page={list.data.meta.page} pages={list.data.meta.total_pages} onPage={setPage} count={`${list.data.meta.total} customers`} />
        </>
      )}
    </section>
  );
}

function CustomerRow({ session, product, customer: c, onChange }: { session: Session; product: string; customer: Customer; onChange: () => Promise<void> }) {
  const at = { params: { path: { productIdOrSlug: product, email: c.username } } };
  const [changing, setChanging] = useState(false);
  const setPassword = useMutation({
    mutationFn: (password: string) => api(session.token).PUT('/v1/products/{productIdOrSlug}/customers/{email}', { ...at, body: { password } }),
    onSuccess: async () => { setChanging(false); await onChange(); },
  });
  const remove = useMutation({ mutationFn: () => api(session.token).DELETE('/v1/products/{productIdOrSlug}/customers/{email}', at), onSuccess: onChange });
  function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    setPassword.mutate(String(new FormData(e.currentTarget).get('password')));
  }
  return (
    <tr>
      <td>{c.username}</td>
      <td>{c.shadow ? 'no password (shadow)' : 'with a password'}</td>
      <td>{c.devices.length === 0 ? 'none' : <ul className="plain">{c.devices.map((d) => <li key={d}><code>{d}</code></li>)}</ul>}</td>
      <td>{new Date(c.created_at).toLocaleDateString()}</td>
      <td className="actions">
        {changing ? (
          <form onSubmit={submit} className="inline-form" aria-label={`New password for ${c.username}`}>
            <label>New password<input name="password" type="password" autoComplete="new-password" required minLength={8} maxLength={256} /></label>
            <p className="hint">Its tokens are revoked: the customer logs in again.</p>
            <button type="submit" disabled={setPassword.isPending}>Save</button>
            <button type="button" className="secondary" onClick={() => setChanging(false)}>Cancel</button>
          </form>
        ) : (
          <div className="row-actions">
            <button type="button" className="secondary" aria-label={`Set password for ${c.username}`} onClick={() => setChanging(true)}>Set password</button>
            <ConfirmButton
              label="Delete"
              subject={c.username}
              question={`Delete ${c.username}? Its tokens and claim codes are revoked and its devices released.`}
              confirmLabel="Yes, delete"
              pending={remove.isPending}
              onConfirm={() => remove.mutate()}
            />
          </div>
        )}
        {setPassword.isSuccess && !changing && <p role="status">Password changed.</p>}
        {(setPassword.error ?? remove.error) && <p role="alert" className="error">{(setPassword.error ?? remove.error)?.message}</p>}
      </td>
    </tr>
  );
}
