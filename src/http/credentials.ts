import type { FastifyRequest } from 'fastify';
import { DomainError } from '../domain/errors.js';

/**
 * Where credentials come from.
 *
 * Access tokens (RFC 6750 §2): the `Authorization: Bearer` header, the `access_token` query
 * parameter, or an `access_token` body field; exactly one of them (§2, "MUST NOT use more than
 * one method").
 */
export function accessTokenOf(req: FastifyRequest): string {
  const found: string[] = [];
  const header = req.headers.authorization;
  if (typeof header === 'string' && /^bearer\s/i.test(header)) found.push(header.slice(7).trim());
  const query = (req.query as Record<string, unknown> | undefined)?.access_token;
  if (query !== undefined) found.push(asToken(query));
  const body = req.body as Record<string, unknown> | undefined | null;
  if (body && typeof body === 'object' && !Array.isArray(body) && body.access_token !== undefined) found.push(asToken(body.access_token));
  if (found.length === 0) throw new DomainError('invalid_request', 'The access token was not found');
  if (found.length > 1) throw new DomainError('invalid_request', 'Only one method may be used to authenticate at a time (Auth header, GET or POST).');
  return found[0] as string;
}

/**
 * Whether a request carries an access token (in any of the places above) and no client
 * credentials (in any of the places below): a route that takes either tells them apart so.
 */
export function sendsAccessTokenOnly(req: FastifyRequest): boolean {
  const header = req.headers.authorization;
  if (typeof header === 'string' && /^basic\s/i.test(header)) return false;
  const body = (req.body ?? {}) as Record<string, unknown>;
  if (body.client_id !== undefined || body.client_secret !== undefined) return false;
  const query = (req.query ?? {}) as Record<string, unknown>;
  return (typeof header === 'string' && /^bearer\s/i.test(header)) || query.access_token !== undefined || body.access_token !== undefined;
}

function asToken(value: unknown): string {
  if (typeof value !== 'string') throw new DomainError('invalid_request', 'access_token must be given once, as a string');
  return value;
}

/**
 * Client credentials (RFC 6749 §2.3.1): HTTP Basic, or `client_id`/`client_secret` in the form
 * body, not both. A Bearer header on these endpoints is ignored: older particle-cli always sends
 * one (docs/particle-compatibility.md#request-encoding-and-client-credentials).
 */
export function clientCredentialsOf(req: FastifyRequest): { id: string | undefined; secret: string | undefined } {
  const body = (req.body ?? {}) as Record<string, unknown>;
  const header = req.headers.authorization;
  const basic = typeof header === 'string' && /^basic\s/i.test(header) ? decodeBasic(header.slice(6).trim()) : undefined;
  const fromBody = body.client_id !== undefined || body.client_secret !== undefined;
  if (basic && fromBody) throw new DomainError('invalid_request', 'Send client credentials either with HTTP Basic or in the body, not both');
  if (basic) return basic;
  const id = body.client_id;
  const secret = body.client_secret;
  if ((id !== undefined && typeof id !== 'string') || (secret !== undefined && typeof secret !== 'string')) {
    throw new DomainError('invalid_request', 'client_id and client_secret must each be given once');
  }
  return { id: id as string | undefined, secret: secret as string | undefined };
}

function decodeBasic(encoded: string): { id: string; secret: string } {
  const text = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon < 0) throw new DomainError('invalid_client', 'Malformed HTTP Basic credentials');
  try {
    // RFC 6749 §2.3.1: both parts are form-urlencoded before they are joined.
    return { id: decodeURIComponent(text.slice(0, colon).replace(/\+/g, ' ')), secret: decodeURIComponent(text.slice(colon + 1).replace(/\+/g, ' ')) };
  } catch {
    throw new DomainError('invalid_client', 'Malformed HTTP Basic credentials');
  }
}
