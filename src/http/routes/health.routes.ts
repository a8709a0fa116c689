import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { DomainError } from '../../domain/errors.js';

/** GET /healthz: 200 when the server can serve (storage answers), 503 otherwise. */
export function healthRoutes(app: FastifyInstance, deps: { check(): Promise<string> }): void {
  app.get('/healthz', {
    schema: {
      tags: ['operations'],
      summary: 'Liveness and readiness',
      response: { 200: Type.Object({ ok: Type.Literal(true), storage: Type.String() }) },
    },
  }, async () => {
    try {
      return { ok: true as const, storage: await deps.check() };
    } catch (err) {
      throw new DomainError('service_unavailable', 'Storage does not answer', { cause: err });
    }
  });
}
