import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import type { CloudEvent } from '../../bus/bus.js';
import type { DeviceAccess } from '../../services/devices/access.js';
import type { EventFilter, EventService } from '../../services/events.service.js';
import type { ProductService } from '../../services/products.service.js';
import { authOf, type Guard } from '../auth.js';
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

/** One event in the wire format of reference §9. */
function frame(e: CloudEvent): string {
  const body: Record<string, unknown> = { data: e.data, ttl: e.ttl, published_at: e.published_at, coreid: e.coreid };
  if (e.productId !== null) body.productID = e.productId;
  return `event: ${e.name}\ndata: ${JSON.stringify(body)}\n\n`;
}

/**
 * Event streams (Server-Sent Events) and publishing (reference §9). A stream starts with `:ok`,
 * carries `event:`/`data:` frames, and a comment every EVENTS_KEEPALIVE_SECONDS so that
 * particle-api-js (which drops a stream silent for 15 s) stays connected.
 */
export function eventRoutes(app: FastifyInstance, deps: { events: EventService; devices: DeviceAccess; products: ProductService; guard: Guard; keepaliveSeconds: number }): void {
  const { events, devices, products, guard } = deps;
  const anyToken = guard();
  const console = guard({ subjects: ['user', 'product'] });
  const open = new Set<FastifyReply>();

  // Streams never end on their own: end them before the server waits for its connections.
  app.addHook('preClose', async () => {
    for (const reply of open) reply.raw.end();
  });

  function stream(req: FastifyRequest, reply: FastifyReply, filter: EventFilter): void {
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
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
    const keepalive = setInterval(() => write(':\n\n'), deps.keepaliveSeconds * 1000);
    const stop = () => {
      clearInterval(keepalive);
      unsubscribe();
      open.delete(reply);
    };
    res.on('close', stop);
    req.raw.on('close', stop);
  }

  const streamSchema = (summary: string, params?: object) => ({
    tags: ['events'], summary, ...(params ? { params } : {}),
    produces: ['text/event-stream'],
    response: errorResponses(400, 401, 403, 404),
  });

  app.get('/v1/devices/events', { preHandler: anyToken, schema: streamSchema("Stream of the caller's events") },
    async (req, reply) => stream(req, reply, events.mine(authOf(req))));
  app.get<{ Params: { prefix: string } }>('/v1/devices/events/:prefix', { preHandler: anyToken, schema: streamSchema("Stream of the caller's events whose name starts with prefix", Prefix) },
    async (req, reply) => stream(req, reply, events.mine(authOf(req), req.params.prefix)));

  app.get<{ Params: { deviceId: string } }>('/v1/devices/:deviceId/events', { preHandler: anyToken, schema: streamSchema("Stream of one device's events", DeviceParams) },
    async (req, reply) => stream(req, reply, events.device(await devices.mustReach(authOf(req), req.params.deviceId))));
  app.get<{ Params: { deviceId: string; prefix: string } }>('/v1/devices/:deviceId/events/:prefix', { preHandler: anyToken, schema: streamSchema("Stream of one device's events whose name starts with prefix", DevicePrefix) },
    async (req, reply) => stream(req, reply, events.device(await devices.mustReach(authOf(req), req.params.deviceId), req.params.prefix)));

  app.get<{ Params: { productIdOrSlug: string } }>('/v1/products/:productIdOrSlug/events', { preHandler: console, schema: streamSchema("Stream of the product fleet's events", ProductParams) },
    async (req, reply) => stream(req, reply, events.product(await products.accessCached(authOf(req), req.params.productIdOrSlug))));
  app.get<{ Params: { productIdOrSlug: string; prefix: string } }>('/v1/products/:productIdOrSlug/events/:prefix', { preHandler: console, schema: streamSchema("Stream of the product fleet's events whose name starts with prefix", ProductPrefix) },
    async (req, reply) => stream(req, reply, events.product(await products.accessCached(authOf(req), req.params.productIdOrSlug), req.params.prefix)));

  // particle-api-js getEventStream({product, deviceId}) asks for one fleet device's stream.
  const fleetDevice = async (req: FastifyRequest<{ Params: { productIdOrSlug: string; deviceId: string } }>) =>
    devices.inProduct(await products.accessCached(authOf(req), req.params.productIdOrSlug), req.params.deviceId);
  app.get<{ Params: { productIdOrSlug: string; deviceId: string } }>('/v1/products/:productIdOrSlug/devices/:deviceId/events', { preHandler: console, schema: streamSchema("Stream of one fleet device's events", FleetDevice) },
    async (req, reply) => stream(req, reply, events.device(await fleetDevice(req))));
  app.get<{ Params: { productIdOrSlug: string; deviceId: string; prefix: string } }>('/v1/products/:productIdOrSlug/devices/:deviceId/events/:prefix', { preHandler: console, schema: streamSchema("Stream of one fleet device's events whose name starts with prefix", FleetDevicePrefix) },
    async (req, reply) => stream(req, reply, events.device(await fleetDevice(req), req.params.prefix)));

  type PublishBody = { name: string; data?: string | number | boolean | null; ttl?: number | string; private?: boolean | 'true' | 'false' | '' };
  app.post<{ Body: PublishBody }>('/v1/devices/events', {
    preHandler: anyToken,
    schema: { tags: ['events'], summary: "Publish an event to the caller's stream and devices", body: Publish, response: { 200: OkBody, ...errorResponses(400, 401) } },
  }, async (req) => {
    events.publish(authOf(req), req.body, null);
    return { ok: true as const };
  });
  app.post<{ Params: { productIdOrSlug: string }; Body: PublishBody }>('/v1/products/:productIdOrSlug/events', {
    preHandler: console,
    schema: { tags: ['events'], summary: "Publish an event to the product's stream and fleet", params: ProductParams, body: Publish, response: { 200: OkBody, ...errorResponses(400, 401, 403) } },
  }, async (req) => {
    events.publish(authOf(req), req.body, await products.accessCached(authOf(req), req.params.productIdOrSlug));
    return { ok: true as const };
  });
}
