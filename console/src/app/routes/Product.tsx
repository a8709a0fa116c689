import { lazy, Suspense, type ReactNode } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { NavLink, Route, Routes, useLocation, useNavigate, useParams } from 'react-router';
import { productClients } from '../../features/clients/api/clients.js';
import { productKeys, productQuery } from '../../features/products/api/queries.js';
import type { Session } from '../../lib/session.js';
import { Fleet } from '../../features/devices/components/Fleet.js';
import { Device, type DeviceSection } from '../../features/devices/components/Device.js';
import { Customers } from '../../features/customers/components/Customers.js';
import { Clients } from '../../features/clients/components/Clients.js';
import { Team } from '../../features/team/components/Team.js';
import { ProductSettings } from '../../features/products/components/ProductSettings.js';

// The schema forms (react-jsonschema-form and Ajv) are most of the console's code: loaded when
// the configuration is opened, not for the first page.
const Configuration = lazy(() => import('../../features/configuration/components/Configuration.js').then((m) => ({ default: m.Configuration })));
const ConfigHistory = lazy(() => import('../../features/configuration/components/ConfigHistory.js').then((m) => ({ default: m.ConfigHistory })));
const ConfigSchema = lazy(() => import('../../features/configuration/components/ConfigSchema.js').then((m) => ({ default: m.ConfigSchema })));
const DeviceConfig = lazy(() => import('../../features/configuration/components/DeviceConfig.js').then((m) => ({ default: m.DeviceConfig })));
// Webhooks, their forms and delivery logs: loaded when Integrations is opened.
const Integrations = lazy(() => import('../../features/webhooks/components/Integrations.js').then((m) => ({ default: m.Integrations })));
// Firmware and groups: loaded when their pages (or a device's firmware section) are opened.
const Firmware = lazy(() => import('../../features/firmware/components/Firmware.js').then((m) => ({ default: m.Firmware })));
const DeviceFirmware = lazy(() => import('../../features/firmware/components/DeviceFirmware.js').then((m) => ({ default: m.DeviceFirmware })));
const Groups = lazy(() => import('../../features/groups/components/Groups.js').then((m) => ({ default: m.Groups })));

const later = (page: ReactNode) => <Suspense fallback={<p>Loading…</p>}>{page}</Suspense>;

/** One product: its fleet, firmware, groups, configuration, customers, clients, integrations, team and settings, each a page of its own. */
export function Product({ session }: { session: Session }) {
  const { slug = '' } = useParams();
  const base = `/products/${encodeURIComponent(slug)}`;
  const { pathname } = useLocation();
  const product = useQuery(productQuery(session, slug));
  const client = useQueryClient();
  const navigate = useNavigate();
  // Leaving the team leaves the product: back to the products one still has.
  const left = async () => {
    await client.invalidateQueries({ queryKey: productKeys.list });
    await navigate('/');
  };
  // A device's pages belong to the Devices tab, though their paths are not the fleet's own.
  const onDevices = pathname === base || pathname === `${base}/` || pathname.startsWith(`${base}/devices/`);
  const p = { session, product: slug };
  // A device's page shows its firmware, which the firmware feature draws.
  const firmware: DeviceSection = (device, refresh) => later(<DeviceFirmware {...p} device={device} onChanged={refresh} />);
  return (
    <section aria-labelledby="product-title">
      <h2 id="product-title">{product.data?.product.name ?? slug}</h2>
      {product.error && <p role="alert" className="error">{product.error.message}</p>}
      <nav aria-label="Product" className="tabs">
        {/* Absolute: under this splat route a relative link resolves against the tab's own path. */}
        <NavLink to={base} end className={onDevices ? 'active' : undefined} aria-current={onDevices ? 'page' : undefined}>Devices</NavLink>
        <NavLink to={`${base}/firmware`}>Firmware</NavLink>
        <NavLink to={`${base}/groups`}>Groups</NavLink>
        <NavLink to={`${base}/config`}>Configuration</NavLink>
        <NavLink to={`${base}/customers`}>Customers</NavLink>
        <NavLink to={`${base}/clients`}>Clients</NavLink>
        <NavLink to={`${base}/integrations`}>Integrations</NavLink>
        <NavLink to={`${base}/team`}>Team</NavLink>
        <NavLink to={`${base}/settings`}>Settings</NavLink>
      </nav>
      <Routes>
        <Route index element={<Fleet {...p} />} />
        <Route path="devices/:id" element={<Device {...p} firmware={firmware} />} />
        <Route path="devices/:id/config" element={later(<DeviceConfig {...p} />)} />
        <Route path="firmware" element={later(<Firmware {...p} />)} />
        <Route path="groups" element={later(<Groups {...p} />)} />
        <Route path="config" element={later(<Configuration {...p} />)} />
        <Route path="config/history" element={later(<ConfigHistory {...p} />)} />
        <Route path="config/schema" element={later(<ConfigSchema {...p} />)} />
        <Route path="customers" element={<Customers {...p} />} />
        <Route path="clients" element={<Clients session={session} at={productClients(slug)} title="OAuth clients" />} />
        <Route path="integrations/*" element={later(<Integrations session={session} product={slug} title="Integrations" />)} />
        <Route path="team" element={<Team {...p} onLeft={left} />} />
        <Route path="settings" element={<ProductSettings {...p} />} />
      </Routes>
    </section>
  );
}
