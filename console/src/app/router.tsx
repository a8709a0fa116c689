import { lazy, Suspense } from 'react';
import { Link, Route, Routes } from 'react-router';
import type { Session } from '../lib/session.js';
import { Products } from '../features/products/components/Products.js';
import { Clients } from '../features/clients/components/Clients.js';
import { accountClients } from '../features/clients/api/clients.js';
import { Product } from './routes/Product.js';

// The account page (and its QR code drawing) loads when it is opened, not for the first page.
const Account = lazy(() => import('../features/account/components/Account.js').then((m) => ({ default: m.Account })));

/** The pages of a session, each an address to keep and share (docs/console.md, "The pages"). */
export function AppRoutes({ session }: { session: Session }) {
  return (
    <Routes>
      <Route path="/" element={<Products session={session} />} />
      <Route path="/products/:slug/*" element={<Product session={session} />} />
      <Route path="/clients" element={<section aria-labelledby="account-clients-title"><h2 id="account-clients-title">OAuth clients</h2><p>Clients of your own account: their tokens act as you.</p><Clients session={session} at={accountClients} title="Your clients" /></section>} />
      <Route path="/account" element={<Suspense fallback={<p>Loading…</p>}><Account session={session} /></Suspense>} />
      <Route path="*" element={<p>No such page. <Link to="/">Your products</Link></p>} />
    </Routes>
  );
}
