import { DomainError } from './errors.js';

/** The longest lifetime a token may be given: ten years. Longer asks for `expires_in=0`. */
export const MAX_LIFETIME_SECONDS = 10 * 365 * 86400;

export interface Lifetime {
  /** Seconds the token lives; 0 for a token that never expires. */
  expiresIn: number;
  expiresAt: Date | null;
}

/**
 * Resolves `expires_in` (seconds; 0 = never expires) and `expires_at` (ISO-8601, wins when both
 * are given) of a token request (docs/particle-compatibility.md#token-lifetimes).
 */
export function resolveLifetime(input: { expiresIn?: string | undefined; expiresAt?: string | undefined }, now: Date, defaultSeconds: number): Lifetime {
  if (input.expiresAt !== undefined && input.expiresAt !== '') {
    const at = Date.parse(input.expiresAt);
    if (!/^\d{4}-\d{2}-\d{2}/.test(input.expiresAt) || Number.isNaN(at)) {
      throw new DomainError('invalid_request', 'expires_at must be an ISO-8601 date and time');
    }
    const seconds = Math.floor((at - now.getTime()) / 1000);
    if (seconds <= 0) throw new DomainError('invalid_request', 'expires_at must be in the future');
    if (seconds > MAX_LIFETIME_SECONDS) throw new DomainError('invalid_request', 'expires_at may be at most ten years ahead; use expires_in=0 for a token that never expires');
    return { expiresIn: seconds, expiresAt: new Date(at) };
  }
  let seconds = defaultSeconds;
  if (input.expiresIn !== undefined && input.expiresIn !== '') {
    if (!/^\d{1,10}$/.test(input.expiresIn)) throw new DomainError('invalid_request', 'expires_in must be a whole number of seconds (0 for a token that never expires)');
    seconds = Number(input.expiresIn);
  }
  if (seconds === 0) return { expiresIn: 0, expiresAt: null };
  if (seconds > MAX_LIFETIME_SECONDS) throw new DomainError('invalid_request', 'expires_in may be at most ten years (315360000); use 0 for a token that never expires');
  return { expiresIn: seconds, expiresAt: new Date(now.getTime() + seconds * 1000) };
}

/** A temporary token (POST /v1/access_tokens) lives at most a day, and never past its session. */
export const TEMPORARY_MAX_SECONDS = 86400;
export const TEMPORARY_MIN_SECONDS = 60;

/**
 * The lifetime of a temporary token: `expires_in` seconds (default and at most a day), cut to
 * the expiry of the token that asked for it (`sessionExpiresAt`, null: a session without end).
 * `until` is the token's own limit, kept when a renewal of the session carries it along.
 */
export function temporaryLifetime(expiresIn: number | string | undefined, now: Date, sessionExpiresAt: Date | null): Lifetime & { until: Date } {
  let seconds = TEMPORARY_MAX_SECONDS;
  if (expiresIn !== undefined && expiresIn !== '') {
    const n = typeof expiresIn === 'number' ? expiresIn : /^\d{1,10}$/.test(expiresIn) ? Number(expiresIn) : NaN;
    if (!Number.isInteger(n) || n < TEMPORARY_MIN_SECONDS || n > TEMPORARY_MAX_SECONDS) {
      throw new DomainError('invalid_request', `expires_in must be a whole number of seconds from ${TEMPORARY_MIN_SECONDS} to ${TEMPORARY_MAX_SECONDS} (a day)`);
    }
    seconds = n;
  }
  const until = new Date(now.getTime() + seconds * 1000);
  const end = sessionExpiresAt !== null && sessionExpiresAt < until ? sessionExpiresAt : until;
  return { expiresIn: Math.max(1, Math.ceil((end.getTime() - now.getTime()) / 1000)), expiresAt: end, until };
}
