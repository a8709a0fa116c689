import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { ClientOwner } from '../../domain/oauth-clients.js';
import type { ClientService } from '../../services/clients.service.js';
import { userIdOf, type Guard } from '../auth.js';
import { productOf } from '../product-scope.js';
import { NoContent, Str, errorResponses } from '../schemas.js';

export const ClientView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  type: Type.Union([Type.Literal('installed'), Type.Literal('web')]),
  scope: Type.Union([Type.String(), Type.Null()], { description: 'null: full scope' }),
  redirect_uri: Type.Optional(Type.String()),
  product_id: Type.Optional(Type.Union([Type.Integer(), Type.String()])),
  secret: Type.Optional(Type.String({ description: 'only in the answer to create; store it, it is never shown again' })),
});

const NewClient = Type.Object({
  name: Str(100),
  type: Type.Optional(Type.Union([Type.Literal('installed'), Type.Literal('web')])),
  redirect_uri: Type.Optional(Type.Union([Str(2000), Type.Null()])),
  scope: Type.Optional(Type.Union([Str(100), Type.Null()])),
  access_token: Type.Optional(Str(200)),
});

const ClientChange = Type.Object({
  name: Type.Optional(Str(100)),
  scope: Type.Optional(Type.Union([Str(100), Type.Null()])),
  access_token: Type.Optional(Str(200)),
});

/** Where a set of client routes stands, and whose clients they manage. */
interface Place {
  base: string;
  tag: string;
  params: ReturnType<typeof Type.Object>;
  guard: ReturnType<Guard>;
  owner(req: FastifyRequest): ClientOwner;
}

/**
 * OAuth clients, in two places with one set of handlers: `/v1/clients` (owner: the user of the
 * token) and `/v1/products/:productIdOrSlug/clients` (owner: the product; team members and the
 * product's own tokens manage them).
 */
function clientRoutesAt(app: FastifyInstance, place: Place, clients: ClientService): void {
  const withId = Type.Object({ ...place.params.properties, clientId: Type.String({ maxLength: 40 }) });

  app.get(place.base, {
    preHandler: place.guard,
    schema: { tags: ['clients'], summary: `List the ${place.tag}'s OAuth clients`, params: place.params, response: { 200: Type.Object({ ok: Type.Literal(true), clients: Type.Array(ClientView) }), ...errorResponses(400, 401, 403) } },
  }, async (req) => ({ ok: true as const, clients: await clients.list(place.owner(req)) }));

  app.post<{ Body: Record<string, unknown> }>(place.base, {
    preHandler: place.guard,
    schema: {
      tags: ['clients'],
      summary: `Create an OAuth client of the ${place.tag}; the secret is shown once`,
      params: place.params,
      body: NewClient,
      response: { 201: Type.Object({ ok: Type.Literal(true), client: ClientView }), ...errorResponses(400, 401, 403) },
    },
  }, async (req, reply) => reply.code(201).send({ ok: true, client: await clients.create(place.owner(req), req.body, req.ip) }));

  app.put<{ Params: { clientId: string }; Body: { name?: string; scope?: string | null } }>(`${place.base}/:clientId`, {
    preHandler: place.guard,
    schema: {
      tags: ['clients'],
      summary: 'Rename a client or change its scope',
      params: withId,
      body: ClientChange,
      response: { 200: Type.Object({ ok: Type.Literal(true), client: ClientView }), ...errorResponses(400, 401, 403, 404) },
    },
  }, async (req) => ({ ok: true as const, client: await clients.update(place.owner(req), req.params.clientId, req.body, req.ip) }));

  app.delete<{ Params: { clientId: string } }>(`${place.base}/:clientId`, {
    preHandler: place.guard,
    schema: { tags: ['clients'], summary: 'Delete a client and revoke the tokens it made', params: withId, response: { 204: NoContent, ...errorResponses(400, 401, 403, 404) } },
  }, async (req, reply) => {
    await clients.remove(place.owner(req), req.params.clientId, req.ip);
    return reply.code(204).send();
  });
}

/** The user's own OAuth clients: `/v1/clients`. */
export function clientRoutes(app: FastifyInstance, deps: { clients: ClientService; guard: Guard }): void {
  clientRoutesAt(app, {
    base: '/v1/clients', tag: 'user', params: Type.Object({}), guard: deps.guard({ subjects: ['user'] }),
    owner: (req) => ({ kind: 'user', id: userIdOf(req) }),
  }, deps.clients);
}

/** A product's OAuth clients: `/v1/products/:productIdOrSlug/clients` (http/product-scope.ts). */
export function productClientRoutes(scope: FastifyInstance, deps: { clients: ClientService; guard: Guard }): void {
  clientRoutesAt(scope, {
    base: '/clients', tag: 'product', params: Type.Object({ productIdOrSlug: Str(100) }), guard: deps.guard({ subjects: ['user', 'product'] }),
    owner: (req) => ({ kind: 'product', id: String(productOf(req).id) }),
  }, deps.clients);
}
