import { DomainError } from './errors.js';
import { parseClientScope, type Scope } from './scopes.js';

/**
 * OAuth clients (docs/particle-compatibility.md#oauth-clients). `installed` clients hold a secret;
 * `web` clients (Simple Auth web apps) need a redirect URI and may create customers with their ID
 * alone. The console's three kinds map to: Simple Auth mobile app = installed + customers:create;
 * Simple Auth web app = web + redirect_uri + customers:create; Two-Legged server = installed with
 * full scope.
 */
export type ClientType = 'installed' | 'web';

export interface ClientOwner {
  kind: 'user' | 'product';
  id: string;
}

export interface NewClientInput {
  name: string;
  type: ClientType;
  redirectUri: string | null;
  scope: Scope;
}

export function validateNewClient(body: { name?: unknown; type?: unknown; redirect_uri?: unknown; scope?: unknown }): NewClientInput {
  const name = validateClientName(body.name);
  const type = body.type === undefined || body.type === null || body.type === '' ? 'installed' : body.type;
  if (type !== 'installed' && type !== 'web') throw new DomainError('invalid_request', 'type must be "installed" or "web"');
  let redirectUri: string | null = null;
  if (body.redirect_uri !== undefined && body.redirect_uri !== null && body.redirect_uri !== '') {
    redirectUri = validateRedirectUri(body.redirect_uri);
  }
  if (type === 'web' && redirectUri === null) throw new DomainError('invalid_request', 'redirect_uri is required for a web client');
  if (body.scope !== undefined && body.scope !== null && typeof body.scope !== 'string') throw new DomainError('invalid_request', 'scope must be a string');
  return { name, type, redirectUri, scope: parseClientScope(body.scope as string | null | undefined) };
}

export function validateClientName(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') throw new DomainError('invalid_request', 'name is required');
  if (value.length > 100) throw new DomainError('invalid_request', 'name may have at most 100 characters');
  return value.trim();
}

function validateRedirectUri(value: unknown): string {
  if (typeof value !== 'string' || value.length > 2000) throw new DomainError('invalid_request', 'redirect_uri must be a URL of at most 2000 characters');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new DomainError('invalid_request', 'redirect_uri must be an absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new DomainError('invalid_request', 'redirect_uri must be an http or https URL');
  // RFC 6749 §3.1.2: the redirection endpoint URI must not include a fragment.
  if (url.hash !== '') throw new DomainError('invalid_request', 'redirect_uri must not contain a fragment');
  return value;
}

/**
 * A client ID as Particle makes them (`myapp-2146`): the name in lower-case letters, digits and
 * dashes, then a random number; always within /^[a-z0-9-_]{3,40}$/
 * (docs/particle-compatibility.md#oauth-clients).
 */
export function clientIdFor(name: string, randomDigits: string): string {
  const slug = name.toLowerCase().normalize('NFKD').replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 30) || 'client';
  return `${slug}-${randomDigits}`;
}

/**
 * The syntactic check of a client_id before any lookup
 * (docs/particle-compatibility.md#request-encoding-and-client-credentials).
 */
export function isWellFormedClientId(id: string): boolean {
  return /^[a-z0-9\-_]{3,40}$/i.test(id);
}
