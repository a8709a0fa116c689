import type { FastifyInstance } from 'fastify';
import { DomainError } from '../domain/errors.js';
import type { Settings } from '../config/settings.js';
import { sameDigest, sha256 } from '../platform/secrets.js';
import type { Metrics } from '../platform/metrics.js';
import { accessTokenOf } from './credentials.js';

/**
 * Counts every HTTP request by its route pattern (never its path, which holds ids) and status,
 * and serves the node's metrics in Prometheus's text format at GET /metrics (docs/operations.md,
 * "Metrics"): with METRICS=off neither, open to anyone, or with METRICS=token only to a bearer of
 * METRICS_TOKEN, whose digest is compared in constant time.
 */
export function metricsRoutes(app: FastifyInstance, metrics: Metrics, settings: Pick<Settings, 'metrics' | 'metricsToken'>): void {
  // Off, nothing is counted either: the hook would cost every request for no reader.
  if (settings.metrics === 'off') return;
  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url ?? 'unmatched';
    metrics.httpRequests.inc({ method: req.method, route, status: String(reply.statusCode) });
    metrics.httpDuration.observe({ method: req.method, route }, reply.elapsedTime / 1000);
    done();
  });
  const wanted = settings.metrics === 'token' ? sha256(settings.metricsToken ?? '') : null;
  app.get('/metrics', { schema: { hide: true } }, async (req, reply) => {
    if (wanted && !sameDigest(sha256(accessTokenOf(req)), wanted)) throw new DomainError('invalid_token', 'The metrics token is not this one');
    void reply.header('content-type', metrics.registry.contentType).header('cache-control', 'no-store');
    return metrics.registry.metrics();
  });
}
