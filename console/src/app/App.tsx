import { useEffect, useState } from 'react';
import { Link } from 'react-router';
import { ApiError } from '../lib/api-error.js';
import { forget, hasExpired, logOut, renew, revokeTemporariesOnExit, savedSession, type Session } from '../lib/session.js';
import { useRenewal } from '../lib/use-renewal.js';
import { ApiTokenButton } from '../components/ApiToken.js';
import { SignIn } from '../features/auth/components/SignIn.js';
import { AppProvider, createQueryClient } from './provider.js';
import { AppRoutes } from './router.js';

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
  // A session the cloud no longer accepts goes back to sign-in, saying why; a token that merely
  // expired (a computer waking from sleep) is renewed first, and the page asks again.
  const [client] = useState(() => createQueryClient(() => {
    const s = savedSession();
    if (s && hasExpired(s)) renew(s).then(setSession, ended);
    else ended();
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
    <AppProvider client={client}>
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
        <AppRoutes session={session} />
      </main>
    </AppProvider>
  );
}
