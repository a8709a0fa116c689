import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type, type TSchema } from '@sinclair/typebox';
import { DomainError } from '../../domain/errors.js';
import { accountOf } from '../../services/audit-account.js';
import type { Configuration } from '../../services/config/index.js';
import type { Author, DeviceWrite, SchemaWrite } from '../../services/config/writes.js';
import type { DeviceAccess } from '../../services/devices/access.js';
import { authOf, type Guard } from '../auth.js';
import { productOf } from '../product-scope.js';
import { Flag, Pagination, Str, errorResponses, flagValue } from '../schemas.js';
import {
  ConfigSchemaDocument, DeviceConfigAnswer, DeviceWriteAnswer, DiffAnswer, ExplainAnswer, FleetValuesAnswer, FleetWriteAnswer, HistoryDocumentAnswer,
  HistoryPageAnswer, RolloutAnswer, SchemaPreviewAnswer, SchemaWriteAnswer, ValuesPreviewAnswer,
} from './config.schemas.js';

const SCHEMA_TYPE = 'application/schema+json';
const P = Type.Object({ productIdOrSlug: Str(100) });
const PD = Type.Object({ productIdOrSlug: Str(100), deviceId: Str(100) });
const PV = Type.Object({ productIdOrSlug: Str(100), version: Type.Integer({ minimum: 1, maximum: 2_147_483_647 }) });
type VersionParams = { productIdOrSlug: string; version: number };
const DryRun = Type.Object({ dry_run: Type.Optional(Flag), access_token: Type.Optional(Str(200)) });
type DryRunQuery = { dry_run?: boolean | 'true' | 'false' };

/** A response by content type: Fastify serializes by the reply's, the OpenAPI document lists each. */
const byType = (json: TSchema, schema?: TSchema) => ({ content: { 'application/json': { schema: json }, ...(schema ? { [SCHEMA_TYPE]: { schema } } : {}) } });
/**
 * Write bodies are checked by the configuration's use cases, whose violations (JSON pointers)
 * say more than a validator's: the schemas here document them and accept any JSON.
 */
const ValuesBody = Type.Unknown({ description: 'A JSON object of modules; an empty body resets' });
const SchemaBody = Type.Unknown({ description: 'A JSON Schema of modules (docs/api.md, "Schemas")' });

const wantsSchema = (req: FastifyRequest) => String(req.headers.accept ?? '').toLowerCase().includes(SCHEMA_TYPE);
const sentSchema = (req: FastifyRequest) => String(req.headers['content-type'] ?? '').toLowerCase().startsWith(SCHEMA_TYPE);

/**
 * Product configuration (docs/api.md, "Configuration"): the content type selects schema
 * (`application/schema+json`) or values (`application/json`). Writes replace the whole object; an
 * empty body resets. Each write is one call of the configuration's use cases, which also deliver
 * it. The routes live in their own plugin scope, whose JSON parser takes an empty body (the
 * console's "reset to default" sends one).
 */
type ConfigDeps = { config: Configuration; devices: DeviceAccess; guard: Guard };

/** Under /v1/products/:productIdOrSlug (http/product-scope.ts), in a plugin of their own for the JSON parser. */
export function configRoutes(scope: FastifyInstance, deps: ConfigDeps): void {
  scope.register(async (app) => routes(app, deps));
}

function routes(app: FastifyInstance, deps: ConfigDeps): void {
  const { config, devices } = deps;
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
  const teamOnly = deps.guard({ subjects: ['user', 'product'] });
  const authorOf = (req: FastifyRequest): Author => ({ account: accountOf(authOf(req).subject), ip: req.ip });
  /** The product and the device of a device route: 404 unless the device is in the product. */
  const deviceOf = async (req: FastifyRequest<{ Params: { productIdOrSlug: string; deviceId: string } }>) => {
    const product = productOf(req);
    return { product, device: await devices.inProduct(product, req.params.deviceId) };
  };

  // The schema arrives as text: it is parsed and checked by the service, whose errors say more
  // than a parser's would, and its key order must survive.
  app.addContentTypeParser(SCHEMA_TYPE, { parseAs: 'string' }, (_req, body, done) => done(null, body));

  const sendSchema = async (reply: FastifyReply, productId: number) => {
    const { text } = await config.reader.schema(productId);
    return reply.type(`${SCHEMA_TYPE}; charset=utf-8`).send(text);
  };
  const deviceAnswer = (reply: FastifyReply, done: DeviceWrite) => reply.code(done.applied ? 200 : 202).send(done.view);
  const schemaAnswer = (message: string, done: SchemaWrite) => ({ ok: true as const, message: keptAsideMessage(message, done.kept_aside), ...done });

  app.get<{ Params: { productIdOrSlug: string } }>('/config', {
    preHandler: teamOnly,
    schema: { tags: ['configuration'], summary: `The fleet's values {configuration}, or the schema with Accept: ${SCHEMA_TYPE}`, params: P, produces: ['application/json', SCHEMA_TYPE], response: { 200: byType(FleetValuesAnswer, ConfigSchemaDocument), ...errorResponses(400, 401, 403) } },
  }, async (req, reply) => {
    const product = productOf(req);
    if (wantsSchema(req)) return sendSchema(reply, product.id);
    const { schema } = await config.reader.schema(product.id);
    return { configuration: config.reader.fleetView(schema, await config.reader.fleetValues(product.id, schema)) };
  });

  app.get<{ Params: { productIdOrSlug: string; deviceId: string } }>('/config/:deviceId', {
    preHandler: teamOnly,
    schema: { tags: ['configuration'], summary: `A device's configuration {configuration:{current, pending}}, or the schema with Accept: ${SCHEMA_TYPE}`, params: PD, produces: ['application/json', SCHEMA_TYPE], response: { 200: byType(DeviceConfigAnswer, ConfigSchemaDocument), ...errorResponses(400, 401, 403, 404) } },
  }, async (req, reply) => {
    const { product, device } = await deviceOf(req);
    if (wantsSchema(req)) return sendSchema(reply, product.id);
    return config.status.device(product.id, device.id);
  });

  /**
   * A device write answers (docs/api.md, "Delivery") 200 when the online device took it, 400 when
   * it refused, a timeout when it did not answer (the change stays pending), 202 when it is
   * offline (it gets it when it connects).
   */
  app.put<{ Params: { productIdOrSlug: string; deviceId: string }; Querystring: DryRunQuery; Body: unknown }>('/config/:deviceId', {
    preHandler: teamOnly,
    schema: {
      tags: ['configuration'], summary: "Replace a fleet device's own values (empty body: back to inheritance; ?dry_run=true checks and previews)", params: PD, querystring: DryRun,
      body: { content: { 'application/json': { schema: ValuesBody } } },
      // 200: the connected device took it (or a dry run); 202: it takes it when it connects.
      response: { 200: Type.Union([DeviceWriteAnswer, ValuesPreviewAnswer]), 202: DeviceWriteAnswer, ...errorResponses(400, 401, 403, 404, 415) },
    },
  }, async (req, reply) => {
    const { product, device } = await deviceOf(req);
    if (sentSchema(req)) throw new DomainError('unsupported_media_type', 'A schema is set for the whole product: PUT /v1/products/:p/config');
    if (flagValue(req.query.dry_run)) return config.previews.device(product.id, device.id, req.body);
    return deviceAnswer(reply, await config.writes.replaceDeviceValues(product, device.id, req.body, authorOf(req)));
  });

  app.put<{ Params: { productIdOrSlug: string }; Querystring: DryRunQuery; Body: unknown }>('/config', {
    preHandler: teamOnly,
    schema: {
      tags: ['configuration'], summary: `Replace the fleet's values (application/json; empty body resets) or the schema (${SCHEMA_TYPE}); ?dry_run=true checks and previews`, params: P, querystring: DryRun,
      body: { content: { 'application/json': { schema: ValuesBody }, [SCHEMA_TYPE]: { schema: SchemaBody } } },
      // The answer of each: a schema written, a schema's dry run, values' dry run, values written
      // (most particular first: the serializer writes the first that the answer fits).
      response: { 200: Type.Union([SchemaWriteAnswer, SchemaPreviewAnswer, ValuesPreviewAnswer, FleetWriteAnswer]), ...errorResponses(400, 401, 403, 415, 422) },
    },
  }, async (req) => {
    const product = productOf(req);
    const dryRun = flagValue(req.query.dry_run);
    if (!sentSchema(req)) {
      if (dryRun) return config.previews.fleet(product.id, req.body);
      return config.writes.replaceFleetValues(product, req.body, authorOf(req));
    }
    if (typeof req.body !== 'string') throw new DomainError('invalid_request', 'The schema body is missing');
    if (dryRun) return config.previews.schema(product.id, req.body);
    return schemaAnswer('Schema saved', await config.writes.replaceSchema(product, req.body, authorOf(req)));
  });

  app.delete<{ Params: { productIdOrSlug: string }; Body: unknown }>('/config', {
    preHandler: teamOnly,
    schema: { tags: ['configuration'], summary: `Restore the default schema (Content-Type: ${SCHEMA_TYPE}); 404 when it already is`, params: P, consumes: [SCHEMA_TYPE], response: { 200: SchemaWriteAnswer, ...errorResponses(400, 401, 403, 404, 415) } },
  }, async (req) => {
    const product = productOf(req);
    if (!sentSchema(req)) throw new DomainError('unsupported_media_type', `Send Content-Type: ${SCHEMA_TYPE} to restore the default schema`);
    return schemaAnswer('Schema reverted to default', await config.writes.restoreDefaultSchema(product, authorOf(req)));
  });

  app.get<{ Params: { productIdOrSlug: string } }>('/config/rollout', {
    preHandler: teamOnly,
    schema: { tags: ['configuration'], summary: 'Rollout progress: devices (and modules) in sync, pending, or refused by the device', params: P, response: { 200: RolloutAnswer, ...errorResponses(400, 401, 403) } },
  }, async (req) => config.status.rollout(productOf(req).id));

  app.get<{ Params: { productIdOrSlug: string; deviceId: string } }>('/config/:deviceId/explain', {
    preHandler: teamOnly,
    schema: { tags: ['configuration'], summary: "Every setting of a device's effective configuration with its source (default, fleet, device)", params: PD, response: { 200: ExplainAnswer, ...errorResponses(400, 401, 403, 404) } },
  }, async (req) => {
    const { product, device } = await deviceOf(req);
    return config.status.explain(product.id, device.id);
  });

  app.get<{ Params: { productIdOrSlug: string }; Querystring: { kind?: 'values' | 'schema'; device_id?: string; page?: number; per_page?: number } }>('/config/history', {
    preHandler: teamOnly,
    schema: {
      tags: ['configuration'], summary: "The product's configuration changes, newest first (?kind=values|schema, ?device_id=ID or fleet)", params: P,
      querystring: Type.Intersect([Pagination, Type.Object({ kind: Type.Optional(Type.Union([Type.Literal('values'), Type.Literal('schema')])), device_id: Type.Optional(Str(100)), access_token: Type.Optional(Str(200)) })]),
      response: { 200: HistoryPageAnswer, ...errorResponses(400, 401, 403) },
    },
  }, async (req) => {
    const product = productOf(req);
    const { kind, device_id: deviceId, page = 1, per_page: perPage = 25 } = req.query;
    return config.history.list(product, { kind, deviceId: deviceId === 'fleet' ? undefined : deviceId, fleet: deviceId === 'fleet', page, perPage });
  });

  app.get<{ Params: VersionParams }>('/config/history/:version', {
    preHandler: teamOnly,
    schema: { tags: ['configuration'], summary: 'One configuration change and the document it left in force', params: PV, response: { 200: HistoryDocumentAnswer, ...errorResponses(400, 401, 403, 404) } },
  }, async (req) => config.history.get(productOf(req), req.params.version));

  app.get<{ Params: VersionParams; Querystring: { against?: number } }>('/config/history/:version/diff', {
    preHandler: teamOnly,
    schema: {
      tags: ['configuration'], summary: 'What a change changed, as JSON pointers (against the previous version of its scope, or ?against=N)', params: PV,
      querystring: Type.Object({ against: Type.Optional(Type.Integer({ minimum: 1 })), access_token: Type.Optional(Str(200)) }), response: { 200: DiffAnswer, ...errorResponses(400, 401, 403, 404) },
    },
  }, async (req) => config.history.diff(productOf(req), req.params.version, req.query.against));

  app.post<{ Params: VersionParams; Body: unknown }>('/config/history/:version/rollback', {
    preHandler: teamOnly,
    schema: {
      tags: ['configuration'], summary: 'Restore the document of a version to its scope: a new change, delivered like any write', params: PV,
      // As the write it repeats: a schema's, a device's (202 when the device is offline), the fleet's.
      response: { 200: Type.Union([SchemaWriteAnswer, DeviceWriteAnswer, FleetWriteAnswer]), 202: DeviceWriteAnswer, ...errorResponses(400, 401, 403, 404, 422) },
    },
  }, async (req, reply) => {
    const done = await config.writes.rollback(productOf(req), req.params.version, authorOf(req));
    if (done.scope === 'schema') return schemaAnswer(`Schema of version ${done.version} restored`, done.answer);
    if (done.scope === 'fleet') return done.answer;
    return deviceAnswer(reply, done.answer);
  });
}

/** Values of modules a schema no longer has are kept aside: say so, and that it is harmless. */
function keptAsideMessage(message: string, keptAside: string[]): string {
  if (keptAside.length === 0) return message;
  return `${message}. Stored values of ${keptAside.join(', ')} are kept aside (the schema has no such module): they are not sent to devices, and come back if a later schema has the module again`;
}
