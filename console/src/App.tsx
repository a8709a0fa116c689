import { lazy, Suspense, useEffect, useState } from 'react';
import { QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { ApiError } from './lib/api-error.js';
import { accountClients } from './clients-api.js';
import { forget, hasExpired, logOut, renew, revokeTemporariesOnExit, savedSession, type Session } from './session.js';
import { useRenewal } from './use-renewal.js';
import { ApiTokenButton } from './ApiToken.js';
import { SignIn } from './pages/SignIn.js';
import { Products } from './pages/Products.js';
import { Product } from './pages/Product.js';
import { Clients } from './pages/Clients.js';
import { Link, Route, Routes } from 'react-router';

// The account page (and its QR code drawing) loads when it is opened, not for the first page.
const Account = lazy(() => import('./pages/Account.js').then((m) => ({ default: m.Account })));

/**
 * The console: sign-in until there is a session, then the user's pages. Signing in keeps the
 * address, so a session that ended comes back to the page it was on.
 */
export function App() {
  const [session, setSession] = useState<Session | null>(savedSession);
  const [expired, setExpired] = useState(false);
  const ended = () => {
    forget();
    setExpired(true);
    setSession(null);
  };
  const [client] = useState(() => new QueryClient({
    // A session the cloud no longer accepts goes back to sign-in, saying why; a token that merely
    // expired (a computer waking from sleep) is renewed first, and the page asks again.
    queryCache: new QueryCache({
      onError: (err) => {
        if (err instanceof ApiError && err.status === 401) {
          const s = savedSession();
          if (s && hasExpired(s)) renew(s).then(setSession, ended);
          else ended();
        }
      },
    }),
    defaultOptions: { queries: { retry: (n, err) => !(err instanceof ApiError && err.status < 500) && n < 2 } },
  }));
  useEffect(() => { if (!session) client.clear(); }, [session, client]);
  useRenewal(session, setSession, ended);
  // After a renewal, what failed for want of a live token is asked again with the new one.
  useEffect(() => {
    if (session) void client.refetchQueries({ predicate: (q) => q.state.error instanceof ApiError && q.state.error.status === 401 });
  }, [session, client]);
  useEffect(revokeTemporariesOnExit, []);

  if (!session) {
    return (
      <>
        {expired && <p role="status" className="notice">Your session ended. Log in again to go on.</p>}
        <SignIn onSession={(s) => { setExpired(false); setSession(s); }} />
      </>
    );
  }
  return (
    <QueryClientProvider client={client}>
      <header>
        <Link to="/" className="brand">Skyport</Link>
        <Link to="/clients">OAuth clients</Link>
        <Link to="/account">Account</Link>
        <ApiTokenButton session={session} />
        <span className="who">{session.username}</span>
        {/* Sign-in shows once the token is revoked, not while the revocation is still on its way. */}
        <button type="button" onClick={() => { void logOut(session).then(() => setSession(null)); }}>Log out</button>
      </header>
      <main>
        <Routes>
          <Route path="/" element={<Products session={session} />} />
          <Route path="/products/:slug/*" element={<Product session={session} />} />
          <Route path="/clients" element={<section aria-labelledby="account-clients-title"><h2 id="account-clients-title">OAuth clients</h2><p>Clients of your own account: their tokens act as you.</p><Clients session={session} at={accountClients} title="Your clients" /></section>} />
          <Route path="/account" element={<Suspense fallback={<p>Loading…</p>}><Account session={session} /></Suspense>} />
          <Route path="*" element={<p>No such page. <Link to="/">Your products</Link></p>} />
        </Routes>
      </main>
    </QueryClientProvider>
  );
}
