import { lazy, Suspense } from 'react';
import { NavLink, Route, Routes, useParams } from 'react-router';
import type { Session } from '../session.js';
import { Fleet } from './Fleet.js';
import { Customers } from './Customers.js';
import { Clients } from './Clients.js';
import { Team } from './Team.js';
import { ProductSettings } from './ProductSettings.js';

// The schema forms (react-jsonschema-form and Ajv) are most of the console's code: loaded when
// the configuration is opened, not for the first page.
const Configuration = lazy(() => import('./Configuration.js').then((m) => ({ default: m.Configuration })));

/** One product: its fleet and its configuration, each a page of its own (a URL to come back to). */
export function Product({ session }: { session: Session }) {
  const { slug = '' } = useParams();
  const base = `/products/${encodeURIComponent(slug)}`;
  return (
    <section aria-labelledby="product-title">
      <h2 id="product-title">{slug}</h2>
      <nav aria-label="Product" className="tabs">
        {/* Absolute: under this splat route a relative link resolves against the tab's own path. */}
        <NavLink to={base} end>Devices</NavLink>
        <NavLink to={`${base}/config`}>Configuration</NavLink>
        <NavLink to={`${base}/customers`}>Customers</NavLink>
        <NavLink to={`${base}/clients`}>Clients</NavLink>
        <NavLink to={`${base}/team`}>Team</NavLink>
        <NavLink to={`${base}/settings`}>Settings</NavLink>
      </nav>
      <Routes>
        <Route index element={<Fleet session={session} product={slug} />} />
        <Route path="config" element={<Suspense fallback={<p>Loading…</p>}><Configuration session={session} product={slug} /></Suspense>} />
        <Route path="customers" element={<Customers session={session} product={slug} />} />
        <Route path="clients" element={<Clients session={session} base={`/v1/products/${encodeURIComponent(slug)}/clients`} title="OAuth clients" />} />
        <Route path="team" element={<Team session={session} product={slug} />} />
        <Route path="settings" element={<ProductSettings session={session} product={slug} />} />
      </Routes>
    </section>
  );
}
