import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { DomainError } from '../../domain/errors.js';
import type { ClientService } from '../../services/clients.service.js';
import type { CustomerService } from '../../services/customers.service.js';
import type { Guard } from '../auth.js';
import { productOf } from '../product-scope.js';
import { clientCredentialsOf } from '../credentials.js';
import { Flag, Pagination, Str, errorResponses } from '../schemas.js';

const P = Type.Object({ productIdOrSlug: Str(100) });
const PE = Type.Object({ productIdOrSlug: Str(100), email: Str(254) });

/**
 * Customers of a product (docs/api.md, "Customers"; docs/particle-compatibility.md#customers),
 * under /v1/products/:productIdOrSlug (http/product-scope.ts).
 */
export function customerRoutes(scope: FastifyInstance, deps: { customers: CustomerService; clients: ClientService; guard: Guard }): void {
  const { customers, guard } = deps;
  const teamOnly = guard({ subjects: ['user', 'product'] });

  // Client credentials, never a token: the product is looked up, and the client must be its own.
  scope.post<{ Params: { productIdOrSlug: string }; Body: { email?: string; password?: string; no_password?: boolean | 'true' | 'false' } }>('/customers', {
    config: { productAccess: 'lookup' },
    schema: {
      tags: ['customers'],
      summary: 'Create a customer and log it in (client credentials only, never an access token)',
      description: 'HTTP Basic or client_id/client_secret fields; a web client may send its client_id alone. Body: email and either password or no_password=true.',
      params: P,
      body: Type.Object({
        email: Str(254),
        password: Type.Optional(Str(256)),
        no_password: Type.Optional(Flag),
        client_id: Type.Optional(Str(200)),
        client_secret: Type.Optional(Str(200)),
        grant_type: Type.Optional(Str(100)),
      }),
      response: {
        201: Type.Object({ token_type: Type.Literal('bearer'), access_token: Type.String(), expires_in: Type.Integer(), refresh_token: Type.Optional(Type.String()) }),
        ...errorResponses(400, 403, 409, 429),
      },
    },
  }, async (req, reply) => {
    const { id, secret } = clientCredentialsOf(req);
    const client = await deps.clients.authenticate(id, secret, req.ip, { allowMissingSecret: true });
    if (client.kind === 'registered' && client.record.scope !== null && client.record.scope !== 'customers:create') {
      throw new DomainError('invalid_scope', 'This client may not create customers');
    }
    const product = req.product;
    if (!product) throw new DomainError('invalid_client', 'The client must belong to this product');
    reply.header('Cache-Control', 'no-store');
    return reply.code(201).send(await customers.create(product, client, req.body, req.ip));
  });

  scope.get<{ Querystring: { page?: number; per_page?: number } }>('/customers', {
    preHandler: teamOnly,
    schema: {
      tags: ['customers'],
      summary: 'List the customers of a product, paged',
      params: P,
      querystring: Type.Intersect([Pagination, Type.Object({ access_token: Type.Optional(Str(200)) })]),
      response: {
        200: Type.Object({
          customers: Type.Array(Type.Object({ id: Type.String(), username: Type.String(), shadow: Type.Boolean(), created_at: Type.String(), devices: Type.Array(Type.String()) })),
          meta: Type.Object({ page: Type.Integer(), per_page: Type.Integer(), total: Type.Integer(), total_pages: Type.Integer() }),
        }),
        ...errorResponses(400, 401, 403),
      },
    },
  }, async (req) => customers.list(productOf(req), req.query.page ?? 1, req.query.per_page ?? 25));

  scope.put<{ Params: { productIdOrSlug: string; email: string }; Body: { password: string } }>('/customers/:email', {
    preHandler: teamOnly,
    schema: {
      tags: ['customers'],
      summary: "Set a customer's password (its tokens are revoked)",
      params: PE,
      body: Type.Object({ password: Str(256), access_token: Type.Optional(Str(200)) }),
      response: { 200: Type.Object({ ok: Type.Literal(true) }), ...errorResponses(400, 401, 403, 404) },
    },
  }, async (req) => {
    await customers.setPassword(productOf(req), req.params.email, req.body.password, req.ip);
    return { ok: true as const };
  });

  scope.delete<{ Params: { productIdOrSlug: string; email: string } }>('/customers/:email', {
    preHandler: teamOnly,
    schema: { tags: ['customers'], summary: 'Delete a customer and revoke its tokens', params: PE, response: errorResponses(400, 401, 403, 404) },
  }, async (req, reply) => {
    await customers.remove(productOf(req), req.params.email, req.ip);
    return reply.code(204).send();
  });
}
