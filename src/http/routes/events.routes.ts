import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { CloudEvent } from '../../bus/bus.js';
import type { DeviceAccess } from '../../services/devices/access.js';
import type { EventFilter, EventService } from '../../services/events.service.js';
import { authOf, type Guard } from '../auth.js';
import { productOf } from '../product-scope.js';
import type { RequestLimits } from '../rate-limits.js';
import { Flag, OkBody, Str, errorResponses } from '../schemas.js';

const Publish = Type.Object({
  name: Str(64),
  data: Type.Optional(Type.Union([Str(4096), Type.Number(), Type.Boolean(), Type.Null()])),
  ttl: Type.Optional(Type.Union([Type.Integer(), Str(12)])),
  private: Type.Optional(Type.Union([Flag, Type.Literal('')])),
  access_token: Type.Optional(Str(200)),
}, { additionalProperties: true });
const Prefix = Type.Object({ prefix: Str(100) });
const DeviceParams = Type.Object({ deviceId: Str(100) });
const DevicePrefix = Type.Object({ deviceId: Str(100), prefix: Str(100) });
const ProductParams = Type.Object({ productIdOrSlug: Str(100) });
const ProductPrefix = Type.Object({ productIdOrSlug: Str(100), prefix: Str(100) });
const FleetDevice = Type.Object({ productIdOrSlug: Str(100), deviceId: Str(100) });
const FleetDevicePrefix = Type.Object({ productIdOrSlug: Str(100), deviceId: Str(100), prefix: Str(100) });
/** A stream whose reader falls this far behind is closed rather than buffered without end. */
const MAX_UNREAD_BYTES = 1024 * 1024;

/** One event in Particle's wire format (docs/particle-compatibility.md#events). */
function frame(e: CloudEvent): string {
  const body: Record<string, unknown> = { data: e.data, ttl: e.ttl, published_at: e.published_at, coreid: e.coreid };
  if (e.productId !== null) body.productID = e.productId;
  return `event: ${e.name}\ndata: ${JSON.stringify(body)}\n\n`;
}

/**
 * Event streams (Server-Sent Events; docs/api.md, "Events"): each starts with `:ok`, carries
 * `event:`/`data:` frames, and a comment every EVENTS_KEEPALIVE_SECONDS so that particle-api-js
 * (which drops a stream silent for 15 s) stays connected. The streams of every route, at the
 * root and under a product, are ended before the server closes. Every stream route counts the
 * streams an address opens (`config.limit`), and `admit` holds the streams it has open at once
 * to RATE_LIMIT_OPEN_STREAMS (docs/security.md, "Limits on request volume").
 */
export function eventStreams(app: FastifyInstance, events: EventService, keepaliveSeconds: number, admit: RequestLimits['openStream'] = () => () => undefined) {
  const open = new Set<FastifyReply>();

  // Streams never end on their own: end them before the server waits for its connections.
  app.addHook('preClose', async () => {
    for (const reply of open) reply.raw.end();
  });

  function stream(req: FastifyRequest, reply: FastifyReply, filter: EventFilter): void {
    // Over the limit of open streams it throws, and the error handler answers 429.
    const release = admit(req, reply);
    reply.hijack();
    const res = reply.raw;
    // A client that left while its token was being checked: its 'close' has come and gone, so
    // nothing would ever stop the keep-alive timer of a stream started now.
    if (req.raw.socket?.destroyed === true || res.destroyed) {
      release();
      res.destroy();
      return;
    }
    // Headers the hooks set (CORS for a listed origin) go out with the stream's own.
    res.writeHead(200, {
      ...(reply.getHeaders() as Record<string, string | string[]>),
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-request-id': req.id,
    });
    res.write(':ok\n\n');
    open.add(reply);
    const write = (chunk: string) => {
      if (res.writableLength > MAX_UNREAD_BYTES) {
        req.log.warn('event stream reader is too slow; closing the stream');
        res.destroy();
        return;
      }
      res.write(chunk);
    };
    const unsubscribe = events.subscribe((e) => {
      if (filter(e)) write(frame(e));
    });
    const keepalive = setInterval(() => write(':\n\n'), keepaliveSeconds * 1000);
    const stop = () => {
      clearInterval(keepalive);
      unsubscribe();
      open.delete(reply);
      release();
    };
    res.on('close', stop);
    req.raw.on('close', stop);
  }

  const schema = (summary: string, params?: object) => ({
    tags: ['events'], summary, ...(params ? { params } : {}),
    produces: ['text/event-stream'],
    response: errorResponses(400, 401, 403, 404),
  });

  return { stream, schema };
}

export type EventStreams = ReturnType<typeof eventStreams>;
type PublishBody = { name: string; data?: string | number | boolean | null; ttl?: number | string; private?: boolean | 'true' | 'false' | '' };

/** The caller's event streams, one device's, and publishing to the caller's stream and devices. */
export function eventRoutes(app: FastifyInstance, deps: { events: EventService; devices: DeviceAccess; streams: EventStreams; guard: Guard }): void {
  const { events, devices } = deps;
  const { stream, schema: streamSchema } = deps.streams;
  const anyToken = deps.guard();
  const config = { limit: 'eventStreams' as const };

  app.get('/v1/devices/events', { preHandler: anyToken, config, schema: streamSchema("Stream of the caller's events") },
    async (req, reply) => stream(req, reply, events.mine(authOf(req))));
  app.get<{ Params: { prefix: string } }>('/v1/devices/events/:prefix', { preHandler: anyToken, config, schema: streamSchema("Stream of the caller's events whose name starts with prefix", Prefix) },
    async (req, reply) => stream(req, reply, events.mine(authOf(req), req.params.prefix)));

  app.get<{ Params: { deviceId: string } }>('/v1/devices/:deviceId/events', { preHandler: anyToken, config, schema: streamSchema("Stream of one device's events", DeviceParams) },
    async (req, reply) => stream(req, reply, events.device(await devices.mustReach(authOf(req), req.params.deviceId))));
  app.get<{ Params: { deviceId: string; prefix: string } }>('/v1/devices/:deviceId/events/:prefix', { preHandler: anyToken, config, schema: streamSchema("Stream of one device's events whose name starts with prefix", DevicePrefix) },
    async (req, reply) => stream(req, reply, events.device(await devices.mustReach(authOf(req), req.params.deviceId), req.params.prefix)));

  app.post<{ Body: PublishBody }>('/v1/devices/events', {
    preHandler: anyToken,
    schema: { tags: ['events'], summary: "Publish an event to the caller's stream and devices", body: Publish, response: { 200: OkBody, ...errorResponses(400, 401, 503) } },
  }, async (req) => {
    await events.publish(authOf(req), req.body, null);
    return { ok: true as const };
  });
}

/**
 * A product's event streams and publishing to its fleet, under /v1/products/:productIdOrSlug
 * (http/product-scope.ts), with the remembered product access.
 */
export function productEventRoutes(scope: FastifyInstance, deps: { events: EventService; devices: DeviceAccess; streams: EventStreams; guard: Guard }): void {
  const { events, devices } = deps;
  const { stream, schema: streamSchema } = deps.streams;
  const teamOnly = deps.guard({ subjects: ['user', 'product'] });
  const config = { productAccess: 'team-read' as const };
  const streamConfig = { ...config, limit: 'eventStreams' as const };

  scope.get('/events', { preHandler: teamOnly, config: streamConfig, schema: streamSchema("Stream of the product fleet's events", ProductParams) },
    async (req, reply) => stream(req, reply, events.product(productOf(req))));
  scope.get<{ Params: { prefix: string } }>('/events/:prefix', { preHandler: teamOnly, config: streamConfig, schema: streamSchema("Stream of the product fleet's events whose name starts with prefix", ProductPrefix) },
    async (req, reply) => stream(req, reply, events.product(productOf(req), req.params.prefix)));

  // particle-api-js getEventStream({product, deviceId}) asks for one fleet device's stream.
  const fleetDevice = (req: FastifyRequest<{ Params: { deviceId: string } }>) => devices.inProduct(productOf(req), req.params.deviceId);
  scope.get<{ Params: { productIdOrSlug: string; deviceId: string } }>('/devices/:deviceId/events', { preHandler: teamOnly, config: streamConfig, schema: streamSchema("Stream of one fleet device's events", FleetDevice) },
    async (req, reply) => stream(req, reply, events.device(await fleetDevice(req))));
  scope.get<{ Params: { productIdOrSlug: string; deviceId: string; prefix: string } }>('/devices/:deviceId/events/:prefix', { preHandler: teamOnly, config: streamConfig, schema: streamSchema("Stream of one fleet device's events whose name starts with prefix", FleetDevicePrefix) },
    async (req, reply) => stream(req, reply, events.device(await fleetDevice(req), req.params.prefix)));

  scope.post<{ Body: PublishBody }>('/events', {
    preHandler: teamOnly, config,
    schema: { tags: ['events'], summary: "Publish an event to the product's stream and fleet", params: ProductParams, body: Publish, response: { 200: OkBody, ...errorResponses(400, 401, 403, 503) } },
  }, async (req) => {
    await events.publish(authOf(req), req.body, productOf(req));
    return { ok: true as const };
  });
}
