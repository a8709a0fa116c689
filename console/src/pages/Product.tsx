import { lazy, Suspense, type ReactNode } from 'react';
import { useQuery } from '@tanstack/react-query';
import { NavLink, Route, Routes, useLocation, useParams } from 'react-router';
import { api } from '../lib/api-client.js';
import { productClients } from '../clients-api.js';
import type { Session } from '../session.js';
import { Fleet } from './Fleet.js';
import { Device } from './Device.js';
import { Customers } from './Customers.js';
import { Clients } from './Clients.js';
import { Team } from './Team.js';
import { ProductSettings } from './ProductSettings.js';

// The schema forms (react-jsonschema-form and Ajv) are most of the console's code: loaded when
// the configuration is opened, not for the first page.
const Configuration = lazy(() => import('./Configuration.js').then((m) => ({ default: m.Configuration })));
const ConfigHistory = lazy(() => import('./ConfigHistory.js').then((m) => ({ default: m.ConfigHistory })));
const ConfigSchema = lazy(() => import('./ConfigSchema.js').then((m) => ({ default: m.ConfigSchema })));
const DeviceConfig = lazy(() => import('./DeviceConfig.js').then((m) => ({ default: m.DeviceConfig })));

const later = (page: ReactNode) => <Suspense fallback={<p>Loading…</p>}>{page}</Suspense>;

/** One product: its fleet, configuration, customers, clients, team and settings, each a page of its own. */
export function Product({ session }: { session: Session }) {
  const { slug = '' } = useParams();
  const base = `/products/${encodeURIComponent(slug)}`;
  const { pathname } = useLocation();
  const product = useQuery({
    queryKey: ['product', slug],
    queryFn: () => api(session.token).GET('/v1/products/{productIdOrSlug}', { params: { path: { productIdOrSlug: slug } } }),
  });
  // A device's pages belong to the Devices tab, though their paths are not the fleet's own.
  const onDevices = pathname === base || pathname === `${base}/` || pathname.startsWith(`${base}/devices/`);
  const p = { session, product: slug };
  return (
    <section aria-labelledby="product-title">
      <h2 id="product-title">{product.data?.product.name ?? slug}</h2>
      {product.error && <p role="alert" className="error">{product.error.message}</p>}
      <nav aria-label="Product" className="tabs">
        {/* Absolute: under this splat route a relative link resolves against the tab's own path. */}
        <NavLink to={base} end className={onDevices ? 'active' : undefined} aria-current={onDevices ? 'page' : undefined}>Devices</NavLink>
        <NavLink to={`${base}/config`}>Configuration</NavLink>
        <NavLink to={`${base}/customers`}>Customers</NavLink>
        <NavLink to={`${base}/clients`}>Clients</NavLink>
        <NavLink to={`${base}/team`}>Team</NavLink>
        <NavLink to={`${base}/settings`}>Settings</NavLink>
      </nav>
      <Routes>
        <Route index element={<Fleet {...p} />} />
        <Route path="devices/:id" element={<Device {...p} />} />
        <Route path="devices/:id/config" element={later(<DeviceConfig {...p} />)} />
        <Route path="config" element={later(<Configuration {...p} />)} />
        <Route path="config/history" element={later(<ConfigHistory {...p} />)} />
        <Route path="config/schema" element={later(<ConfigSchema {...p} />)} />
        <Route path="customers" element={<Customers {...p} />} />
        <Route path="clients" element={<Clients session={session} at={productClients(slug)} title="OAuth clients" />} />
        <Route path="team" element={<Team {...p} />} />
        <Route path="settings" element={<ProductSettings {...p} />} />
      </Routes>
    </section>
  );
}
