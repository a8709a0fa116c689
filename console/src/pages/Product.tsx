import { lazy, Suspense } from 'react';
import { NavLink, Route, Routes, useParams } from 'react-router';
import type { Session } from '../session.js';
import { Fleet } from './Fleet.js';
import { Device } from './Device.js';

// The schema forms (react-jsonschema-form and Ajv) are most of the console's code: loaded when
// the configuration is opened, not for the first page.
const Configuration = lazy(() => import('./Configuration.js').then((m) => ({ default: m.Configuration })));
const ConfigHistory = lazy(() => import('./ConfigHistory.js').then((m) => ({ default: m.ConfigHistory })));
const ConfigSchema = lazy(() => import('./ConfigSchema.js').then((m) => ({ default: m.ConfigSchema })));
const DeviceConfig = lazy(() => import('./DeviceConfig.js').then((m) => ({ default: m.DeviceConfig })));

/** One product: its fleet and its configuration, each a page of its own (a URL to come back to). */
export function Product({ session }: { session: Session }) {
  const { slug = '' } = useParams();
  return (
    <section aria-labelledby="product-title">
      <h2 id="product-title">{slug}</h2>
      <nav aria-label="Product" className="tabs">
        {/* Absolute: a relative link inside this splat route resolves against the whole address. */}
        <NavLink to={`/products/${encodeURIComponent(slug)}`} end>Devices</NavLink>
        <NavLink to={`/products/${encodeURIComponent(slug)}/config`}>Configuration</NavLink>
      </nav>
      <Routes>
        <Route index element={<Fleet session={session} product={slug} />} />
        <Route path="devices/:id" element={<Device session={session} product={slug} />} />
        <Route path="config" element={<Suspense fallback={<p>Loading…</p>}><Configuration session={session} product={slug} /></Suspense>} />
        <Route path="config/history" element={<Suspense fallback={<p>Loading…</p>}><ConfigHistory session={session} product={slug} /></Suspense>} />
        <Route path="config/schema" element={<Suspense fallback={<p>Loading…</p>}><ConfigSchema session={session} product={slug} /></Suspense>} />
        <Route path="devices/:id/config" element={<Suspense fallback={<p>Loading…</p>}><DeviceConfig session={session} product={slug} /></Suspense>} />
      </Routes>
    </section>
  );
}
