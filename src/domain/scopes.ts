import { DomainError } from './errors.js';

/**
 * Token scopes (docs/particle-compatibility.md#scopes). A token carries its client's scope, or a
 * narrower one asked for with `scope`. Scope values, space separated (RFC 6749 §3.3):
 * - `*:*`: everything the subject may do (the same as no scope);
 * - `customers:create`: creating product customers and nothing else;
 * - `customer=<email>`: in the client_credentials grant of a product client, names the product
 *   customer the token is for. It selects the subject, it is not a permission.
 *
 * A stored scope of `null` means full scope.
 */
export type Scope = null | 'customers:create';

export const FULL_SCOPE_VALUES = ['*:*'] as const;
export const KNOWN_SCOPES = ['*:*', 'customers:create'] as const;

export interface RequestedScope {
  scope: Scope;
  customerEmail: string | undefined;
}

export function parseRequestedScope(raw: string | undefined): RequestedScope {
  if (raw === undefined || raw.trim() === '') return { scope: null, customerEmail: undefined };
  let scope: Scope = null;
  let customerEmail: string | undefined;
  for (const part of raw.trim().split(/\s+/)) {
    if (part.startsWith('customer=')) {
      const email = part.slice('customer='.length);
      if (email === '' || customerEmail !== undefined) throw new DomainError('invalid_scope', 'customer= must name exactly one customer e-mail');
      customerEmail = email;
    } else if (part === 'customers:create') {
      scope = 'customers:create';
    } else if (part !== '*:*') {
      throw new DomainError('invalid_scope', `Unknown scope "${part.slice(0, 64)}"; known scopes are ${KNOWN_SCOPES.join(', ')} and customer=<email>`);
    }
  }
  return { scope, customerEmail };
}

/** Normalises a client's scope as given at creation: absent, empty or `*:*` is full scope. */
export function parseClientScope(raw: string | null | undefined): Scope {
  if (raw === undefined || raw === null || raw.trim() === '' || raw.trim() === '*:*') return null;
  if (raw.trim() === 'customers:create') return 'customers:create';
  throw new DomainError('invalid_request', 'scope must be absent (full access), "*:*" or "customers:create"');
}

/** The scope a new token gets: the client's, narrowed by the request; never wider. */
export function narrowScope(clientScope: Scope, requested: Scope): Scope {
  if (clientScope === null) return requested;
  if (requested === null || requested === clientScope) return clientScope;
  throw new DomainError('invalid_scope', `The client's scope (${clientScope}) does not allow ${requested}`);
}

/** Whether a token of scope `have` may do what needs `need` (null = full scope). */
export function scopeAllows(have: Scope, need: Scope): boolean {
  return have === null || have === need;
}
