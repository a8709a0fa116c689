import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate } from 'react-router';
import { api } from '../../../lib/api-client.js';
import { productKeys, productQuery } from '../api/queries.js';
import type { Session } from '../../../lib/session.js';

/** A product's name and description, and deleting the product (confirmed by typing its slug). */
export function ProductSettings({ session, product }: { session: Session; product: string }) {
  const at = { params: { path: { productIdOrSlug: product } } };
  const client = useQueryClient();
  const navigate = useNavigate();
  const current = useQuery(productQuery(session, product));
  const [typed, setTyped] = useState('');
  const save = useMutation({
    mutationFn: (body: { name: string; description: string }) => api(session.token).PUT('/v1/products/{productIdOrSlug}', { ...at, body }),
    onSuccess: async () => {
      await client.invalidateQueries({ queryKey: productKeys.one(product) });
      await client.invalidateQueries({ queryKey: productKeys.list });
    },
  });
  const remove = useMutation({
    // The slug, typed by the user, is also the API's own confirmation for a product with customers.
    mutationFn: (slug: string) => api(session.token).DELETE('/v1/products/{productIdOrSlug}', { params: { path: { productIdOrSlug: product }, query: { confirm: slug } } }),
    onSuccess: async () => {
      client.removeQueries({ queryKey: productKeys.one(product) });
      await client.invalidateQueries({ queryKey: productKeys.list });
      await navigate('/');
    },
  });

  function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    save.mutate({ name: String(f.get('name')).trim(), description: String(f.get('description') ?? '') });
  }

  if (current.error) return <p role="alert" className="error">{current.error.message}</p>;
  if (!current.data) return <p>Loading…</p>;
  const p = current.data.product;
  return (
    <section aria-labelledby="settings-title">
      <h3 id="settings-title">Settings</h3>
      {/* Keyed by the saved values, so that the form shows what the API holds after a save. */}
      <form key={`${p.name}\n${p.description}`} onSubmit={submit} className="card" aria-label="Product settings" onChange={() => save.reset()}>
        <label>Name<input name="name" defaultValue={p.name} required maxLength={64} /></label>
        <label>Description<input name="description" defaultValue={p.description} maxLength={256} /></label>
        <p>The product's address keeps its slug, <code>{p.slug}</code>, whatever its name.</p>
        <button type="submit" disabled={save.isPending}>Save</button>
        {save.isSuccess && <p role="status">Saved.</p>}
        {save.error && <p role="alert" className="error">{save.error.message}</p>}
      </form>
      <form className="card danger-zone" aria-labelledby="delete-title" onSubmit={(e) => { e.preventDefault(); remove.mutate(typed.trim()); }}>
        <h4 id="delete-title">Delete this product</h4>
        <p>Its OAuth clients, their tokens and its customers are deleted with it; its devices leave it (those its customers own are released). This cannot be undone.</p>
        <label>Type the product's slug, {p.slug}, to confirm<input value={typed} onChange={(e) => setTyped(e.target.value)} autoComplete="off" spellCheck={false} /></label>
        <button type="submit" className="danger" disabled={typed.trim() !== p.slug || remove.isPending}>Delete product</button>
        {remove.error && <p role="alert" className="error">{remove.error.message}</p>}
      </form>
    </section>
  );
}
