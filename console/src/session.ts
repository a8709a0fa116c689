import { api, ApiError } from './api.js';

/**
 * The console's own session: a token of the password grant, through the console's public client
 * (`skyport-console`, docs/api.md), kept for this browser tab only (sessionStorage) and revoked
 * at log-out.
 */
const CLIENT = `Basic ${btoa('skyport-console:skyport-console')}`;
const KEY = 'skyport.session';
/** The console's token lives an hour; a later step renews it while the console is open. */
export const SESSION_SECONDS = 3600;

export interface Session { token: string; username: string }

export function savedSession(): Session | null {
  try {
    const s = JSON.parse(sessionStorage.getItem(KEY) ?? 'null') as Session | null;
    return s && typeof s.token === 'string' ? s : null;
  } catch {
    return null;
  }
}

function keep(s: Session | null): Session | null {
  if (s) sessionStorage.setItem(KEY, JSON.stringify(s));
  else sessionStorage.removeItem(KEY);
  return s;
}

interface TokenAnswer { access_token: string }

/** The first step: a session, or the MFA challenge's token when the account has MFA on. */
export async function logIn(username: string, password: string): Promise<Session | { mfaToken: string }> {
  try {
    const t = await api<TokenAnswer>('/oauth/token', { method: 'POST', headers: { authorization: CLIENT }, form: { grant_type: 'password', username, password, expires_in: String(SESSION_SECONDS) } });
    return keep({ token: t.access_token, username }) as Session;
  } catch (err) {
    if (err instanceof ApiError && err.code === 'mfa_required' && typeof err.body.mfa_token === 'string') return { mfaToken: err.body.mfa_token };
    throw err;
  }
}

/** The second step with MFA on: the six-digit code, or a recovery code. */
export async function logInWithCode(username: string, mfaToken: string, code: string): Promise<Session> {
  const recovery = !/^\d{6}$/.test(code.trim());
  const form: Record<string, string> = recovery
    ? { grant_type: 'urn:custom:recovery-code', mfa_token: mfaToken, recovery_code: code.trim() }
    : { grant_type: 'urn:custom:mfa-otp', mfa_token: mfaToken, otp: code.trim() };
  const t = await api<TokenAnswer>('/oauth/token', { method: 'POST', headers: { authorization: CLIENT }, form });
  return keep({ token: t.access_token, username }) as Session;
}

export async function signUp(username: string, password: string): Promise<void> {
  await api('/v1/users', { method: 'POST', json: { username, password } });
}

/** Revokes the console's token; the session ends here whatever the cloud answered. */
export async function logOut(session: Session): Promise<void> {
  keep(null);
  await api('/v1/access_tokens/current', { method: 'DELETE', token: session.token }).catch(() => undefined);
}

/** Forgets a session the cloud no longer accepts (expired or revoked). */
export function forget(): void {
  keep(null);
}
