import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';

type State = 'up' | 'down';

export interface HealthDeps {
  /** The store's kind: `postgres` or `embedded`. */
  storage: string;
  /** Resolves once the store answers a query; throws when it does not. */
  check(): Promise<void>;
  /** What this node is: its role and its name in the cluster (`local` on one node). */
  role: string;
  nodeId: string;
  /** The cluster bus's state (NATS); absent on one node, which has none. */
  nats?: (() => State) | undefined;
}

/** How long the store may take to answer before /healthz says it is down: probes have short timeouts too. */
const STORAGE_TIMEOUT_MS = 2_000;

const Checks = Type.Object({
  storage: Type.Union([Type.Literal('up'), Type.Literal('down')]),
  nats: Type.Optional(Type.Union([Type.Literal('up'), Type.Literal('down')])),
});

/**
 * GET /healthz (docs/operations.md, "Health and logs"): 200 when the node can serve, 503 when the
 * store or (in a cluster) NATS does not answer; each is checked afresh on every request, so the
 * answer is 200 again by itself once they are back. The body says which part is down, the node's
 * role and its name; `ok` and `storage` (the store's kind) are as they were before clusters.
 */
export function healthRoutes(app: FastifyInstance, deps: HealthDeps): void {
  app.get('/healthz', {
    schema: {
      tags: ['operations'],
      summary: 'Liveness and readiness',
      response: {
        200: Type.Object({ ok: Type.Literal(true), storage: Type.String(), role: Type.String(), node_id: Type.String(), checks: Checks }),
        503: Type.Object({
          ok: Type.Literal(false), error: Type.String(), error_description: Type.String(),
          storage: Type.String(), role: Type.String(), node_id: Type.String(), checks: Checks,
        }),
      },
    },
  }, async (_req, reply) => {
    let stored: State = 'up';
    try {
      await withTimeout(deps.check(), STORAGE_TIMEOUT_MS);
    } catch {
      stored = 'down';
    }
    const checks: { storage: State; nats?: State } = { storage: stored };
    if (deps.nats) checks.nats = deps.nats();
    const about = { storage: deps.storage, role: deps.role, node_id: deps.nodeId, checks };
    const down = [stored === 'down' ? 'storage does not answer' : '', checks.nats === 'down' ? 'NATS (the cluster bus) is unreachable' : ''].filter(Boolean);
    if (down.length === 0) return { ok: true as const, ...about };
    return reply.code(503).header('cache-control', 'no-store').send({ ok: false as const, error: 'service_unavailable', error_description: `This node cannot serve: ${down.join('; ')}`, ...about });
  });
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error('timed out')), ms);
  });
  // The late answer of a check that lost the race is dropped.
  p.catch(() => undefined);
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
