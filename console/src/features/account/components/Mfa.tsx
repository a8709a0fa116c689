import { useState, type FormEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api } from '../../../lib/api-client.js';
import { accountKeys, userQuery } from '../api/queries.js';
import { CopyButton, DownloadLink } from '../../../components/copy.js';
import type { Session } from '../../../lib/session.js';
import { QrCode } from './QrCode.js';

/**
 * Two-step verification: turning it on (a QR code of the otpauth URI, the secret for typing in,
 * the first code, then the recovery codes shown once) and off (with the current password).
 */
export function Mfa({ session }: { session: Session }) {
  const client = useQueryClient();
  const user = useQuery(userQuery(session));
  const [codes, setCodes] = useState<string[] | null>(null);
  const start = useMutation({ mutationFn: () => api(session.token).GET('/v1/user/mfa-enable') });
  const confirm = useMutation({
    mutationFn: (otp: string) => api(session.token).POST('/v1/user/mfa-enable', { body: { mfa_token: start.data?.mfa_token ?? '', otp } }),
    onSuccess: (r) => { setCodes(r.recovery_codes); start.reset(); },
  });
  const disable = useMutation({
    mutationFn: (password: string) => api(session.token).PUT('/v1/user/mfa-disable', { body: { current_password: password } }),
    onSuccess: () => client.invalidateQueries({ queryKey: accountKeys.user }),
  });

  function submitCode(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    confirm.mutate(String(new FormData(e.currentTarget).get('otp')).trim());
  }
  function submitDisable(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    disable.mutate(String(new FormData(e.currentTarget).get('current_password')));
  }
  async function codesSaved() {
    setCodes(null);
    await client.invalidateQueries({ queryKey: accountKeys.user });
  }

  return (
    <section className="card" aria-labelledby="mfa-title">
      <h3 id="mfa-title">Two-step verification</h3>
      {user.isPending && <p>Loading…</p>}
      {user.error && <p role="alert" className="error">{user.error.message}</p>}
      {codes ? (
        <RecoveryCodes codes={codes} onDone={() => { void codesSaved(); }} />
      ) : start.data ? (
        <form onSubmit={submitCode} aria-label="Turn on two-step verification">
          <p>Scan this code with your authenticator app, or type the key in, then enter the six-digit code it shows.</p>
          <QrCode text={start.data.otpauth_url} label="QR code for your authenticator app" />
          <p>Key: <code className="secret-key">{start.data.secret}</code></p>
          <label>Six-digit code<input name="otp" inputMode="numeric" autoComplete="one-time-code" pattern="\d{6}" maxLength={6} required /></label>
          <div className="actions">
            <button type="submit" disabled={confirm.isPending}>Turn on</button>
            <button type="button" onClick={() => { start.reset(); confirm.reset(); }}>Cancel</button>
          </div>
          {confirm.error && <p role="alert" className="error">{confirm.error.message}</p>}
        </form>
      ) : user.data?.mfa.enabled ? (
        <form onSubmit={submitDisable} aria-label="Turn off two-step verification">
          <p>On: logging in asks for a code of your authenticator app.</p>
          <label>Current password<input name="current_password" type="password" autoComplete="current-password" required /></label>
          <button type="submit" disabled={disable.isPending}>Turn off</button>
          {disable.error && <p role="alert" className="error">{disable.error.message}</p>}
        </form>
      ) : user.data ? (
        <>
          <p>Off: logging in asks only for your password.</p>
          <button type="button" onClick={() => start.mutate()} disabled={start.isPending}>Turn on two-step verification</button>
          {start.error && <p role="alert" className="error">{start.error.message}</p>}
        </>
      ) : null}
    </section>
  );
}

/** The recovery codes, shown this once: copied, downloaded, or written down. */
function RecoveryCodes({ codes, onDone }: { codes: string[]; onDone: () => void }) {
  const text = codes.join('\n') + '\n';
  return (
    <div>
      <p role="status">Two-step verification is on.</p>
      <p className="warning">Save these recovery codes now: they will not be shown again. Each logs you in once if you lose your authenticator.</p>
      <ul className="codes" aria-label="Recovery codes">
        {codes.map((c) => <li key={c}><code>{c}</code></li>)}
      </ul>
      <div className="actions">
        <CopyButton text={text} label="Copy codes" />
        <DownloadLink name="skyport-recovery-codes.txt" text={text} type="text/plain" className="button">Download codes</DownloadLink>
        <button type="button" onClick={onDone}>I have saved them</button>
      </div>
    </div>
  );
}
