import { Type, type TSchema } from '@sinclair/typebox';
import type { AttemptRecord, DeliveryRecord, WebhookRecord } from '../../repositories/webhooks.repository.js';
import { specFields } from '../../services/webhooks/spec.js';
import { Flag, Str } from '../schemas.js';

/**
 * What the webhook routes take and answer (docs/api.md, "Webhooks"). Particle's fields keep
 * Particle's names (docs/webhooks.md, "Fields"); what Skyport adds is snake_case. Fastify
 * serializes every answer with these schemas, so a field left out here never leaves the server.
 */

const Texts = Type.Record(Type.String(), Type.String());
/** A map of templates as sent: form fields may be numbers or booleans, which are kept as text. */
const TextsIn = Type.Record(Type.String(), Type.Union([Type.String(), Type.Number(), Type.Boolean()]));
const Nullable = (t: TSchema) => Type.Optional(Type.Union([t, Type.Null()]));
const Time = Type.String({ description: 'ISO 8601' });

/**
 * A webhook's fields as clients send them. The core checks each (services/webhooks/spec.ts) and
 * says what is wrong in its own words, so this schema only bounds types; other fields are
 * allowed and ignored (particle-cli's JSON templates carry a `_` comment field, particle-api-js
 * sends `deviceId`, particle-cli `deviceid`).
 */
export const WebhookBody = Type.Object({
  integration_type: Type.Optional(Str(40, { description: '"Webhook", the only kind this server has; required at /integrations' })),
  event: Type.Optional(Str(200, { description: 'the prefix of the event names that trigger it (1-64 characters; case-sensitive)' })),
  eventName: Type.Optional(Str(200, { description: 'the same as event (Particle\'s documents use both)' })),
  url: Type.Optional(Str(4096)),
  requestType: Type.Optional(Str(10, { description: 'GET, POST (default), PUT or DELETE' })),
  name: Nullable(Str(1000)),
  deviceID: Nullable(Str(100, { description: 'a user\'s webhook: only this device\'s events (also deviceid, deviceId)' })),
  deviceid: Nullable(Str(100)),
  deviceId: Nullable(Str(100)),
  json: Type.Optional(Type.Unknown({ description: 'a JSON body: an object whose texts are templates, or one template' })),
  form: Nullable(TextsIn),
  body: Nullable(Str(64 * 1024, { description: 'a body template' })),
  query: Nullable(TextsIn),
  headers: Nullable(TextsIn),
  auth: Nullable(Type.Object({ username: Type.Optional(Type.Unknown()), password: Type.Optional(Type.Unknown()) }, { additionalProperties: true })),
  noDefaults: Nullable(Flag),
  rejectUnauthorized: Nullable(Flag),
  responseTemplate: Nullable(Str(64 * 1024)),
  responseTopic: Nullable(Str(1000)),
  errorResponseTopic: Nullable(Str(1000)),
  disabled: Nullable(Flag),
}, { additionalProperties: true });

export const WebhookView = Type.Object({
  id: Type.String(),
  integration_type: Type.Literal('Webhook'),
  event: Type.String(),
  url: Type.String(),
  requestType: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  deviceID: Type.Optional(Type.String({ description: 'only this device\'s events trigger it (user webhooks)' })),
  noDefaults: Type.Boolean(),
  rejectUnauthorized: Type.Boolean(),
  json: Type.Optional(Type.Unknown()),
  form: Type.Optional(Texts),
  body: Type.Optional(Type.String()),
  query: Type.Optional(Texts),
  headers: Type.Optional(Texts),
  auth: Type.Optional(Type.Object({ username: Type.String() }, { description: 'HTTP Basic; the password is never shown' })),
  responseTemplate: Type.Optional(Type.String()),
  responseTopic: Type.Optional(Type.String()),
  errorResponseTopic: Type.Optional(Type.String()),
  disabled: Type.Boolean({ description: 'by its owner, or by the cloud (disabled_reason)' }),
  disabled_reason: Type.Union([Type.String(), Type.Null()], { description: 'why the cloud disabled it; PUT disabled:false enables it again' }),
  failing_since: Type.Union([Time, Type.Null()], { description: 'every delivery has failed since then' }),
  created_at: Time,
  updated_at: Time,
});

export const Counts = Type.Object({
  delivered: Type.Integer(), failed: Type.Integer(), skipped: Type.Integer(), pending: Type.Integer(),
}, { description: 'attempts of the last 30 days by outcome, and deliveries waiting' });

export const WebhookDetail = Type.Object({ ...WebhookView.properties, counts: Counts });

export const Created = Type.Object({
  ok: Type.Literal(true),
  ...WebhookView.properties,
  hookUrl: Type.String({ description: 'the API URL of the webhook' }),
  secret: Type.String({ description: 'the signing secret (whsec_…), shown this once' }),
});

const Attempt = Type.Object({
  n: Type.Integer(),
  at: Time,
  outcome: Type.Union([Type.Literal('delivered'), Type.Literal('failed'), Type.Literal('skipped')]),
  status: Type.Union([Type.Integer(), Type.Null()], { description: 'the receiver\'s HTTP status' }),
  latency_ms: Type.Integer(),
  answer: Type.Union([Type.String(), Type.Null()], { description: 'the start of the receiver\'s answer' }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'why no answer came, or why it was skipped' }),
});

export const DeliveryStatus = Type.Union([Type.Literal('pending'), Type.Literal('sending'), Type.Literal('delivered'), Type.Literal('failed')]);

const Delivery = Type.Object({
  id: Type.String({ description: 'the webhook-id header of every attempt' }),
  status: DeliveryStatus,
  event: Type.Object({ name: Type.String(), data: Type.Union([Type.String(), Type.Null()]), coreid: Type.String(), published_at: Type.String() }),
  created_at: Time,
  next_at: Type.Union([Time, Type.Null()], { description: 'the next attempt, while pending' }),
  finished_at: Type.Union([Time, Type.Null()]),
  resend_of: Type.Union([Type.String(), Type.Null()], { description: 'the delivery this one sends again' }),
  attempts: Type.Array(Attempt),
});

export const DeliveryLog = Type.Object({
  deliveries: Type.Array(Delivery),
  next_before: Type.Union([Type.String(), Type.Null()], { description: 'pass as before for the next page; null on the last' }),
});

export const LogQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  before: Type.Optional(Str(100, { description: 'next_before of the page before, or an ISO 8601 time' })),
  status: Type.Optional(DeliveryStatus),
});

export const ReplayBody = Type.Object({
  from: Str(40, { description: 'ISO 8601; deliveries made from then…' }),
  to: Str(40, { description: '…until then (excluded)' }),
});

export const TestBody = Type.Object({
  data: Type.Optional(Type.Union([Str(1024), Type.Null()], { description: 'the made-up event\'s data' })),
});

export const Queued = Type.Object({ ok: Type.Literal(true), delivery_id: Type.String() });
export const Replayed = Type.Object({ ok: Type.Literal(true), count: Type.Integer() });
export const Rotated = Type.Object({
  ok: Type.Literal(true),
  secret: Type.String({ description: 'the new signing secret, shown this once' }),
  previous_secret_expires_at: Time,
});

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

/** A webhook as every answer shows it: the auth password and the signing secret stay out. */
export function webhookView(w: WebhookRecord): Record<string, unknown> {
  const fields = specFields(w.spec);
  if (w.spec.auth) fields.auth = { username: w.spec.auth.username };
  return {
    id: w.id,
    integration_type: 'Webhook',
    name: null,
    ...fields,
    disabled: w.spec.disabled || w.disabledReason !== null,
    disabled_reason: w.disabledReason,
    failing_since: iso(w.failingSince),
    created_at: w.createdAt.toISOString(),
    updated_at: w.updatedAt.toISOString(),
  };
}

export function deliveryView(d: DeliveryRecord & { log: AttemptRecord[] }): Record<string, unknown> {
  return {
    id: d.id,
    status: d.status,
    event: { name: d.event.name, data: d.event.data, coreid: d.event.coreid, published_at: d.event.published_at },
    created_at: d.createdAt.toISOString(),
    next_at: d.status === 'pending' ? d.nextAt.toISOString() : null,
    finished_at: iso(d.finishedAt),
    resend_of: d.resendOf,
    attempts: d.log.map((a) => ({ n: a.n, at: a.at.toISOString(), outcome: a.outcome, status: a.status, latency_ms: a.latencyMs, answer: a.answer, error: a.error })),
  };
}
