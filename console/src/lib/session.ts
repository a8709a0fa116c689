import { api, FORM, type ApiAnswer } from './api-client.js';
import { ApiError } from './api-error.js';

/**
 * The console's own session: a short token of the password grant, through the console's public
 * client (`skyport-console`, docs/api.md), renewed with its refresh token while the console is
 * open and revoked at log-out. Kept for this browser tab only (sessionStorage).
 */
const CLIENT = `Basic ${btoa('skyport-console:skyport-console')}`;
const KEY = 'skyport.session';
/** The console's token lives a quarter of an hour; a console left closed ends soon after. */
export const SESSION_SECONDS = 900;
/**
 * Renewed when a third of its life is left: a background tab's timers may run a minute late
 * (browsers throttle them), and that must still be before expiry.
 */
const RENEW_WHEN_LEFT = 1 / 3;

export interface Session {
  token: string;
  username: string;
  /** The refresh token, single use: each renewal brings the next. */
  refreshToken?: string;
  /** When the token expires, in this browser's clock (ms). */
  expiresAt?: number;
}

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

type TokenAnswer = ApiAnswer<'/oauth/token', 'post'>;

/** A grant of the token endpoint (a form), as the console's own client. */
const grant = (form: { grant_type: string } & Record<string, string>): Promise<TokenAnswer> =>
  api(null).POST('/oauth/token', { headers: { authorization: CLIENT, ...FORM }, body: form });

function sessionOf(t: TokenAnswer, username: string): Session {
  const s: Session = { token: t.access_token, username, expiresAt: Date.now() + t.expires_in * 1000 };
  if (t.refresh_token) s.refreshToken = t.refresh_token;
  return keep(s) as Session;
}

/** The first step: a session, or the MFA challenge's token when the account has MFA on. */
export async function logIn(username: string, password: string): Promise<Session | { mfaToken: string }> {
  try {
    const t = await grant({ grant_type: 'password', username, password, expires_in: String(SESSION_SECONDS) });
    return sessionOf(t, username);
  } catch (err) {
    if (err instanceof ApiError && err.code === 'mfa_required' && typeof err.body.mfa_token === 'string') return { mfaToken: err.body.mfa_token };
    throw err;
  }
}

/** The second step with MFA on: the six-digit code, or a recovery code. */
export async function logInWithCode(username: string, mfaToken: string, code: string): Promise<Session> {
  const recovery = !/^\d{6}$/.test(code.trim());
  const form: { grant_type: string } & Record<string, string> = recovery
    ? { grant_type: 'urn:custom:recovery-code', mfa_token: mfaToken, recovery_code: code.trim() }
    : { grant_type: 'urn:custom:mfa-otp', mfa_token: mfaToken, otp: code.trim() };
  const t = await grant(form);
  return sessionOf(t, username);
}

export async function signUp(username: string, password: string): Promise<void> {
  await api(null).POST('/v1/users', { body: { username, password } });
}

/** How long until the session should be renewed (ms; 0: now); null for a session that cannot be. */
export function renewalDelay(s: Session): number | null {
  if (!s.refreshToken || s.expiresAt === undefined) return null;
  return Math.max(0, s.expiresAt - Date.now() - SESSION_SECONDS * 1000 * RENEW_WHEN_LEFT);
}

/**
 * The next token of the session (the refresh token grant). Throws ApiError; a 4xx means the cloud
 * no longer accepts the session (revoked, or its refresh token expired).
 */
export function renew(s: Session): Promise<Session> {
  const refreshToken = s.refreshToken;
  if (!refreshToken) return Promise.reject(new ApiError(401, 'invalid_token', 'Your session ended.', {}));
  // A refresh token is single use: the timer and a request that met an expired token share one renewal.
  let pending = renewals.get(refreshToken);
  if (!pending) {
    pending = grant({ grant_type: 'refresh_token', refresh_token: refreshToken }).then((t) => sessionOf(t, s.username));
    renewals.set(refreshToken, pending);
  }
  return pending;
}
const renewals = new Map<string, Promise<Session>>();

/** Whether the session's token has expired by now (then a 401 calls for a renewal, not a new login). */
export const hasExpired = (s: Session): boolean => s.expiresAt !== undefined && s.expiresAt <= Date.now();

/**
 * Revokes what the console holds, its access and its refresh token (the refresh token takes the
 * whole session with it on the cloud, and either takes the temporary API tokens); the session
 * ends here whatever the cloud answered.
 */
export async function logOut(session: Session): Promise<void> {
  keep(null);
  temporaries.clear();
  await Promise.all([
    api(session.token).DELETE('/v1/access_tokens/current').catch(() => undefined),
    session.refreshToken && api(null).POST('/oauth/revoke', { headers: { authorization: CLIENT, ...FORM }, body: { token: session.refreshToken } }).catch(() => undefined),
  ]);
}

/** Forgets a session the cloud no longer accepts (expired or revoked). */
export function forget(): void {
  keep(null);
  temporaries.clear();
}

/**
 * The temporary API tokens this page handed out, in memory only: revoked when the page goes
 * away (see revokeTemporariesOnExit). The cloud revokes them with the session in any case.
 */
const temporaries = new Set<string>();

export type TemporaryToken = ApiAnswer<'/v1/access_tokens', 'post'>;

/** A temporary token of this session for the user's own code (POST /v1/access_tokens). */
export async function takeTemporaryToken(session: Session): Promise<TemporaryToken> {
  const t = await api(session.token).POST('/v1/access_tokens', { body: {} });
  temporaries.add(t.access_token);
  return t;
}

/**
 * Closing the tab (or leaving the console) revokes the temporary tokens, as far as a browser
 * lets a page do anything as it goes: a keepalive request outlives the page. What a browser
 * cannot promise (a crash, a closed laptop), the cloud does: the tokens end with the session,
 * which ends once the console stops renewing it.
 */
export function revokeTemporariesOnExit(): () => void {
  const onHide = () => {
    for (const t of temporaries) {
      void api(t).DELETE('/v1/access_tokens/current', { keepalive: true }).catch(() => undefined);
    }
    temporaries.clear();
  };
  window.addEventListener('pagehide', onHide);
  return () => window.removeEventListener('pagehide', onHide);
}
