import type { ApiAnswer, ApiBody } from '../../../lib/api-client.js';

/**
 * The three kinds of OAuth client the console offers, as API values (docs/api.md, "OAuth
 * clients"): a Simple Auth app creates customers who then log in themselves; a Two-Legged
 * server's client has full scope and acts for the whole product (or account).
 */
export type ClientKind = 'mobile' | 'web' | 'server';

export type ClientRecord = ApiAnswer<'/v1/clients'>['clients'][number];
export type NewClient = ApiBody<'/v1/clients', 'post'>;

export const KINDS: Array<{ kind: ClientKind; label: string; hint: string }> = [
  { kind: 'mobile', label: 'Simple Auth mobile app', hint: 'An app that creates customers, who log in with a password.' },
  { kind: 'web', label: 'Simple Auth web app', hint: 'A web page that creates customers; it uses its client ID alone in the browser.' },
  { kind: 'server', label: 'Two-Legged server', hint: 'Your own back-end: full access, and it mints tokens for its customers.' },
];

export function bodyFor(kind: ClientKind, name: string, redirectUri: string): NewClient {
  if (kind === 'web') return { name, type: 'web', redirect_uri: redirectUri, scope: 'customers:create' };
  if (kind === 'mobile') return { name, type: 'installed', scope: 'customers:create' };
  return { name, type: 'installed' };
}

export function kindOf(c: ClientRecord): string {
  if (c.type === 'web') return 'Simple Auth web app';
  return c.scope === 'customers:create' ? 'Simple Auth mobile app' : 'Two-Legged server';
}
