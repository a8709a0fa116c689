import { DomainError } from './errors.js';

/** Usernames are e-mail addresses (as at Particle); 254 is the longest address RFC 5321 allows. */
const EMAIL = /^[^\s@"<>()[\]\\,;:]+@[^\s@"<>()[\]\\,;:]+\.[^\s@"<>()[\]\\,;:]+$/;

export function validateEmail(value: unknown, field = 'username'): string {
  if (typeof value !== 'string' || value.length === 0) throw new DomainError('invalid_request', `${field} is required`);
  const email = value.trim();
  if (email.length > 254 || !EMAIL.test(email)) throw new DomainError('invalid_request', `${field} must be an e-mail address`);
  return email;
}

/**
 * Passwords: at least 8 characters (NIST SP 800-63B §5.1.1.2), at most 256 so that hashing
 * cannot be used to burn CPU.
 */
export function validateNewPassword(value: unknown, field = 'password'): string {
  if (typeof value !== 'string' || value.length === 0) throw new DomainError('invalid_request', `${field} is required`);
  if ([...value].length < 8) throw new DomainError('invalid_request', `${field} must have at least 8 characters`);
  if (value.length > 256) throw new DomainError('invalid_request', `${field} may have at most 256 characters`);
  return value;
}

/** Free-form profile fields (first_name, last_name, company_name, business_account...). */
export function validateAccountInfo(value: unknown): Record<string, string | boolean> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw new DomainError('invalid_request', 'account_info must be an object');
  const out: Record<string, string | boolean> = {};
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > 20) throw new DomainError('invalid_request', 'account_info may have at most 20 fields');
  for (const [k, v] of entries) {
    if (!/^[a-z_]{1,40}$/.test(k)) throw new DomainError('invalid_request', `account_info.${k.slice(0, 40)} is not a valid field name`);
    if (typeof v === 'boolean') out[k] = v;
    else if (typeof v === 'string' && v.length <= 200) out[k] = v;
    else throw new DomainError('invalid_request', `account_info.${k} must be a string of at most 200 characters or a boolean`);
  }
  return out;
}
