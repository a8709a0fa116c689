import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api } from '../../../lib/api-client.js';
import { productKeys, productsQuery } from '../api/queries.js';
import type { Session } from '../../../lib/session.js';

/** Platforms a product is made for (Particle's ids); the tracker is the one with a configuration schema. */
const PLATFORMS: Array<[number, string]> = [[26, 'Tracker'], [12, 'Argon'], [13, 'Boron'], [32, 'P2'], [6, 'Photon']];

/** The products the user is a team member of, and a form to create one. */
export function Products({ session }: { session: Session }) {
  const client = useQueryClient();
  const products = useQuery(productsQuery(session));
  const [open, setOpen] = useState(false);
  const create = useMutation({
    mutationFn: (product: { name: string; description: string; platform_id: number }) =>
      api(session.token).POST('/v1/user/products', { body: { product } }),
    onSuccess: async () => {
      setOpen(false);
      await client.invalidateQueries({ queryKey: productKeys.list });
    },
  });

  function submit(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    create.mutate({ name: String(f.get('name')), description: String(f.get('description') ?? ''), platform_id: Number(f.get('platform')) });
  }

  return (
    <section aria-labelledby="products-title">
      <div className="row">
        <h2 id="products-title">Products</h2>
        <button type="button" onClick={() => setOpen(!open)} aria-expanded={open}>New product</button>
      </div>
      {open && (
        <form onSubmit={submit} className="card" aria-label="New product">
          <label>Name<input name="name" required maxLength={64} autoFocus /></label>
          <label>Description<input name="description" maxLength={256} /></label>
          <label>Platform
            <select name="platform" defaultValue={26}>
              {PLATFORMS.map(([id, name]) => <option key={id} value={id}>{name}</option>)}
            </select>
          </label>
          <button type="submit" disabled={create.isPending}>Create</button>
          {create.error && <p role="alert" className="error">{create.error.message}</p>}
        </form>
      )}
      {products.isPending && <p>Loading…</p>}
      {products.error && <p role="alert" className="error">{products.error.message}</p>}
      {products.data && products.data.products.length === 0 && <p>No products yet: create one to start a fleet.</p>}
      {products.data && products.data.products.length > 0 && (
        <table>
          <thead><tr><th scope="col">Name</th><th scope="col">Slug</th><th scope="col">ID</th><th scope="col">Description</th></tr></thead>
          <tbody>
            {products.data.products.map((p) => (
              <tr key={p.id}><td><Link to={`/products/${p.slug}`}>{p.name}</Link></td><td>{p.slug}</td><td>{p.id}</td><td>{p.description}</td></tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
