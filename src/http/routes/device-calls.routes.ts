import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { DomainError } from '../../domain/errors.js';
import type { DeviceCallService } from '../../services/device-calls.service.js';
import type { DeviceAccess } from '../../services/devices/access.js';
import type { DeviceRecord } from '../../repositories/devices.repository.js';
import { authOf, type Guard } from '../auth.js';
import { productOf } from '../product-scope.js';
import { Str, errorResponses } from '../schemas.js';

const D = Type.Object({ deviceId: Str(100), name: Str(100) });
const PD = Type.Object({ productIdOrSlug: Str(100), deviceId: Str(100), name: Str(100) });
const PingParams = Type.Object({ deviceId: Str(100) });
const ProductPingParams = Type.Object({ productIdOrSlug: Str(100), deviceId: Str(100) });
const Timeout = Type.Union([Type.Number(), Str(12)], { description: 'Seconds to wait for the device (default DEVICE_CALL_TIMEOUT_SECONDS)' });
const CallBody = Type.Object({
  arg: Type.Optional(Type.Union([Str(2048), Type.Number(), Type.Boolean()])),
  args: Type.Optional(Type.Union([Str(2048), Type.Number(), Type.Boolean()])),
  timeout: Type.Optional(Timeout),
  format: Type.Optional(Str(10)),
  access_token: Type.Optional(Str(200)),
}, { additionalProperties: true });
const Query = Type.Object({ format: Type.Optional(Str(10)), timeout: Type.Optional(Timeout) }, { additionalProperties: true });
const CallAnswer = Type.Object({ id: Type.String(), name: Type.Union([Type.String(), Type.Null()]), connected: Type.Boolean(), return_value: Type.Integer() });
const ReadAnswer = Type.Object({
  name: Type.String(),
  result: Type.Union([Type.Number(), Type.String(), Type.Boolean()]),
  coreInfo: Type.Object({ name: Type.Union([Type.String(), Type.Null()]), deviceID: Type.String(), connected: Type.Boolean(), last_handshake_at: Type.Union([Type.String(), Type.Null()]), last_app: Type.String() }),
});
const PingAnswer = Type.Object({ online: Type.Boolean(), ok: Type.Boolean() });

type CallBodyT = { arg?: string | number | boolean; args?: string | number | boolean; timeout?: number | string; format?: string } | undefined;

function argOf(body: CallBodyT): string {
  if (body?.arg !== undefined && body.args !== undefined) throw new DomainError('invalid_request', 'Send the argument as arg or args, not both');
  const v = body?.arg ?? body?.args ?? '';
  return String(v);
}

function seconds(v: number | string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = typeof v === 'number' ? v : Number(v);
  if (typeof v === 'string' && !/^\d+(\.\d+)?$/.test(v.trim())) throw new DomainError('invalid_request', 'timeout must be a number of seconds');
  return n;
}

/** `?format=raw` answers the bare value as text (docs/particle-compatibility.md#function-calls-variables-signal-and-ping). */
function answer(reply: FastifyReply, format: string | undefined, body: object, raw: unknown) {
  if (format === 'raw') return reply.type('text/plain; charset=utf-8').send(String(raw));
  return reply.send(body);
}

/** What the routes of both places share: the call and the read, and their schemas. */
function calling(deviceCalls: DeviceCallService) {
  return {
    async call(d: DeviceRecord, name: string, body: CallBodyT, query: { format?: string; timeout?: number | string }, reply: FastifyReply) {
      const out = await deviceCalls.call(d, name, argOf(body), seconds(body?.timeout ?? query.timeout));
      return answer(reply, body?.format ?? query.format, out, out.return_value);
    },
    async read(d: DeviceRecord, name: string, query: { format?: string; timeout?: number | string }, reply: FastifyReply) {
      const out = await deviceCalls.read(d, name, seconds(query.timeout));
      return answer(reply, query.format, out, out.result);
    },
    callSchema: (params: typeof D | typeof PD) => ({
      tags: ['device calls'], summary: 'Call a function on the device; answers once the device replies', params, body: CallBody, querystring: Query,
      response: { 200: CallAnswer, ...errorResponses(400, 401, 403, 404, 408, 429) },
    }),
    readSchema: (params: typeof D | typeof PD) => ({
      tags: ['device calls'], summary: 'Read a variable of the device (?format=raw for the bare value)', params, querystring: Query,
      response: { 200: ReadAnswer, ...errorResponses(400, 401, 403, 404, 408, 429) },
    }),
  };
}

type Q = { Querystring: { format?: string; timeout?: number | string } };

/**
 * Function calls, variable reads and ping (docs/api.md, "Calling devices"; docs/device-protocol.md)
 * on the caller's devices.
 */
export function deviceCallRoutes(app: FastifyInstance, deps: { devices: DeviceAccess; deviceCalls: DeviceCallService; guard: Guard }): void {
  const { devices, deviceCalls } = deps;
  const anyToken = deps.guard();
  const { call, read, callSchema, readSchema } = calling(deviceCalls);
  const mine = (req: FastifyRequest<{ Params: { deviceId: string } }>) => devices.mustReach(authOf(req), req.params.deviceId);

  app.post<{ Params: { deviceId: string; name: string }; Body: CallBodyT } & Q>('/v1/devices/:deviceId/:name', {
    preHandler: anyToken, schema: callSchema(D),
  }, async (req, reply) => call(await mine(req), req.params.name, req.body, req.query, reply));

  app.get<{ Params: { deviceId: string; name: string } } & Q>('/v1/devices/:deviceId/:name', {
    preHandler: anyToken, schema: readSchema(D),
  }, async (req, reply) => read(await mine(req), req.params.name, req.query, reply));

  app.put<{ Params: { deviceId: string } }>('/v1/devices/:deviceId/ping', {
    preHandler: anyToken,
    schema: { tags: ['device calls'], summary: 'Whether the device is connected now', params: PingParams, response: { 200: PingAnswer, ...errorResponses(400, 401, 403) } },
  }, async (req) => deviceCalls.ping(await mine(req)));
}

/**
 * The same on a product's fleet, under /v1/products/:productIdOrSlug (http/product-scope.ts), with
 * the remembered product access: a call needs only the product's id.
 */
export function productDeviceCallRoutes(scope: FastifyInstance, deps: { devices: DeviceAccess; deviceCalls: DeviceCallService; guard: Guard }): void {
  const { devices, deviceCalls } = deps;
  const teamOnly = deps.guard({ subjects: ['user', 'product'] });
  const { call, read, callSchema, readSchema } = calling(deviceCalls);
  const inFleet = (req: FastifyRequest<{ Params: { deviceId: string } }>) => devices.inProduct(productOf(req), req.params.deviceId);
  const config = { productAccess: 'team-read' as const };

  scope.post<{ Params: { productIdOrSlug: string; deviceId: string; name: string }; Body: CallBodyT } & Q>('/devices/:deviceId/:name', {
    preHandler: teamOnly, config, schema: callSchema(PD),
  }, async (req, reply) => call(await inFleet(req), req.params.name, req.body, req.query, reply));

  scope.get<{ Params: { productIdOrSlug: string; deviceId: string; name: string } } & Q>('/devices/:deviceId/:name', {
    preHandler: teamOnly, config, schema: readSchema(PD),
  }, async (req, reply) => read(await inFleet(req), req.params.name, req.query, reply));

  scope.put<{ Params: { productIdOrSlug: string; deviceId: string } }>('/devices/:deviceId/ping', {
    preHandler: teamOnly, config,
    schema: { tags: ['device calls'], summary: 'Whether the fleet device is connected now', params: ProductPingParams, response: { 200: PingAnswer, ...errorResponses(400, 401, 403, 404) } },
  }, async (req) => deviceCalls.ping(await inFleet(req)));
}
