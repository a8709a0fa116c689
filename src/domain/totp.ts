import { Secret, TOTP } from 'otpauth';

/**
 * Time-based one-time passwords (RFC 6238): SHA-1, 6 digits, 30-second steps, which every
 * authenticator app supports. A code is accepted for the step before and after the current one
 * (clock drift, RFC 6238 §5.2), and never twice (the last used step is remembered).
 */
const PERIOD = 30;

export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

export function totpUri(secret: string, account: string, issuer = 'Skyport'): string {
  return new TOTP({ issuer, label: account, secret: Secret.fromBase32(secret), period: PERIOD }).toString();
}

/** The time step of an accepted code, or null. Codes at or before `lastStep` are refused (replay). */
export function verifyTotp(secret: string, code: string, now: Date, lastStep: number | null): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const totp = new TOTP({ secret: Secret.fromBase32(secret), period: PERIOD });
  const delta = totp.validate({ token: code, timestamp: now.getTime(), window: 1 });
  if (delta === null) return null;
  const step = Math.floor(now.getTime() / 1000 / PERIOD) + delta;
  if (lastStep !== null && step <= lastStep) return null;
  return step;
}

/** The current code; for tests and the CLI's own checks. */
export function totpNow(secret: string, now: Date): string {
  return new TOTP({ secret: Secret.fromBase32(secret), period: PERIOD }).generate({ timestamp: now.getTime() });
}
