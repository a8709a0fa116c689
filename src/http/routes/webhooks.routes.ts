import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type, type TObject } from '@sinclair/typebox';
import { DomainError, isDomainError } from '../../domain/errors.js';
import { userScope, type WebhookRecord, type WebhookScope } from '../../repositories/webhooks.repository.js';
import { accountOf } from '../../services/audit-account.js';
import { MAX_EVENT_DATA_BYTES } from '../../services/events.service.js';
import type { DeviceAccess } from '../../services/devices/access.js';
import type { Webhooks } from '../../services/webhooks/index.js';
import type { Actor } from '../../services/webhooks/manage.js';
import { previewRequest, type SampleEvent } from '../../services/webhooks/preview.js';
import { authOf, userIdOf, type Guard } from '../auth.js';
import { productOf, type ProductAccess } from '../product-scope.js';
import { publicOriginOf } from '../public-url.js';
import { OkBody, Str, bodyOptional, errorResponses } from '../schemas.js';
import {
  Created, DeliveryLog, LogQuery, PreviewAnswer, PreviewBody, Queued, Replayed, ReplayBody, Rotated, TestBody, WebhookBody, WebhookDetail, WebhookView,
  deliveryView, webhookView,
} from './webhooks.schemas.js';

type Kind = 'webhooks' | 'integrations';
type Body = Record<string, unknown>;
type IdParams = { id: string };
type DeliveryParams = IdParams & { deliveryId: string };

/** Where a set of webhook routes stands, and whose webhooks they reach. */
interface Place {
  /** `/v1/<kind>` for a user's, `/<kind>` under /v1/products/:productIdOrSlug for a product's. */
  base: string;
  kind: Kind;
  owner: 'user' | 'product';
  params: TObject;
  guard: ReturnType<Guard>;
  /** How product routes reach their product (http/product-scope.ts): reads and writes. */
  access: { read: ProductAccess; write: ProductAccess } | null;
  scope(req: FastifyRequest): WebhookScope;
  /** The webhook's own path in the API (hookUrl). */
  pathOf(req: FastifyRequest, id: string): string;
}

const bad = (message: string) => new DomainError('invalid_request', message);

/** Particle's spellings of a field, and the one the core reads first (an edit merges by name). */
const ALIASES: ReadonlyArray<[alias: string, name: string]> = [['eventName', 'event'], ['deviceid', 'deviceID'], ['deviceId', 'deviceID'], ['request_type', 'requestType']];
const BODY_KINDS = ['json', 'form', 'body'] as const;

/**
 * The fields as the core takes them: each under the name it reads first, so that an edit's
 * `deviceid` (particle-cli) or `eventName` replaces the stored value instead of losing to it, and
 * on an edit a new body template of one kind replaces the old one of another.
 */
function normalised(body: Body, editing: boolean): Body {
  const input: Body = { ...body };
  for (const [alias, name] of ALIASES) {
    if (!Object.hasOwn(input, alias)) continue;
    if (!Object.hasOwn(input, name)) input[name] = input[alias];
    delete input[alias];
  }
  const given = (v: unknown) => v !== undefined && v !== null && v !== '';
  if (editing && BODY_KINDS.some((k) => given(input[k]))) {
    for (const k of BODY_KINDS) if (!Object.hasOwn(input, k)) input[k] = null;
  }
  return input;
}

/** `integration_type`: Webhook, the one kind of integration here; required at /integrations when creating. */
function checkType(body: Body, required: boolean): void {
  const t = body.integration_type;
  if (t === undefined || t === null || t === '') {
    if (required) throw bad('integration_type is required: "Webhook", the only kind of integration this server has');
    return;
  }
  if (typeof t !== 'string' || t.toLowerCase() !== 'webhook') {
    throw bad(`integration_type "${String(t).slice(0, 40)}" is not supported: this server has Webhook integrations only`);
  }
}

/**
 * particle-cli shows a refusal's `info` before its `error`: the core's own words ("url: 127.0.0.1
 * is a loopback… address") instead of only "invalid_request".
 */
async function explained<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (isDomainError(err) && err.status === 400 && err.details.info === undefined) {
      throw new DomainError(err.code, err.message, { details: { ...err.details, info: err.message }, cause: err });
    }
    throw err;
  }
}

/**
 * A user's webhook may name its device as particle-api-js says ("device ID or Name"): a name
 * becomes the id of the caller's device of that name. Ids are left to the core, as is a
 * product's webhook (it takes no device).
 */
async function deviceByName(req: FastifyRequest, input: Body, devices: DeviceAccess): Promise<void> {
  const d = input.deviceID;
  if (typeof d !== 'string' || d === '' || d === 'any' || d === 'mine' || /^[0-9a-f]{24}$/i.test(d)) return;
  try {
    input.deviceID = (await devices.mustReach(authOf(req), d)).id;
  } catch (err) {
    if (isDomainError(err) && err.code === 'permission_denied') throw bad(`deviceID: you have no device named "${d.slice(0, 63)}" (give its name or its id)`);
    throw err;
  }
}

function time(value: string, field: string): Date {
  const t = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(t)) throw bad(`${field} must be an ISO 8601 time, such as 2026-11-23T05:00:00Z`);
  return new Date(t);
}

const sameScope = (a: WebhookScope, b: WebhookScope) => (a.kind === 'product' && b.kind === 'product'
  ? a.productId === b.productId
  : a.kind === 'user' && b.kind === 'user' && a.owner.kind === b.owner.kind && a.owner.id === b.owner.id);

/**
 * Webhooks, in four places with one set of handlers (docs/api.md, "Webhooks"): `/v1/webhooks` and
 * `/v1/integrations` (a user's; user tokens), and the same under /v1/products/:productIdOrSlug
 * (a product's; team members and product tokens). A webhook is an integration of type Webhook:
 * both paths reach the same ones. Another owner's webhook answers 404, as an unknown one does.
 */
function webhookRoutesAt(app: FastifyInstance, place: Place, deps: WebhookDeps): void {
  const { manage } = deps.webhooks;
  const { base, kind } = place;
  const tags = ['webhooks'];
  const withId = Type.Object({ ...place.params.properties, id: Str(100) });
  const withDelivery = Type.Object({ ...withId.properties, deliveryId: Str(100) });
  const read = place.access ? { productAccess: place.access.read } : {};
  const write = place.access ? { productAccess: place.access.write } : {};
  const whose = place.owner === 'user' ? 'your' : 'the product\'s';
  const unknown = place.owner === 'user' ? 'No such webhook of yours' : 'No such webhook in this product';
  const actor = (req: FastifyRequest): Actor => ({ account: accountOf(authOf(req).subject), ip: req.ip });

  async function owned(req: FastifyRequest<{ Params: IdParams }>): Promise<WebhookRecord> {
    const w = await manage.find(req.params.id);
    if (!w || !sameScope(w.scope, place.scope(req))) throw new DomainError('not_found', unknown);
    return w;
  }

  app.get(base, {
    preHandler: place.guard,
    config: read,
    schema: { tags, summary: `List ${whose} ${kind} (a bare array, as Particle answers)`, params: place.params, response: { 200: Type.Array(WebhookView), ...errorResponses(400, 401, 403) } },
  }, async (req) => (await manage.list(place.scope(req))).map(webhookView));

  app.post<{ Body: Body }>(base, {
    preHandler: place.guard,
    preValidation: bodyOptional,
    config: write,
    schema: {
      tags,
      summary: `Create a webhook${kind === 'integrations' ? ' (integration_type: Webhook)' : ''}; its signing secret is shown this once`,
      params: place.params,
      body: WebhookBody,
      response: { 201: Created, ...errorResponses(400, 401, 403) },
    },
  }, async (req, reply) => {
    const { webhook, secret } = await explained(async () => {
      checkType(req.body, kind === 'integrations');
      const input = normalised(req.body, false);
      if (place.owner === 'user') await deviceByName(req, input, deps.devices);
      return manage.create(place.scope(req), input, actor(req));
    });
    const hookUrl = `${publicOriginOf(req, deps.publicUrl)}${place.pathOf(req, webhook.id)}`;
    return reply.code(201).send({ ok: true, ...webhookView(webhook), hookUrl, secret });
  });

  // The request a sample event would make, before saving (the console's preview); `/webhooks` only.
  if (kind === 'webhooks') {
    app.post<{ Body: Body & { sample?: SampleEvent } }>(`${base}/preview`, {
      preHandler: place.guard,
      preValidation: bodyOptional,
      config: read,
      schema: {
        tags,
        summary: 'The request a webhook with these fields would send for a sample event: nothing is saved or sent; the auth header is masked and the signature left out',
        params: place.params,
        body: PreviewBody,
        response: { 200: PreviewAnswer, ...errorResponses(400, 401, 403) },
      },
    }, async (req) => explained(async () => {
      const { sample, ...fields } = req.body;
      checkType(fields, false);
      const input = normalised(fields, false);
      if (place.owner === 'user') await deviceByName(req, input, deps.devices);
      const scope = place.scope(req);
      // The wall clock, not the cloud's: the time is only shown (published_at, webhook-timestamp).
      return previewRequest(input, scope.kind === 'product' ? scope : { kind: 'user' }, sample ?? {}, new Date());
    }));
  }

  app.get<{ Params: IdParams }>(`${base}/:id`, {
    preHandler: place.guard,
    config: read,
    schema: { tags, summary: 'A webhook, with its deliveries of the last 30 days counted (never its auth password nor its secret)', params: withId, response: { 200: WebhookDetail, ...errorResponses(400, 401, 403, 404) } },
  }, async (req) => {
    const w = await owned(req);
    return { ...webhookView(w), counts: await manage.counts(w) };
  });

  app.put<{ Params: IdParams; Body: Body }>(`${base}/:id`, {
    preHandler: place.guard,
    preValidation: bodyOptional,
    config: write,
    schema: { tags, summary: 'Change a webhook: the fields given replace theirs, the others stay; disabled:false enables it again', params: withId, body: WebhookBody, response: { 200: Type.Object({ ok: Type.Literal(true), ...WebhookView.properties }), ...errorResponses(400, 401, 403, 404) } },
  }, async (req) => {
    const w = await owned(req);
    return { ok: true as const, ...webhookView(await explained(async () => {
      checkType(req.body, false);
      const input = normalised(req.body, true);
      if (place.owner === 'user') await deviceByName(req, input, deps.devices);
      return manage.update(w, input, actor(req));
    })) };
  });

  app.delete<{ Params: IdParams }>(`${base}/:id`, {
    preHandler: place.guard,
    config: write,
    schema: { tags, summary: 'Delete a webhook and its delivery log', params: withId, response: { 200: OkBody, ...errorResponses(400, 401, 403, 404) } },
  }, async (req) => {
    await manage.remove(await owned(req), actor(req));
    return { ok: true as const };
  });

  app.get<{ Params: IdParams; Querystring: { limit?: number; before?: string; status?: 'pending' | 'sending' | 'delivered' | 'failed' } }>(`${base}/:id/deliveries`, {
    preHandler: place.guard,
    config: read,
    schema: { tags, summary: 'The delivery log, newest first: each delivery with its attempts', params: withId, querystring: LogQuery, response: { 200: DeliveryLog, ...errorResponses(400, 401, 403, 404) } },
  }, async (req) => {
    const w = await owned(req);
    const limit = req.query.limit ?? 20;
    let before: Date | { at: Date; id: string } | undefined;
    const given = req.query.before;
    if (given !== undefined && /^\d{4}-/.test(given)) {
      before = time(given, 'before');
    } else if (given !== undefined) {
      const d = await manage.findDelivery(given);
      if (!d || d.webhookId !== w.id) throw bad('before must be next_before of the page before (a delivery of this webhook) or an ISO 8601 time');
      before = { at: d.createdAt, id: d.id };
    }
    const rows = await manage.log(w, { limit, ...(before ? { before } : {}), ...(req.query.status ? { status: req.query.status } : {}) });
    return { deliveries: rows.map(deliveryView), next_before: rows.length === limit ? (rows[rows.length - 1] as { id: string }).id : null };
  });

  app.post<{ Params: DeliveryParams }>(`${base}/:id/deliveries/:deliveryId/resend`, {
    preHandler: place.guard,
    preValidation: bodyOptional,
    config: write,
    schema: { tags, summary: 'Send a delivery again, as a new delivery (once the webhook is enabled, if it is not)', params: withDelivery, response: { 200: Queued, ...errorResponses(400, 401, 403, 404) } },
  }, async (req) => ({ ok: true as const, delivery_id: await manage.resend(await owned(req), req.params.deliveryId) }));

  app.post<{ Params: IdParams; Body: { from: string; to: string } }>(`${base}/:id/replay`, {
    preHandler: place.guard,
    config: write,
    schema: { tags, summary: 'Send again every delivery made from `from` until `to` (the last 30 days), oldest first', params: withId, body: ReplayBody, response: { 200: Replayed, ...errorResponses(400, 401, 403, 404) } },
  }, async (req) => {
    const w = await owned(req);
    return { ok: true as const, count: await manage.replay(w, time(req.body.from, 'from'), time(req.body.to, 'to')) };
  });

  app.post<{ Params: IdParams; Body: { data?: string | null } }>(`${base}/:id/test`, {
    preHandler: place.guard,
    preValidation: bodyOptional,
    config: write,
    schema: { tags, summary: 'Send a made-up event named as the webhook\'s prefix (optional data) now', params: withId, body: TestBody, response: { 200: Queued, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (req) => {
    const w = await owned(req);
    const data = req.body.data ?? null;
    if (data !== null && Buffer.byteLength(data) > MAX_EVENT_DATA_BYTES) throw bad(`data is at most ${MAX_EVENT_DATA_BYTES} bytes, as an event's`);
    // A disabled webhook's deliveries wait until it is enabled: a test would show nothing now.
    if (w.spec.disabled || w.disabledReason) throw new DomainError('conflict', `The webhook is disabled${w.disabledReason ? ` (${w.disabledReason})` : ''}: enable it (PUT disabled:false) to test it`);
    return { ok: true as const, delivery_id: await deps.webhooks.test(w, data) };
  });

  app.post<{ Params: IdParams }>(`${base}/:id/secret`, {
    preHandler: place.guard,
    preValidation: bodyOptional,
    config: write,
    schema: { tags, summary: 'A new signing secret, shown this once; the old one still signs for 24 hours', params: withId, response: { 200: Rotated, ...errorResponses(400, 401, 403, 404) } },
  }, async (req) => {
    const { webhook, secret } = await manage.rotateSecret(await owned(req), actor(req));
    return { ok: true as const, secret, previous_secret_expires_at: (webhook.previousSecretUntil as Date).toISOString() };
  });
}

interface WebhookDeps { webhooks: Webhooks; devices: DeviceAccess; guard: Guard; publicUrl: string | undefined }

/** A user's webhooks: `/v1/webhooks` and `/v1/integrations`, user tokens only. */
export function webhookRoutes(app: FastifyInstance, deps: WebhookDeps): void {
  const guard = deps.guard({ subjects: ['user'] });
  for (const kind of ['webhooks', 'integrations'] as const) {
    webhookRoutesAt(app, {
      base: `/v1/${kind}`, kind, owner: 'user', params: Type.Object({}), guard, access: null,
      scope: (req) => userScope(userIdOf(req)),
      pathOf: (_req, id) => `/v1/${kind}/${id}`,
    }, deps);
  }
}

/** A product's webhooks: `/v1/products/:productIdOrSlug/webhooks` and `…/integrations` (http/product-scope.ts). */
export function productWebhookRoutes(scope: FastifyInstance, deps: WebhookDeps): void {
  const guard = deps.guard({ subjects: ['user', 'product'] });
  for (const kind of ['webhooks', 'integrations'] as const) {
    webhookRoutesAt(scope, {
      base: `/${kind}`, kind, owner: 'product', params: Type.Object({ productIdOrSlug: Str(100) }), guard, access: { read: 'team-read', write: 'team' },
      scope: (req) => ({ kind: 'product', productId: productOf(req).id }),
      pathOf: (req, id) => `/v1/products/${productOf(req).id}/${kind}/${id}`,
    }, deps);
  }
}
