import type { FastifyInstance } from 'fastify';
import { createHash, timingSafeEqual } from 'node:crypto';
import { DomainError } from '../domain/errors.js';
import type { Metrics } from '../platform/metrics.js';

/** Who may read GET /metrics: nobody (the route does not exist), anyone, or a bearer token. */
export type MetricsAccess = { kind: 'off' } | { kind: 'open' } | { kind: 'token'; token: string };

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * Counts every HTTP request by its route pattern (never its path, which holds ids) and status,
 * and serves the node's metrics in Prometheus's text format at GET /metrics (docs/operations.md,
 * "Metrics"). The token is compared in constant time (digests of equal length).
 */
export function metricsRoutes(app: FastifyInstance, metrics: Metrics, access: MetricsAccess): void {
  // Off, nothing is counted either: the hook would cost every request for no reader.
  if (access.kind === 'off') return;
  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url ?? 'unmatched';
    metrics.httpRequests.inc({ method: req.method, route, status: String(reply.statusCode) });
    metrics.httpDuration.observe({ method: req.method, route }, reply.elapsedTime / 1000);
    done();
  });
  const wanted = access.kind === 'token' ? digest(access.token) : null;
  app.get('/metrics', { schema: { hide: true } }, async (req, reply) => {
    if (wanted) {
      const header = req.headers.authorization ?? '';
      const given = header.startsWith('Bearer ') ? header.slice(7) : '';
      if (given === '') throw new DomainError('invalid_request', 'The access token was not found');
      if (!timingSafeEqual(digest(given), wanted)) throw new DomainError('invalid_token', 'The metrics token is not this one');
    }
    void reply.header('content-type', metrics.registry.contentType).header('cache-control', 'no-store');
    return metrics.registry.metrics();
  });
}
