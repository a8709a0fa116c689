import type { FastifyRequest } from 'fastify';
import { DomainError } from '../domain/errors.js';

/**
 * The origin clients reach this server at: PUBLIC_URL when it is set, or else the request's own
 * scheme and Host, which Fastify reads from X-Forwarded-Proto and X-Forwarded-Host when the
 * request comes through a proxy TRUST_PROXY names (docs/configuration.md). An OAuth client compares the issuer it is told with
 * the URL it used (RFC 8414 §3.3), so behind a TLS proxy that forwards neither, PUBLIC_URL is
 * what makes the two match.
 */
export function publicOriginOf(req: FastifyRequest, configured: string | undefined): string {
  if (configured !== undefined) return configured;
  const scheme = req.protocol;
  let url: URL | undefined;
  try {
    url = new URL(`${scheme}://${req.host}`);
  } catch {
    url = undefined;
  }
  // A Host (or forwarded host) that is not a bare host and port would turn into a path or
  // credentials of the URL.
  if (req.host === '' || !url || (scheme !== 'http' && scheme !== 'https') || url.pathname !== '/' || url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') {
    throw new DomainError('invalid_request', 'The request names no usable host (Host or X-Forwarded-Host and X-Forwarded-Proto); the server operator may set PUBLIC_URL');
  }
  return url.origin;
}
