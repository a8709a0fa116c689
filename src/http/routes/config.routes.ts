import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { DomainError } from '../../domain/errors.js';
import type { ConfigSchemaService } from '../../services/config-schema.service.js';
import type { ConfigValuesService } from '../../services/config-values.service.js';
import { rejectedError, type ConfigDeliveryService } from '../../services/config-delivery.service.js';
import type { DeviceService } from '../../services/devices.service.js';
import type { ProductService } from '../../services/products.service.js';
import { authOf, type Guard } from '../auth.js';
import { Str, errorResponses } from '../schemas.js';

const SCHEMA_TYPE = 'application/schema+json';
const P = Type.Object({ productIdOrSlug: Str(100) });
const PD = Type.Object({ productIdOrSlug: Str(100), deviceId: Str(100) });

const wantsSchema = (req: FastifyRequest) => String(req.headers.accept ?? '').toLowerCase().includes(SCHEMA_TYPE);
const sentSchema = (req: FastifyRequest) => String(req.headers['content-type'] ?? '').toLowerCase().startsWith(SCHEMA_TYPE);

/**
 * Product configuration (SPEC.md §4.5-4.6; reference tracker-configuration §4): the content type
 * selects schema (`application/schema+json`) or values (`application/json`). Writes replace the
 * whole object; an empty body resets. The routes live in their own plugin scope, whose JSON
 * parser takes an empty body (the console's "reset to default" sends one).
 */
type ConfigDeps = { schemas: ConfigSchemaService; values: ConfigValuesService; delivery: ConfigDeliveryService; products: ProductService; devices: DeviceService; guard: Guard };

export function configRoutes(root: FastifyInstance, deps: ConfigDeps): void {
  root.register(async (app) => routes(app, deps));
}

function routes(app: FastifyInstance, deps: ConfigDeps): void {
  const { schemas, values, delivery, products, devices } = deps;
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch {
      done(new DomainError('invalid_request', 'The body is not valid JSON'), undefined);
    }
  });
  const console = deps.guard({ subjects: ['user', 'product'] });
  const productOf = (req: FastifyRequest) => products.access(authOf(req), (req.params as { productIdOrSlug: string }).productIdOrSlug);

  // The schema arrives as text: it is parsed and checked by the service, whose errors say more
  // than a parser's would, and its key order must survive.
  app.addContentTypeParser(SCHEMA_TYPE, { parseAs: 'string' }, (_req, body, done) => done(null, body));

  const sendSchema = async (reply: FastifyReply, product: Awaited<ReturnType<typeof productOf>>) => {
    const { text } = await schemas.current(product);
    return reply.type(`${SCHEMA_TYPE}; charset=utf-8`).send(text);
  };

  app.get<{ Params: { productIdOrSlug: string } }>('/v1/products/:productIdOrSlug/config', {
    preHandler: console,
    schema: { tags: ['configuration'], summary: `The fleet's values {configuration}, or the schema with Accept: ${SCHEMA_TYPE}`, params: P, produces: ['application/json', SCHEMA_TYPE], response: errorResponses(400, 401, 403) },
  }, async (req, reply) => {
    const product = await productOf(req);
    if (!wantsSchema(req)) return values.fleet(product);
    return sendSchema(reply, product);
  });

  app.get<{ Params: { productIdOrSlug: string; deviceId: string } }>('/v1/products/:productIdOrSlug/config/:deviceId', {
    preHandler: console,
    schema: { tags: ['configuration'], summary: `A device's configuration {configuration:{current, pending}}, or the schema with Accept: ${SCHEMA_TYPE}`, params: PD, produces: ['application/json', SCHEMA_TYPE], response: errorResponses(400, 401, 403, 404) },
  }, async (req, reply) => {
    const product = await productOf(req);
    const device = await devices.inProduct(product, req.params.deviceId);
    if (!wantsSchema(req)) return delivery.status(product, device);
    return sendSchema(reply, product);
  });

  app.put<{ Params: { productIdOrSlug: string; deviceId: string }; Body: unknown }>('/v1/products/:productIdOrSlug/config/:deviceId', {
    preHandler: console,
    schema: { tags: ['configuration'], summary: "Replace a fleet device's own values (empty body: back to inheritance)", params: PD, response: errorResponses(400, 401, 403, 404, 415) },
  }, async (req, reply) => {
    const product = await productOf(req);
    const device = await devices.inProduct(product, req.params.deviceId);
    if (sentSchema(req)) throw new DomainError('unsupported_media_type', 'A schema is set for the whole product: PUT /v1/products/:p/config');
    await values.setDevice(product, device, req.body);
    // DESIGN.md: 200 when the online device took it, 400 when it refused, a timeout when it did not
    // answer (the change stays pending), 202 when it is offline (it gets it when it connects).
    const results = await delivery.sync(product, device);
    if (results.some((r) => r.status === 'rejected')) throw rejectedError(results);
    if (results.some((r) => r.status === 'pending' && r.reason === 'timeout')) {
      throw new DomainError('device_timeout', 'The device did not acknowledge the configuration in time; the change is stored and stays pending');
    }
    const offline = results.some((r) => r.status === 'pending');
    return reply.code(offline ? 202 : 200).send(await delivery.status(product, device));
  });

  app.put<{ Params: { productIdOrSlug: string }; Body: unknown }>('/v1/products/:productIdOrSlug/config', {
    preHandler: console,
    schema: { tags: ['configuration'], summary: `Replace the fleet's values (application/json; empty body resets) or the schema (${SCHEMA_TYPE})`, params: P, consumes: ['application/json', SCHEMA_TYPE], response: errorResponses(400, 401, 403, 415, 422) },
  }, async (req) => {
    const product = await productOf(req);
    if (!sentSchema(req)) {
      const answer = await values.setFleet(product, req.body);
      delivery.fleetChanged(product);
      return answer;
    }
    if (typeof req.body !== 'string') throw new DomainError('invalid_request', 'The schema body is missing');
    const { version } = await schemas.replace(product, req.body, authOf(req), req.ip);
    return { ok: true as const, message: 'Schema saved', version };
  });

  app.delete<{ Params: { productIdOrSlug: string }; Body: unknown }>('/v1/products/:productIdOrSlug/config', {
    preHandler: console,
    schema: { tags: ['configuration'], summary: `Restore the default schema (Content-Type: ${SCHEMA_TYPE}); 404 when it already is`, params: P, consumes: [SCHEMA_TYPE], response: { 200: Type.Object({ ok: Type.Literal(true), message: Type.String() }), ...errorResponses(400, 401, 403, 404, 415) } },
  }, async (req) => {
    const product = await productOf(req);
    if (!sentSchema(req)) throw new DomainError('unsupported_media_type', `Send Content-Type: ${SCHEMA_TYPE} to restore the default schema`);
    await schemas.restoreDefault(product, authOf(req), req.ip);
    return { ok: true as const, message: 'Schema reverted to default' };
  });
}
