import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { Firmware } from '../../services/firmware/index.js';
import type { Guard } from '../auth.js';
import { productOf } from '../product-scope.js';
import { errorResponses, Str } from '../schemas.js';
import { actorOf } from './firmware.routes.js';
import { P } from './firmware.schemas.js';
import { RolloutFields } from './rollouts.schemas.js';

const StartBody = Type.Object({
  version: Type.Union([Type.Integer(), Str(5)]),
  groups: Type.Optional(Type.Union([Type.Array(Str(64), { maxItems: 1000 }), Str(70_000), Type.Null()], { description: 'The target groups; none: the fleet' })),
  ...RolloutFields,
  access_token: Type.Optional(Str(200)),
}, { additionalProperties: false });

const ReasonBody = Type.Object({ reason: Type.Optional(Str(500)), access_token: Type.Optional(Str(200)) }, { additionalProperties: false });
const PR = Type.Object({ productIdOrSlug: Str(100), id: Type.Integer({ minimum: 1 }) });
const RolloutRef = Type.Ref('FirmwareRollout');

/**
 * Staged rollouts (docs/api.md, "Firmware rollouts"; docs/firmware.md, "Staged rollouts"), under
 * /v1/products/:productIdOrSlug/firmware/rollouts. Team members and the product's tokens, as the
 * other firmware routes.
 */
export function rolloutRoutes(scope: FastifyInstance, deps: { firmware: Firmware; guard: Guard }): void {
  const { rollouts } = deps.firmware;
  const teamOnly = deps.guard({ subjects: ['user', 'product'] });
  const tags = ['firmware'];
  type WithId = { Params: { productIdOrSlug: string; id: number } };
  const answers = (...codes: number[]) => ({ 200: RolloutRef, ...errorResponses(400, 401, 403, 404, ...codes) });
  // The reason is optional, and so is a body at all.
  const bodyOptional = async (req: { body: unknown }) => { req.body ??= {}; };

  scope.post<{ Body: Record<string, unknown> }>('/firmware/rollouts', {
    preHandler: teamOnly,
    schema: {
      tags, summary: 'Start a staged rollout of a version to the fleet or to groups: waves, a rate, a success threshold (or manual advance), an error threshold that pauses it',
      params: P, body: StartBody, response: { 201: RolloutRef, ...errorResponses(400, 401, 403, 404, 409) },
    },
  }, async (req, reply) => reply.code(201).send(await rollouts.start(productOf(req), req.body, actorOf(req))));

  scope.get('/firmware/rollouts', {
    preHandler: teamOnly,
    config: { productAccess: 'team-read' },
    schema: { tags, summary: "The product's rollouts, newest first, with their progress", params: P, response: { 200: Type.Object({ rollouts: Type.Array(RolloutRef) }), ...errorResponses(400, 401, 403) } },
  }, async (req) => rollouts.list(productOf(req)));

  scope.get<WithId>('/firmware/rollouts/:id', {
    preHandler: teamOnly,
    config: { productAccess: 'team-read' },
    schema: { tags, summary: 'One rollout: its state, and its progress per wave and per state', params: PR, response: answers() },
  }, async (req) => rollouts.get(productOf(req), req.params.id));

  /** The person's steps: pause and abort take an optional reason; resume and next nothing. */
  const step = (name: 'pause' | 'resume' | 'abort' | 'next', summary: string) => scope.post<WithId & { Body: { reason?: string } }>(`/firmware/rollouts/:id/${name}`, {
    preHandler: teamOnly,
    preValidation: bodyOptional,
    schema: { tags, summary, params: PR, body: name === 'pause' || name === 'abort' ? ReasonBody : Type.Object({ access_token: Type.Optional(Str(200)) }), response: answers(409) },
  }, async (req) => {
    const [product, id, actor] = [productOf(req), req.params.id, actorOf(req)];
    if (name === 'pause') return rollouts.pause(product, id, req.body, actor);
    if (name === 'abort') return rollouts.abort(product, id, req.body, actor);
    return name === 'resume' ? rollouts.resume(product, id, actor) : rollouts.next(product, id, actor);
  });
  step('pause', 'Pause a running rollout: no more devices start; updates under way go on');
  step('resume', 'Resume a paused rollout; its error threshold counts the updates that finish from now on');
  step('abort', 'Abort a rollout: devices not yet updated stay on what they run (a transfer under way stops); updated ones keep the version');
  step('next', 'Start the next wave now (the way forward with advance: manual); after the last wave, complete the rollout');
}
