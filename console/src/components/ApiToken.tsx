import { useState } from 'react';
import { ApiError } from '../lib/api-error.js';
import { CopyButton } from './copy.js';
import { takeTemporaryToken, type Session, type TemporaryToken } from '../lib/session.js';

/**
 * "API token" in the header: a temporary token for the user's own code (curl, a script), tied to
 * this console session (docs/api.md, "Access tokens"): it ends at log-out, when the session
 * expires or is revoked, and when this tab is closed. Shown once.
 */
export function ApiTokenButton({ session }: { session: Session }) {
  const [open, setOpen] = useState(false);
  const [token, setToken] = useState<TemporaryToken | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function take() {
    setBusy(true);
    setError(null);
    try {
      setToken(await takeTemporaryToken(session));
    } catch (err) {
      setError(err instanceof ApiError ? err.message : 'Something went wrong.');
    } finally {
      setBusy(false);
    }
  }

  function close() {
    // The token is not kept on the page once closed: it was shown once.
    setOpen(false);
    setToken(null);
    setError(null);
  }

  return (
    <>
      <button type="button" aria-expanded={open} aria-controls="api-token" onClick={() => (open ? close() : setOpen(true))}>API token</button>
      {open && (
        <section id="api-token" className="card popover" aria-labelledby="api-token-title">
          <h2 id="api-token-title">API token</h2>
          <p>A token for your own code and tools, acting for your account. It ends with this console session: when you log out, when the session expires, or when you close this tab.</p>
          {token ? (
            <>
              <label>Your token
                <input readOnly value={token.access_token} className="secret" onFocus={(e) => e.currentTarget.select()} />
              </label>
              <p className="warning">Copy it now: it will not be shown again.</p>
              <div className="actions">
                <CopyButton text={token.access_token} label="Copy token" />
                <button type="button" onClick={close}>Done</button>
              </div>
            </>
          ) : (
            <div className="actions">
              <button type="button" onClick={() => { void take(); }} disabled={busy}>Create token</button>
              <button type="button" onClick={close}>Cancel</button>
            </div>
          )}
          {error && <p role="alert" className="error">{error}</p>}
        </section>
      )}
    </>
  );
}
