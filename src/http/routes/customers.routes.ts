import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { DomainError } from '../../domain/errors.js';
import type { ClientService } from '../../services/clients.service.js';
import type { CustomerService } from '../../services/customers.service.js';
import type { ProductService } from '../../services/products.service.js';
import { authOf, checkToken, type Guard } from '../auth.js';
import { productOf } from '../product-scope.js';
import { clientCredentialsOf, sendsAccessTokenOnly } from '../credentials.js';
import { Flag, NoContent, Pagination, Str, errorResponses } from '../schemas.js';

const P = Type.Object({ productIdOrSlug: Str(100) });
const CustomerView = Type.Object({ id: Type.String(), username: Type.String(), shadow: Type.Boolean(), created_at: Type.String(), devices: Type.Array(Type.String()) });

const PE = Type.Object({ productIdOrSlug: Str(100), email: Str(254) });

/**
 * Customers of a product (docs/api.md, "Customers"; docs/particle-compatibility.md#customers),
 * under /v1/products/:productIdOrSlug (http/product-scope.ts).
 */
export function customerRoutes(scope: FastifyInstance, deps: { customers: CustomerService; clients: ClientService; products: Pick<ProductService, 'access'>; guard: Guard }): void {
  const { customers, guard } = deps;
  const teamOnly = guard({ subjects: ['user', 'product'] });
  // A team member's or the product's token may create customers too (the console does), when
  // its scope allows it; a customers:create product token as well.
  const teamCreates = guard({ subjects: ['user', 'product'], scope: 'customers:create' });

  // Client credentials, or else an access token of the team: the product is looked up here, and
  // each way judges its own credential.
  scope.post<{ Params: { productIdOrSlug: string }; Body: { email?: string; password?: string; no_password?: boolean | 'true' | 'false' } }>('/customers', {
    // With client credentials it answers a token, as the token endpoint would: it counts against
    // RATE_LIMIT_TOKENS (docs/security.md, "Limits on request volume").
    config: { productAccess: 'lookup', limit: (req) => (sendsAccessTokenOnly(req) ? null : 'tokens') },
    schema: {
      tags: ['customers'],
      summary: "Create a customer: with client credentials, answers its first token; with a team member's or the product's token, the customer record",
      description: 'Client credentials: HTTP Basic or client_id/client_secret fields (a web client may send its client_id alone); they win over an access token. Otherwise an access token of a team member or of the product (full or customers:create scope). Body: email and either password or no_password=true.',
      params: P,
      body: Type.Object({
        email: Str(254),
        password: Type.Optional(Str(256)),
        no_password: Type.Optional(Flag),
        client_id: Type.Optional(Str(200)),
        client_secret: Type.Optional(Str(200)),
        grant_type: Type.Optional(Str(100)),
        access_token: Type.Optional(Str(200)),
      }),
      response: {
        201: Type.Union([
          Type.Object({ token_type: Type.Literal('bearer'), access_token: Type.String(), expires_in: Type.Integer(), refresh_token: Type.Optional(Type.String()) }),
          Type.Object({ ok: Type.Literal(true), customer: CustomerView }),
        ]),
        ...errorResponses(400, 401, 403, 409, 429),
      },
    },
  }, async (req, reply) => {
    // Client credentials win, so that a client library that also sends its default Bearer
    // header keeps the OAuth way (and its answer, a token).
    if (sendsAccessTokenOnly(req)) {
      await checkToken(req, reply, teamCreates);
      // The same 403 as every team route for a product the token may not manage.
      const product = await deps.products.access(authOf(req), req.params.productIdOrSlug);
      return reply.code(201).send({ ok: true, customer: await customers.createByTeam(product, authOf(req).subject, req.body, req.ip) });
    }
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
          customers: Type.Array(CustomerView),
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
    schema: { tags: ['customers'], summary: 'Delete a customer and revoke its tokens', params: PE, response: { 204: NoContent, ...errorResponses(400, 401, 403, 404) } },
  }, async (req, reply) => {
    await customers.remove(productOf(req), req.params.email, req.ip);
    return reply.code(204).send();
  });
}
