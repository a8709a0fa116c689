import { useEffect, useState } from 'react';
import { QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { ApiError } from './api.js';
import { forget, logOut, savedSession, type Session } from './session.js';
import { SignIn } from './pages/SignIn.js';
import { Products } from './pages/Products.js';

/** The console: sign-in until there is a session, then the user's pages. */
export function App() {
  const [session, setSession] = useState<Session | null>(savedSession);
  const [expired, setExpired] = useState(false);
  const [client] = useState(() => new QueryClient({
    // A session the cloud no longer accepts goes back to sign-in, saying why.
    queryCache: new QueryCache({
      onError: (err) => {
        if (err instanceof ApiError && err.status === 401) {
          forget();
          setExpired(true);
          setSession(null);
        }
      },
    }),
    defaultOptions: { queries: { retry: (n, err) => !(err instanceof ApiError && err.status < 500) && n < 2 } },
  }));
  useEffect(() => { if (!session) client.clear(); }, [session, client]);

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
        <span className="brand">Skyport</span>
        <span className="who">{session.username}</span>
        <button type="button" onClick={() => { void logOut(session); setSession(null); }}>Log out</button>
      </header>
      <main>
        <Products session={session} />
      </main>
    </QueryClientProvider>
  );
}
