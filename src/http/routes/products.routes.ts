import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { ProductService } from '../../services/products.service.js';
import { authOf, userIdOf, type Guard } from '../auth.js';
import { productOf } from '../product-scope.js';
import { NoContent, Str, errorResponses } from '../schemas.js';

const ProductView = Type.Object({
  id: Type.Integer(),
  platform_id: Type.Integer(),
  name: Type.String(),
  slug: Type.String(),
  description: Type.String(),
  user: Type.Union([Type.String(), Type.Null()]),
  org: Type.Null(),
  organization_id: Type.Null(),
  groups: Type.Array(Type.String()),
  settings: Type.Object({}, { additionalProperties: true }),
  device_protection: Type.Object({}, { additionalProperties: true }),
  created_at: Type.String(),
});

const NewProduct = Type.Object({
  name: Str(100),
  description: Type.Optional(Str(2000)),
  platform_id: Type.Union([Type.Integer(), Str(6)]),
  settings: Type.Optional(Type.Unknown()),
});

const P = Type.Object({ productIdOrSlug: Str(100) });
const TeamMember = Type.Object({ username: Type.String(), role: Type.String(), no_mfa: Type.Boolean(), product_id: Type.Integer() });

/** Products and their teams (docs/api.md, "Products and teams"): creating them and listing them. */
export function productRoutes(app: FastifyInstance, deps: { products: ProductService; guard: Guard }): void {
  const { products, guard } = deps;
  const userOnly = guard({ subjects: ['user'] });

  // particle-cli sends {product:{name, description, platform_id}}; a flat body works too.
  app.post<{ Body: { product?: Record<string, unknown> } & Record<string, unknown> }>('/v1/user/products', {
    preHandler: userOnly,
    schema: {
      tags: ['products'],
      summary: 'Create a product; the caller becomes its first team member',
      body: Type.Union([Type.Object({ product: NewProduct, access_token: Type.Optional(Str(200)) }), NewProduct]),
      response: { 201: Type.Object({ ok: Type.Literal(true), product: ProductView }), ...errorResponses(400, 401, 403, 409) },
    },
  }, async (req, reply) => {
    const body = (req.body.product ?? req.body) as Record<string, unknown>;
    return reply.code(201).send({ ok: true, product: await products.create(userIdOf(req), body, req.ip) });
  });

  for (const path of ['/v1/products', '/v1/user/products']) {
    app.get(path, {
      preHandler: guard({ subjects: ['user', 'product'] }),
      schema: { tags: ['products'], summary: 'The products the caller manages', response: { 200: Type.Object({ products: Type.Array(ProductView) }), ...errorResponses(400, 401, 403) } },
    }, async (req) => ({ products: await products.listFor(authOf(req)) }));
  }
}

/** A product, its settings and its team: the routes under /v1/products/:productIdOrSlug (http/product-scope.ts). */
export function productTeamRoutes(scope: FastifyInstance, deps: { products: ProductService; guard: Guard }): void {
  const { products, guard } = deps;
  const teamOnly = guard({ subjects: ['user', 'product'] });

  scope.get('', {
    preHandler: teamOnly,
    schema: { tags: ['products'], summary: 'One product, by id or slug', params: P, response: { 200: Type.Object({ product: ProductView }), ...errorResponses(400, 401, 403) } },
  }, async (req) => ({ product: await products.view(productOf(req)) }));

  scope.put<{ Body: { product?: Record<string, unknown> } & Record<string, unknown> }>('', {
    preHandler: teamOnly,
    schema: {
      tags: ['products'],
      summary: 'Rename a product or change its description',
      params: P,
      body: Type.Object({
        product: Type.Optional(Type.Object({ name: Type.Optional(Str(100)), description: Type.Optional(Str(2000)) })),
        name: Type.Optional(Str(100)),
        description: Type.Optional(Str(2000)),
        access_token: Type.Optional(Str(200)),
      }),
      response: { 200: Type.Object({ ok: Type.Literal(true), product: ProductView }), ...errorResponses(400, 401, 403) },
    },
  }, async (req) => ({ ok: true as const, product: await products.update(productOf(req), req.body.product ?? req.body) }));

  scope.delete<{ Querystring: { confirm?: string } }>('', {
    preHandler: guard({ subjects: ['user'] }),
    schema: {
      tags: ['products'],
      summary: 'Delete a product (one with customers needs confirm=<slug>)',
      params: P,
      querystring: Type.Object({ confirm: Type.Optional(Str(100)), access_token: Type.Optional(Str(200)) }),
      response: { 204: NoContent, ...errorResponses(400, 401, 403, 409) },
    },
  }, async (req, reply) => {
    await products.remove(productOf(req), req.query.confirm, authOf(req), req.ip);
    return reply.code(204).send();
  });

  scope.get('/team', {
    preHandler: teamOnly,
    schema: { tags: ['products'], summary: 'Team members', params: P, response: { 200: Type.Object({ ok: Type.Literal(true), team: Type.Array(TeamMember) }), ...errorResponses(400, 401, 403) } },
  }, async (req) => ({ ok: true as const, team: await products.team(productOf(req)) }));

  scope.post<{ Body: { username: string } }>('/team', {
    preHandler: teamOnly,
    schema: {
      tags: ['products'],
      summary: 'Add an existing account to the team, by username',
      params: P,
      body: Type.Object({ username: Str(254), access_token: Type.Optional(Str(200)) }),
      response: { 201: Type.Object({ ok: Type.Literal(true), username: Type.String(), role: Type.String() }), ...errorResponses(400, 401, 403, 404, 409) },
    },
  }, async (req, reply) => {
    const added = await products.addMember(productOf(req), req.body.username, req.ip, authOf(req));
    return reply.code(201).send({ ok: true, ...added });
  });

  scope.delete<{ Params: { productIdOrSlug: string; username: string } }>('/team/:username', {
    preHandler: teamOnly,
    schema: {
      tags: ['products'],
      summary: 'Remove a member from the team (not the last one)',
      params: Type.Object({ productIdOrSlug: Str(100), username: Str(254) }),
      response: { 204: NoContent, ...errorResponses(400, 401, 403, 404, 409) },
    },
  }, async (req, reply) => {
    await products.removeMember(productOf(req), req.params.username, req.ip, authOf(req));
    return reply.code(204).send();
  });
}
