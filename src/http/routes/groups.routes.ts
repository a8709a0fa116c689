import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { Firmware } from '../../services/firmware/index.js';
import type { Guard } from '../auth.js';
import { productOf } from '../product-scope.js';
import { NoContent, OkBody, Str, errorResponses } from '../schemas.js';
import { BulkBody, GroupBody, GroupList, OneGroup, P, PG } from './firmware.schemas.js';
import { actorOf } from './firmware.routes.js';

type Body = Record<string, unknown>;
type WithG = { Params: { productIdOrSlug: string; groupName: string } };

/**
 * Device groups (docs/api.md, "Device groups"; docs/firmware.md, "Groups"), under
 * /v1/products/:productIdOrSlug, and the bulk change of many devices' groups. A device's own
 * groups are set on PUT /v1/products/:p/devices/:id (devices.routes.ts).
 */
export function groupRoutes(scope: FastifyInstance, deps: { firmware: Firmware; guard: Guard }): void {
  const { groups } = deps.firmware;
  const teamOnly = deps.guard({ subjects: ['user', 'product'] });
  const tags = ['device groups'];

  scope.get<{ Querystring: { name?: string } }>('/groups', {
    preHandler: teamOnly,
    config: { productAccess: 'team-read' },
    schema: {
      tags, summary: "The product's groups by name; `name` keeps those whose name holds it", params: P,
      querystring: Type.Object({ name: Type.Optional(Str(64)), access_token: Type.Optional(Str(200)) }),
      response: { 200: GroupList, ...errorResponses(400, 401, 403) },
    },
  }, async (req) => ({ groups: await groups.list(productOf(req), req.query.name || undefined) }));

  scope.post<{ Body: Body }>('/groups', {
    preHandler: teamOnly,
    schema: { tags, summary: 'Create a group: name (a-z, 0-9, - and _, at most 64), color, description', params: P, body: GroupBody, response: { 201: OneGroup, ...errorResponses(400, 401, 403, 409) } },
  }, async (req, reply) => reply.code(201).send({ group: await groups.create(productOf(req), req.body, actorOf(req)) }));

  scope.get<WithG>('/groups/:groupName', {
    preHandler: teamOnly,
    config: { productAccess: 'team-read' },
    schema: { tags, summary: 'One group, with its device count and the version released to it (fw_version)', params: PG, response: { 200: OneGroup, ...errorResponses(400, 401, 403, 404) } },
  }, async (req) => ({ group: await groups.get(productOf(req), req.params.groupName) }));

  scope.put<WithG & { Body: Body }>('/groups/:groupName', {
    preHandler: teamOnly,
    schema: { tags, summary: 'Rename a group, or change its color or description', params: PG, body: GroupBody, response: { 200: OneGroup, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (req) => ({ group: await groups.edit(productOf(req), req.params.groupName, req.body, actorOf(req)) }));

  scope.delete<WithG>('/groups/:groupName', {
    preHandler: teamOnly,
    schema: { tags, summary: 'Delete a group; its devices leave it (and lose its release)', params: PG, response: { 204: NoContent, ...errorResponses(400, 401, 403, 404) } },
  }, async (req, reply) => {
    await groups.remove(productOf(req), req.params.groupName, actorOf(req));
    return reply.code(204).send();
  });

  scope.put<{ Body: Body }>('/devices', {
    preHandler: teamOnly,
    schema: {
      tags, summary: 'Change many devices\' groups at once: {action: "groups", devices: [ids], metadata: {add: [names], remove: [names]}}; new names are created',
      params: P, body: BulkBody, response: { 200: OkBody, ...errorResponses(400, 401, 403) },
    },
  }, async (req) => {
    await groups.bulk(productOf(req), req.body, actorOf(req));
    return { ok: true as const };
  });
}
