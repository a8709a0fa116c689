import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import { DomainError } from '../../domain/errors.js';
import { parseIdList } from '../../domain/devices.js';
import type { ClaimService } from '../../services/claims.service.js';
import type { Devices } from '../../services/devices/index.js';
import { DeviceViewSchema } from '../../services/devices/view.js';
import { ImportResultSchema } from '../../services/devices/membership.js';
import type { DeviceRecord } from '../../repositories/devices.repository.js';
import type { DeviceCallService } from '../../services/device-calls.service.js';
import type { ProductService } from '../../services/products.service.js';
import { authOf, type Guard } from '../auth.js';
import { accountOf } from '../../services/audit-account.js';
import type { Firmware } from '../../services/firmware/index.js';
import { productOf } from '../product-scope.js';
import { Flag, NoContent, Str, bodyOptional, errorResponses } from '../schemas.js';
import { multipartRoutes } from '../multipart.js';

const DeviceRef = Type.Ref('Device');
const P = Type.Object({ productIdOrSlug: Str(100) });
const PD = Type.Object({ productIdOrSlug: Str(100), deviceId: Str(100) });
const D = Type.Object({ deviceId: Str(100) });
const DeviceChange = Type.Object({
  name: Type.Optional(Str(200)),
  notes: Type.Optional(Type.Union([Str(1000), Type.Null()])),
  development: Type.Optional(Flag),
  desired_firmware_version: Type.Optional(Type.Union([Type.Integer(), Str(12), Type.Null()])),
  flash: Type.Optional(Flag),
  firmware_updates_forced: Type.Optional(Flag),
  groups: Type.Optional(Type.Union([Type.Array(Str(64), { maxItems: 1000 }), Str(64)])),
  signal: Type.Optional(Type.Union([Str(5), Type.Integer(), Type.Boolean()])),
  access_token: Type.Optional(Str(200)),
}, { additionalProperties: true });
/** The text of the multipart field `file`; a malformed or oversized body is a 4xx, never a 500. */
async function multipartFileText(req: FastifyRequest): Promise<string> {
  try {
    const file = await req.file();
    if (!file || file.fieldname !== 'file') throw new DomainError('invalid_request', 'Send the ids as a multipart field named "file"');
    return (await file.toBuffer()).toString('utf8');
  } catch (err) {
    if (err instanceof DomainError) throw err;
    if ((err as { statusCode?: number }).statusCode === 413) throw new DomainError('payload_too_large', 'The import file is larger than 1 MiB; split it');
    throw new DomainError('invalid_request', `The multipart body is malformed: ${String((err as Error).message).slice(0, 200)}`);
  }
}

/**
 * PUT with `signal` makes the device signal (docs/api.md, "Calling devices"); otherwise it changes
 * the record, and on product routes its firmware fields and groups too (docs/firmware.md, "Devices").
 */
const deviceChange = (devices: Devices, deviceCalls: DeviceCallService, firmware?: Firmware) => (req: FastifyRequest, d: DeviceRecord, body: Record<string, unknown>) => {
  if (body.signal !== undefined) return deviceCalls.signal(d, body.signal);
  if (!firmware) return devices.edits.update(d, body, false);
  return firmware.devices.update(productOf(req), d, body, { account: accountOf(authOf(req).subject), ip: req.ip });
};

/** Devices (docs/api.md, "Devices", "Claim codes"): identities, ownership and claim codes. */
export function deviceRoutes(app: FastifyInstance, deps: { devices: Devices; deviceCalls: DeviceCallService; claims: ClaimService; products: ProductService; guard: Guard }): void {
  const { devices, products, guard } = deps;
  const { access, views } = devices;
  const change = deviceChange(devices, deps.deviceCalls);
  const anyToken = guard();
  const teamOnly = guard({ subjects: ['user', 'product'] });
  app.addSchema(DeviceViewSchema);

  // POST /v1/devices: {product_id} provisions a new identity (particle-api-js provisionDevice);
  // {id, request_transfer} claims a device by id (particle-cli `claim`).
  app.post<{ Body: { product_id?: number | string; id?: string; request_transfer?: boolean | 'true' | 'false' } }>('/v1/devices', {
    preHandler: teamOnly,
    schema: {
      tags: ['devices'],
      summary: 'Provision a device into a product ({product_id}), or claim a device by id ({id})',
      body: Type.Object({
        product_id: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Str(100)])),
        id: Type.Optional(Str(100)),
        request_transfer: Type.Optional(Flag),
        access_token: Type.Optional(Str(200)),
      }),
      response: { ...errorResponses(400, 401, 403, 404) },
    },
  }, async (req, reply) => {
    if (req.body.id !== undefined) return devices.ownership.claimById(authOf(req), req.body.id, req.ip);
    if (req.body.product_id === undefined) throw new DomainError('invalid_request', 'Send product_id (provision a device) or id (claim a device)');
    const product = await products.access(authOf(req), String(req.body.product_id));
    return reply.code(201).send(await devices.provisioning.provision(product, authOf(req), req.ip));
  });

  app.get('/v1/devices', {
    preHandler: anyToken,
    schema: { tags: ['devices'], summary: "The caller's devices (a bare array)", response: { 200: Type.Array(DeviceRef), ...errorResponses(400, 401) } },
  }, async (req) => devices.lists.listMine(authOf(req)));

  app.get<{ Params: { deviceId: string } }>('/v1/devices/:deviceId', {
    preHandler: anyToken,
    schema: { tags: ['devices'], summary: 'One device, by id or (for its owner) by name', params: D, response: { 200: DeviceRef, ...errorResponses(400, 401, 403) } },
  }, async (req) => views.view(await access.mustReach(authOf(req), req.params.deviceId)));

  app.put<{ Params: { deviceId: string }; Body: Record<string, unknown> }>('/v1/devices/:deviceId', {
    preHandler: anyToken,
    schema: { tags: ['devices'], summary: 'Rename a device, set its notes, or make it signal', params: D, body: DeviceChange, response: { ...errorResponses(400, 401, 403, 404) } },
  }, async (req) => change(req, await access.mustReach(authOf(req), req.params.deviceId), req.body));

  app.delete<{ Params: { deviceId: string } }>('/v1/devices/:deviceId', {
    preHandler: anyToken,
    schema: { tags: ['devices'], summary: 'Unclaim a device you own', params: D, response: { 200: Type.Object({ ok: Type.Literal(true) }), ...errorResponses(400, 401, 403) } },
  }, async (req) => {
    await devices.ownership.unclaim(authOf(req), req.params.deviceId, req.ip);
    return { ok: true as const };
  });

  app.post('/v1/device_claims', {
    preValidation: bodyOptional,
    preHandler: guard({ subjects: ['user'] }),
    schema: {
      tags: ['claiming'],
      summary: 'A claim code for the user of the token',
      body: Type.Optional(Type.Object({ iccid: Type.Optional(Str(40)), imei: Type.Optional(Str(40)), access_token: Type.Optional(Str(200)) })),
      response: { 200: Type.Object({ claim_code: Type.String(), device_ids: Type.Array(Type.String()) }), ...errorResponses(400, 401, 403) },
    },
  }, async (req) => deps.claims.create(access.ownerOf(authOf(req)) as { kind: 'user'; id: string }, null, req.ip));
}

/**
 * A product's fleet (docs/api.md, "Devices"), under /v1/products/:productIdOrSlug
 * (http/product-scope.ts): pages of it, import, bulk provisioning, one device, and customers'
 * claim codes. Reads that need only the product's id use the remembered access, as device calls
 * do; writes check afresh.
 */
export function productDeviceRoutes(scope: FastifyInstance, deps: { devices: Devices; deviceCalls: DeviceCallService; claims: ClaimService; firmware: Firmware; guard: Guard }): void {
  const { devices, guard } = deps;
  const { access, views } = devices;
  const teamOnly = guard({ subjects: ['user', 'product'] });
  const change = deviceChange(devices, deps.deviceCalls, deps.firmware);
  type WithPD = { Params: { productIdOrSlug: string; deviceId: string } };

  scope.post('/device_claims', {
    config: { productAccess: 'lookup' },
    preValidation: bodyOptional,
    preHandler: guard({ subjects: ['customer'] }),
    schema: {
      tags: ['claiming'],
      summary: 'A claim code for the customer of the token (a customer of this product)',
      params: P,
      body: Type.Optional(Type.Object({ iccid: Type.Optional(Str(40)), imei: Type.Optional(Str(40)), access_token: Type.Optional(Str(200)) })),
      response: { 200: Type.Object({ claim_code: Type.String(), device_ids: Type.Array(Type.String()) }), ...errorResponses(400, 401, 403) },
    },
  }, async (req) => {
    const s = authOf(req).subject;
    const product = req.product;
    if (s.kind !== 'customer' || !product || String(product.id) !== s.productId) {
      throw new DomainError('forbidden', 'The token must belong to a customer of this product');
    }
    return deps.claims.create({ kind: 'customer', id: s.customerId }, product.id, req.ip);
  });


  scope.get<{ Querystring: { deviceId?: string; deviceName?: string; groups?: string; sortAttr?: string; sortDir?: string; page?: number; per_page?: number } }>('/devices', {
    preHandler: teamOnly,
    config: { productAccess: 'team-read' },
    schema: {
      tags: ['product devices'],
      summary: "A page of the product's fleet",
      params: P,
      querystring: Type.Object({
        deviceId: Type.Optional(Str(24)),
        deviceName: Type.Optional(Str(63)),
        groups: Type.Optional(Str(1000)),
        sortAttr: Type.Optional(Str(40)),
        sortDir: Type.Optional(Str(4)),
        page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
        per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
        access_token: Type.Optional(Str(200)),
      }),
      response: {
        200: Type.Object({
          devices: Type.Array(DeviceRef),
          customers: Type.Array(Type.Object({ id: Type.String(), username: Type.String() })),
          meta: Type.Object({ page: Type.Integer(), per_page: Type.Integer(), total: Type.Integer(), total_pages: Type.Integer() }),
        }),
        ...errorResponses(400, 401, 403),
      },
    },
  }, async (req) => {
    const q = req.query;
    // The page needs the product's id only, and reads the fleet's size itself.
    return devices.lists.listFleet(productOf(req), {
      ...(q.deviceId === undefined ? {} : { deviceId: q.deviceId }),
      ...(q.deviceName === undefined ? {} : { deviceName: q.deviceName }),
      ...(q.groups === undefined ? {} : { groups: q.groups }),
      ...(q.sortAttr === undefined ? {} : { sortAttr: q.sortAttr }),
      ...(q.sortDir === undefined ? {} : { sortDir: q.sortDir }),
      page: q.page ?? 1,
      perPage: q.per_page ?? 25,
    });
  });

  // Import by {id}, {ids:[...]} or a multipart `file` of ids (particle-cli always sends the file).
  multipartRoutes(scope, (s) => {
    s.post<{ Body: { id?: string; ids?: string[] } | undefined }>('/devices', {
      preHandler: teamOnly,
      schema: {
        tags: ['product devices'],
        summary: 'Add devices to the product: {id}, {ids:[...]}, or a multipart file of ids, one per line',
        params: P,
        consumes: ['application/json', 'application/x-www-form-urlencoded', 'multipart/form-data'],
        // The JSON body, by its content type: a form's or a multipart file's is read by the handler.
        body: { content: { 'application/json': { schema: Type.Object({ id: Type.Optional(Type.String()), ids: Type.Optional(Type.Array(Type.String())), access_token: Type.Optional(Str(200)) }) } } },
        response: { 200: ImportResultSchema, ...errorResponses(400, 401, 403, 413) },
      },
    }, async (req) => {
      let ids: string[];
      if (req.isMultipart()) {
        ids = parseIdList(await multipartFileText(req));
      } else {
        const body = (req.body ?? {}) as Record<string, unknown>;
        if (typeof body.id === 'string' && body.ids === undefined) ids = [body.id];
        else if (Array.isArray(body.ids) && body.id === undefined && body.ids.every((x) => typeof x === 'string')) ids = parseIdList((body.ids as string[]).join('\n'));
        else throw new DomainError('invalid_request', 'Send {id: "..."}, {ids: ["...", ...]} or a multipart file');
      }
      if (ids.length === 0) throw new DomainError('invalid_request', 'No device ids given');
      return devices.membership.importToProduct(productOf(req), ids, authOf(req), req.ip);
    });
  });

  scope.post<{ Body: { quantity: number } }>('/device_identities', {
    preHandler: teamOnly,
    schema: {
      tags: ['product devices'],
      summary: 'Bulk provisioning: N new device identities with their secrets, once (JSON, or CSV with Accept: text/csv)',
      params: P,
      body: Type.Object({ quantity: Type.Integer({ minimum: 1, maximum: 10_000 }), access_token: Type.Optional(Str(200)) }),
      response: {
        201: {
          description: 'The new identities; their secrets are not shown again',
          content: {
            'application/json': { schema: Type.Object({ ok: Type.Literal(true), devices: Type.Array(Type.Object({ id: Type.String(), device_secret: Type.String() })) }) },
            'text/csv': { schema: Type.String({ description: 'A header line, then device_id,device_secret a line' }) },
          },
        },
        ...errorResponses(400, 401, 403),
      },
    },
  }, async (req, reply) => {
    const made = await devices.provisioning.provisionMany(productOf(req), req.body.quantity, authOf(req), req.ip);
    reply.header('Cache-Control', 'no-store');
    if (String(req.headers.accept ?? '').includes('text/csv')) {
      return reply.code(201).type('text/csv; charset=utf-8').send(['device_id,device_secret', ...made.map((m) => `${m.id},${m.device_secret}`)].join('\n') + '\n');
    }
    return reply.code(201).send({ ok: true, devices: made });
  });

  scope.get<WithPD>('/devices/:deviceId', {
    preHandler: teamOnly,
    config: { productAccess: 'team-read' },
    schema: { tags: ['product devices'], summary: 'One device of the fleet', params: PD, response: { 200: DeviceRef, ...errorResponses(400, 401, 403, 404) } },
  }, async (req) => views.view(await access.inProduct(productOf(req), req.params.deviceId)));

  scope.put<WithPD & { Body: Record<string, unknown> }>('/devices/:deviceId', {
    preHandler: teamOnly,
    schema: { tags: ['product devices'], summary: 'Name, notes, development mode, firmware lock (with flash), forced updates, groups (absolute; new names are created), or signal', params: PD, body: DeviceChange, response: { ...errorResponses(400, 401, 403, 404) } },
  }, async (req) => change(req, await access.inProduct(productOf(req), req.params.deviceId), req.body));

  scope.delete<WithPD>('/devices/:deviceId', {
    preHandler: teamOnly,
    schema: { tags: ['product devices'], summary: 'Remove a device from the product (its owner is released)', params: PD, response: { 204: NoContent, ...errorResponses(400, 401, 403, 404) } },
  }, async (req, reply) => {
    await devices.membership.removeFromProduct(productOf(req), req.params.deviceId, authOf(req), req.ip);
    return reply.code(204).send();
  });

  scope.delete<WithPD>('/devices/:deviceId/owner', {
    preHandler: teamOnly,
    schema: { tags: ['product devices'], summary: "Release a product device's owner (unclaim)", params: PD, response: errorResponses(400, 401, 403, 404) },
  }, async (req, reply) => {
    await devices.ownership.releaseOwnerInProduct(productOf(req), req.params.deviceId, authOf(req), req.ip);
    return reply.code(204).send();
  });
}
