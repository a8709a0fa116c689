import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { ClientService } from '../../services/clients.service.js';
import { userIdOf, type Guard } from '../auth.js';
import { Str, errorResponses } from '../schemas.js';

export const ClientView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  type: Type.Union([Type.Literal('installed'), Type.Literal('web')]),
  scope: Type.Union([Type.String(), Type.Null()], { description: 'null: full scope' }),
  redirect_uri: Type.Optional(Type.String()),
  product_id: Type.Optional(Type.Union([Type.Integer(), Type.String()])),
  secret: Type.Optional(Type.String({ description: 'only in the answer to create; store it, it is never shown again' })),
});

export const NewClient = Type.Object({
  name: Str(100),
  type: Type.Optional(Type.Union([Type.Literal('installed'), Type.Literal('web')])),
  redirect_uri: Type.Optional(Type.Union([Str(2000), Type.Null()])),
  scope: Type.Optional(Type.Union([Str(100), Type.Null()])),
  access_token: Type.Optional(Str(200)),
});

export const ClientChange = Type.Object({
  name: Type.Optional(Str(100)),
  scope: Type.Optional(Type.Union([Str(100), Type.Null()])),
  access_token: Type.Optional(Str(200)),
});

export const ClientIdParam = Type.Object({ clientId: Type.String({ maxLength: 40 }) });

/**
 * OAuth clients of a user account (/v1/clients). The product form
 * (/v1/products/:productIdOrSlug/clients) uses the same service with a product owner.
 */
export function clientRoutes(app: FastifyInstance, deps: { clients: ClientService; guard: Guard }): void {
  const { clients, guard } = deps;
  const userOnly = guard({ subjects: ['user'] });
  const owner = (userId: string) => ({ kind: 'user' as const, id: userId });

  app.get('/v1/clients', {
    preHandler: userOnly,
    schema: { tags: ['clients'], summary: 'List the OAuth clients of the account', response: { 200: Type.Object({ ok: Type.Literal(true), clients: Type.Array(ClientView) }), ...errorResponses(400, 401, 403) } },
  }, async (req) => ({ ok: true as const, clients: await clients.list(owner(userIdOf(req))) }));

  app.post<{ Body: Record<string, unknown> }>('/v1/clients', {
    preHandler: userOnly,
    schema: {
      tags: ['clients'],
      summary: 'Create an OAuth client; the secret is shown once',
      body: NewClient,
      response: { 201: Type.Object({ ok: Type.Literal(true), client: ClientView }), ...errorResponses(400, 401, 403) },
    },
  }, async (req, reply) => reply.code(201).send({ ok: true, client: await clients.create(owner(userIdOf(req)), req.body, req.ip) }));

  app.put<{ Params: { clientId: string }; Body: { name?: string; scope?: string | null } }>('/v1/clients/:clientId', {
    preHandler: userOnly,
    schema: {
      tags: ['clients'],
      summary: 'Rename a client or change its scope',
      params: ClientIdParam,
      body: ClientChange,
      response: { 200: Type.Object({ ok: Type.Literal(true), client: ClientView }), ...errorResponses(400, 401, 403, 404) },
    },
  }, async (req) => ({ ok: true as const, client: await clients.update(owner(userIdOf(req)), req.params.clientId, req.body, req.ip) }));

  app.delete<{ Params: { clientId: string } }>('/v1/clients/:clientId', {
    preHandler: userOnly,
    schema: { tags: ['clients'], summary: 'Delete a client and revoke the tokens it made', params: ClientIdParam, response: { ...errorResponses(400, 401, 403, 404) } },
  }, async (req, reply) => {
    await clients.remove(owner(userIdOf(req)), req.params.clientId, req.ip);
    return reply.code(204).send();
  });
}
