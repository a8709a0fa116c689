import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { DomainError, isDomainError } from '../../domain/errors.js';
import { accountOf } from '../../services/audit-account.js';
import { documentOf, type ConfigHistoryService } from '../../services/config-history.service.js';
import type { ConfigSchemaService } from '../../services/config-schema.service.js';
import type { ConfigValuesService } from '../../services/config-values.service.js';
import { rejectedError, type ConfigDeliveryService } from '../../services/config-delivery.service.js';
import type { DeviceAccess } from '../../services/devices/access.js';
import type { ProductService } from '../../services/products.service.js';
import { authOf, type Guard } from '../auth.js';
import { Flag, Pagination, Str, errorResponses, flagValue } from '../schemas.js';

const SCHEMA_TYPE = 'application/schema+json';
const P = Type.Object({ productIdOrSlug: Str(100) });
const PD = Type.Object({ productIdOrSlug: Str(100), deviceId: Str(100) });
const PV = Type.Object({ productIdOrSlug: Str(100), version: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }) });
type VersionParams = { productIdOrSlug: string; version: number };
const DryRun = Type.Object({ dry_run: Type.Optional(Flag), access_token: Type.Optional(Str(200)) });
type DryRunQuery = { dry_run?: boolean | 'true' | 'false' };

const wantsSchema = (req: FastifyRequest) => String(req.headers.accept ?? '').toLowerCase().includes(SCHEMA_TYPE);
const sentSchema = (req: FastifyRequest) => String(req.headers['content-type'] ?? '').toLowerCase().startsWith(SCHEMA_TYPE);

/**
 * Product configuration (SPEC.md §4.5-4.6; reference tracker-configuration §4): the content type
 * selects schema (`application/schema+json`) or values (`application/json`). Writes replace the
 * whole object; an empty body resets. The routes live in their own plugin scope, whose JSON
 * parser takes an empty body (the console's "reset to default" sends one).
 */
type ConfigDeps = {
  schemas: ConfigSchemaService; values: ConfigValuesService; delivery: ConfigDeliveryService; history: ConfigHistoryService;
  products: ProductService; devices: DeviceAccess; guard: Guard;
};

export function configRoutes(root: FastifyInstance, deps: ConfigDeps): void {
  root.register(async (app) => routes(app, deps));
}

function routes(app: FastifyInstance, deps: ConfigDeps): void {
  const { schemas, values, delivery, history, products, devices } = deps;
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
  const actorOf = (req: FastifyRequest) => accountOf(authOf(req).subject);
  type Product = Awaited<ReturnType<typeof productOf>>;
  type Device = Awaited<ReturnType<typeof devices.inProduct>>;

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

  /**
   * A device write's answer (DESIGN.md): 200 when the online device took it, 400 when it refused,
   * a timeout when it did not answer (the change stays pending), 202 when it is offline (it gets
   * it when it connects).
   */
  async function deliverToDevice(reply: FastifyReply, product: Product, device: Device, version: number) {
    const results = await delivery.sync(product, device);
    if (results.some((r) => r.status === 'rejected')) throw rejectedError(results);
    if (results.some((r) => r.status === 'pending' && r.reason === 'timeout')) {
      throw new DomainError('device_timeout', 'The device did not acknowledge the configuration in time; the change is stored and stays pending');
    }
    const offline = results.some((r) => r.status === 'pending');
    return reply.code(offline ? 202 : 200).send({ ...(await delivery.status(product, device)), version });
  }

  app.put<{ Params: { productIdOrSlug: string; deviceId: string }; Querystring: DryRunQuery; Body: unknown }>('/v1/products/:productIdOrSlug/config/:deviceId', {
    preHandler: console,
    schema: { tags: ['configuration'], summary: "Replace a fleet device's own values (empty body: back to inheritance; ?dry_run=true checks and previews)", params: PD, querystring: DryRun, response: errorResponses(400, 401, 403, 404, 415) },
  }, async (req, reply) => {
    const product = await productOf(req);
    const device = await devices.inProduct(product, req.params.deviceId);
    if (sentSchema(req)) throw new DomainError('unsupported_media_type', 'A schema is set for the whole product: PUT /v1/products/:p/config');
    if (flagValue(req.query.dry_run)) return values.previewDevice(product, device, req.body);
    const { version } = await values.setDevice(product, device, req.body, { actor: actorOf(req) });
    return deliverToDevice(reply, product, device, version);
  });

  app.put<{ Params: { productIdOrSlug: string }; Querystring: DryRunQuery; Body: unknown }>('/v1/products/:productIdOrSlug/config', {
    preHandler: console,
    schema: { tags: ['configuration'], summary: `Replace the fleet's values (application/json; empty body resets) or the schema (${SCHEMA_TYPE}); ?dry_run=true checks and previews`, params: P, querystring: DryRun, consumes: ['application/json', SCHEMA_TYPE], response: errorResponses(400, 401, 403, 415, 422) },
  }, async (req) => {
    const product = await productOf(req);
    const dryRun = flagValue(req.query.dry_run);
    if (!sentSchema(req)) {
      if (dryRun) return values.previewFleet(product, req.body);
      const answer = await values.setFleet(product, req.body, { actor: actorOf(req) });
      delivery.fleetChanged(product);
      return answer;
    }
    if (typeof req.body !== 'string') throw new DomainError('invalid_request', 'The schema body is missing');
    if (dryRun) return schemas.preview(product, req.body);
    const saved = await schemas.replace(product, req.body, authOf(req), req.ip);
    return { ok: true as const, message: keptAsideMessage('Schema saved', saved.kept_aside), ...saved };
  });

  app.delete<{ Params: { productIdOrSlug: string }; Body: unknown }>('/v1/products/:productIdOrSlug/config', {
    preHandler: console,
    schema: { tags: ['configuration'], summary: `Restore the default schema (Content-Type: ${SCHEMA_TYPE}); 404 when it already is`, params: P, consumes: [SCHEMA_TYPE], response: errorResponses(400, 401, 403, 404, 415) },
  }, async (req) => {
    const product = await productOf(req);
    if (!sentSchema(req)) throw new DomainError('unsupported_media_type', `Send Content-Type: ${SCHEMA_TYPE} to restore the default schema`);
    const restored = await schemas.restoreDefault(product, authOf(req), req.ip);
    return { ok: true as const, message: keptAsideMessage('Schema reverted to default', restored.kept_aside), ...restored };
  });

  app.get<{ Params: { productIdOrSlug: string } }>('/v1/products/:productIdOrSlug/config/rollout', {
    preHandler: console,
    schema: { tags: ['configuration'], summary: 'Rollout progress: devices (and modules) in sync, pending, or refused by the device', params: P, response: errorResponses(400, 401, 403) },
  }, async (req) => delivery.rollout(await productOf(req)));

  app.get<{ Params: { productIdOrSlug: string; deviceId: string } }>('/v1/products/:productIdOrSlug/config/:deviceId/explain', {
    preHandler: console,
    schema: { tags: ['configuration'], summary: "Every setting of a device's effective configuration with its source (default, fleet, device)", params: PD, response: errorResponses(400, 401, 403, 404) },
  }, async (req) => {
    const product = await productOf(req);
    return values.explain(product, await devices.inProduct(product, req.params.deviceId));
  });

  app.get<{ Params: { productIdOrSlug: string }; Querystring: { kind?: 'values' | 'schema'; device_id?: string; page?: number; per_page?: number } }>('/v1/products/:productIdOrSlug/config/history', {
    preHandler: console,
    schema: {
      tags: ['configuration'], summary: "The product's configuration changes, newest first (?kind=values|schema, ?device_id=ID or fleet)", params: P,
      querystring: Type.Intersect([Pagination, Type.Object({ kind: Type.Optional(Type.Union([Type.Literal('values'), Type.Literal('schema')])), device_id: Type.Optional(Str(100)), access_token: Type.Optional(Str(200)) })]),
      response: errorResponses(400, 401, 403),
    },
  }, async (req) => {
    const product = await productOf(req);
    const { kind, device_id: deviceId, page = 1, per_page: perPage = 25 } = req.query;
    return history.list(product, { kind, deviceId: deviceId === 'fleet' ? undefined : deviceId, fleet: deviceId === 'fleet', page, perPage });
  });

  app.get<{ Params: VersionParams }>('/v1/products/:productIdOrSlug/config/history/:version', {
    preHandler: console,
    schema: { tags: ['configuration'], summary: 'One configuration change and the document it left in force', params: PV, response: errorResponses(400, 401, 403, 404) },
  }, async (req) => history.get(await productOf(req), req.params.version));

  app.get<{ Params: VersionParams; Querystring: { against?: number } }>('/v1/products/:productIdOrSlug/config/history/:version/diff', {
    preHandler: console,
    schema: {
      tags: ['configuration'], summary: 'What a change changed, as JSON pointers (against the previous version of its scope, or ?against=N)', params: PV,
      querystring: Type.Object({ against: Type.Optional(Type.Integer({ minimum: 1 })), access_token: Type.Optional(Str(200)) }), response: errorResponses(400, 401, 403, 404),
    },
  }, async (req) => history.diff(await productOf(req), req.params.version, req.query.against));

  app.post<{ Params: VersionParams; Body: unknown }>('/v1/products/:productIdOrSlug/config/history/:version/rollback', {
    preHandler: console,
    schema: { tags: ['configuration'], summary: 'Restore the document of a version to its scope: a new change, delivered like any write', params: PV, response: errorResponses(400, 401, 403, 404, 422) },
  }, async (req, reply) => {
    const product = await productOf(req);
    const entry = await history.find(product, req.params.version);
    const change = { actor: actorOf(req), rolledBackFrom: entry.version };
    if (entry.kind === 'schema') {
      const done = entry.document === null
        ? await schemas.restoreDefault(product, authOf(req), req.ip, change).catch((err: unknown) => {
          if (isDomainError(err) && err.code === 'not_found') throw new DomainError('invalid_request', 'The schema is already the default: nothing to roll back');
          throw err;
        })
        : await schemas.replace(product, entry.document, authOf(req), req.ip, change);
      return { ok: true as const, message: keptAsideMessage(`Schema of version ${entry.version} restored`, done.kept_aside), ...done };
    }
    const document = documentOf(entry);
    if (entry.deviceId === null) {
      const answer = await values.setFleet(product, document, change);
      delivery.fleetChanged(product);
      return answer;
    }
    const device = await devices.inProduct(product, entry.deviceId);
    const { version } = await values.setDevice(product, device, document, change);
    return deliverToDevice(reply, product, device, version);
  });
}

/** Values of modules a schema no longer has are kept aside: say so, and that it is harmless. */
function keptAsideMessage(message: string, keptAside: string[]): string {
  if (keptAside.length === 0) return message;
  return `${message}. Stored values of ${keptAside.join(', ')} are kept aside (the schema has no such module): they are not sent to devices, and come back if a later schema has the module again`;
}
