import { useState, type FormEvent } from 'react';
import { ApiError } from '../../../lib/api-error.js';
import { logIn, logInWithCode, signUp, type Session } from '../../../lib/session.js';

type Step = { kind: 'login' } | { kind: 'signup' } | { kind: 'mfa'; username: string; mfaToken: string };

/** Log in (with the MFA step when the account has it on), or sign up and be logged in. */
export function SignIn({ onSession }: { onSession: (s: Session) => void }) {
  const [step, setStep] = useState<Step>({ kind: 'login' });
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function run(work: () => Promise<void>) {
    setBusy(true);
    setError(null);
    try {
      await work();
    } catch (err) {
      setError(err instanceof ApiError ? err.message : 'Something went wrong.');
    } finally {
      setBusy(false);
    }
  }

  function submitLogin(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const username = String(f.get('username'));
    const password = String(f.get('password'));
    void run(async () => {
      if (step.kind === 'signup') await signUp(username, password);
      const first = await logIn(username, password);
      if ('mfaToken' in first) setStep({ kind: 'mfa', username, mfaToken: first.mfaToken });
      else onSession(first);
    });
  }

  function submitCode(e: FormEvent<HTMLFormElement>) {
    e.preventDefault();
    if (step.kind !== 'mfa') return;
    const code = String(new FormData(e.currentTarget).get('code'));
    void run(async () => onSession(await logInWithCode(step.username, step.mfaToken, code)));
  }

  return (
    <main className="signin">
      <h1>Skyport</h1>
      {step.kind === 'mfa' ? (
        <form onSubmit={submitCode} aria-labelledby="mfa-title">
          <h2 id="mfa-title">Two-step verification</h2>
          <p>Enter the six-digit code of your authenticator app, or a recovery code.</p>
          <label>Code<input name="code" autoComplete="one-time-code" inputMode="numeric" required autoFocus /></label>
          <button type="submit" disabled={busy}>Verify</button>
          <button type="button" className="link" onClick={() => setStep({ kind: 'login' })}>Back</button>
        </form>
      ) : (
        <form onSubmit={submitLogin} aria-labelledby="signin-title">
          <h2 id="signin-title">{step.kind === 'signup' ? 'Create an account' : 'Log in'}</h2>
          <label>E-mail<input name="username" type="email" autoComplete="username" required autoFocus /></label>
          <label>Password<input name="password" type="password" autoComplete={step.kind === 'signup' ? 'new-password' : 'current-password'} required minLength={step.kind === 'signup' ? 8 : undefined} /></label>
          <button type="submit" disabled={busy}>{step.kind === 'signup' ? 'Sign up' : 'Log in'}</button>
          <button type="button" className="link" onClick={() => setStep({ kind: step.kind === 'signup' ? 'login' : 'signup' })}>
            {step.kind === 'signup' ? 'I have an account: log in' : 'New here? Create an account'}
          </button>
        </form>
      )}
      {error && <p role="alert" className="error">{error}</p>}
    </main>
  );
}
