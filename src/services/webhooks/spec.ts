import { DomainError } from '../../domain/errors.js';
import { isEventName } from '../../domain/device-protocol.js';

/**
 * A webhook as Particle's API describes it (docs/webhooks.md, "Fields"): which events trigger it
 * (a case-sensitive name prefix, and for a user's webhook optionally one device), where it sends
 * them and how the request is made. The same fields come to `/v1/webhooks` (particle-api-js
 * `createWebhook`, particle-cli ≤ 3.48) and to `/v1/integrations` (`createIntegration`,
 * particle-cli 3.49, `integration_type: "Webhook"`).
 */
export type RequestType = 'GET' | 'POST' | 'PUT' | 'DELETE';
export const REQUEST_TYPES: readonly RequestType[] = ['GET', 'POST', 'PUT', 'DELETE'];

/** What the request carries: Particle's default fields, or one of the three templates. */
export type BodyTemplate =
  | { kind: 'default' }
  /** An object whose string leaves are templates, or one template that renders to JSON text. */
  | { kind: 'json'; template: unknown }
  | { kind: 'form'; template: Record<string, string> }
  | { kind: 'body'; template: string };

export interface WebhookSpec {
  event: string;
  url: string;
  requestType: RequestType;
  name: string | null;
  /** A user's webhook may be for one device; a product's is for the whole fleet. */
  deviceId: string | null;
  body: BodyTemplate;
  query: Record<string, string> | null;
  headers: Record<string, string> | null;
  auth: { username: string; password: string } | null;
  noDefaults: boolean;
  rejectUnauthorized: boolean;
  responseTemplate: string | null;
  responseTopic: string | null;
  errorResponseTopic: string | null;
  disabled: boolean;
}

export const LIMITS = {
  urlLength: 2048,
  nameLength: 100,
  entries: 30,
  headerValue: 2048,
  templateBytes: 16 * 1024,
} as const;

/** Headers the cloud writes itself: a template may not replace them. */
const RESERVED_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'upgrade', 'te', 'trailer', 'keep-alive', 'webhook-id', 'webhook-timestamp', 'webhook-signature', 'authorization-signature']);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,100}$/;

const bad = (message: string) => new DomainError('invalid_request', message);

/** A form's "true"/"false" and JSON's booleans; anything else is refused by name. */
function flag(raw: unknown, field: string, fallback: boolean): boolean {
  if (raw === undefined || raw === null || raw === '') return fallback;
  if (raw === true || raw === 'true') return true;
  if (raw === false || raw === 'false') return false;
  throw bad(`${field} must be true or false`);
}

function text(raw: unknown, field: string, max: number): string | null {
  if (raw === undefined || raw === null || raw === '') return null;
  if (typeof raw !== 'string') throw bad(`${field} must be a text`);
  if (Buffer.byteLength(raw) > max) throw bad(`${field} is at most ${max} bytes`);
  return raw;
}

function stringMap(raw: unknown, field: string, check?: (key: string) => void): Record<string, string> | null {
  if (raw === undefined || raw === null) return null;
  if (typeof raw !== 'object' || Array.isArray(raw)) throw bad(`${field} must be an object of texts`);
  const entries = Object.entries(raw as Record<string, unknown>);
  if (entries.length > LIMITS.entries) throw bad(`${field} has at most ${LIMITS.entries} entries`);
  const out: Record<string, string> = {};
  for (const [k, v] of entries) {
    check?.(k);
    if (typeof v !== 'string' && typeof v !== 'number' && typeof v !== 'boolean') throw bad(`${field}.${k} must be a text`);
    const value = String(v);
    if (Buffer.byteLength(value) > LIMITS.headerValue) throw bad(`${field}.${k} is at most ${LIMITS.headerValue} bytes`);
    out[k] = value;
  }
  return out;
}

/** The host of a URL template: it must be plain text, so that where it sends can be checked before it sends. */
export function checkUrl(raw: unknown): string {
  if (typeof raw !== 'string' || raw === '') throw bad('url is required: the address the webhook sends to');
  if (raw.length > LIMITS.urlLength) throw bad(`url is at most ${LIMITS.urlLength} characters`);
  const m = /^(https?):\/\/([^/?#]*)/i.exec(raw);
  if (!m) throw bad('url must start with http:// or https://');
  if ((m[2] ?? '').includes('{{')) throw bad('url: the host may not be a template (the path and query may)');
  let parsed: URL;
  try {
    // Tags in the path are replaced by a placeholder to check what is around them.
    parsed = new URL(raw.replace(/\{\{\{?[^}]*\}?\}\}/g, 'x'));
  } catch {
    throw bad('url is not a valid address');
  }
  if (parsed.username || parsed.password) throw bad('url: put credentials in auth, not in the address');
  return raw;
}

function body(input: Record<string, unknown>): BodyTemplate {
  const given = (['json', 'form', 'body'] as const).filter((k) => input[k] !== undefined && input[k] !== null && input[k] !== '');
  if (given.length > 1) throw bad(`give one of json, form and body, not ${given.join(' and ')}`);
  const kind = given[0];
  if (kind === undefined) return { kind: 'default' };
  const value = input[kind];
  const size = Buffer.byteLength(typeof value === 'string' ? value : JSON.stringify(value));
  if (size > LIMITS.templateBytes) throw bad(`${kind} is at most ${LIMITS.templateBytes} bytes`);
  if (kind === 'json') {
    if (typeof value !== 'string' && (typeof value !== 'object' || value === null)) throw bad('json must be an object (its texts are templates) or a template text');
    return { kind: 'json', template: value };
  }
  if (kind === 'form') return { kind: 'form', template: stringMap(value, 'form') ?? {} };
  if (typeof value !== 'string') throw bad('body must be a template text');
  return { kind: 'body', template: value };
}

function headers(raw: unknown): Record<string, string> | null {
  return stringMap(raw, 'headers', (name) => {
    if (!TOKEN.test(name)) throw bad(`headers: "${name.slice(0, 40)}" is not a valid header name`);
    if (RESERVED_HEADERS.has(name.toLowerCase())) throw bad(`headers: ${name} is written by the cloud and cannot be set`);
  });
}

function auth(raw: unknown, previous: WebhookSpec['auth']): WebhookSpec['auth'] {
  if (raw === undefined || raw === null || raw === '') return null;
  if (typeof raw !== 'object' || Array.isArray(raw)) throw bad('auth must be {username, password}');
  const a = raw as Record<string, unknown>;
  const username = text(a.username, 'auth.username', 256);
  if (username === null) throw bad('auth.username is required');
  if (username.includes(':')) throw bad('auth.username may not contain ":" (HTTP Basic)');
  // The password is never shown again: an edit that keeps the user name may leave it out.
  const password = a.password === undefined && previous?.username === username ? previous.password : text(a.password, 'auth.password', 256) ?? '';
  return { username, password };
}

const DEVICE_ID = /^[0-9a-f]{24}$/;

/**
 * Checks a create (or, with `previous`, an edit: absent fields keep their value) and answers the
 * webhook. `scope` says whose it is: a product's webhook takes no device (Particle's product
 * webhooks fire for the whole fleet).
 */
export function parseWebhook(input: Record<string, unknown>, scope: 'user' | 'product', previous?: WebhookSpec): WebhookSpec {
  const merged: Record<string, unknown> = previous ? { ...specFields(previous), ...input } : input;
  const event = merged.event ?? merged.eventName;
  if (!isEventName(event)) throw bad('event is required: the prefix of the event names that trigger the webhook (1-64 characters)');
  const requestType = String(merged.requestType ?? merged.request_type ?? 'POST').toUpperCase();
  if (!REQUEST_TYPES.includes(requestType as RequestType)) throw bad(`requestType must be one of ${REQUEST_TYPES.join(', ')}`);
  const rawDevice = merged.deviceID ?? merged.deviceid ?? merged.deviceId;
  let deviceId: string | null = null;
  if (rawDevice !== undefined && rawDevice !== null && rawDevice !== '' && rawDevice !== 'any' && rawDevice !== 'mine') {
    if (scope === 'product') throw bad('deviceID: a product\'s webhook fires for the whole fleet; it takes no device');
    if (typeof rawDevice !== 'string' || !DEVICE_ID.test(rawDevice.toLowerCase())) throw bad('deviceID must be a device id (24 hex characters)');
    deviceId = rawDevice.toLowerCase();
  }
  return {
    event,
    url: checkUrl(merged.url),
    requestType: requestType as RequestType,
    name: text(merged.name, 'name', LIMITS.nameLength),
    deviceId,
    body: body(merged),
    query: stringMap(merged.query, 'query'),
    headers: headers(merged.headers),
    auth: auth(merged.auth, previous?.auth ?? null),
    noDefaults: flag(merged.noDefaults, 'noDefaults', false),
    rejectUnauthorized: flag(merged.rejectUnauthorized, 'rejectUnauthorized', true),
    responseTemplate: text(merged.responseTemplate, 'responseTemplate', LIMITS.templateBytes),
    responseTopic: text(merged.responseTopic, 'responseTopic', 256),
    errorResponseTopic: text(merged.errorResponseTopic, 'errorResponseTopic', 256),
    disabled: flag(merged.disabled, 'disabled', false),
  };
}

/** The webhook's fields as Particle names them (what GET answers, less the auth password). */
export function specFields(s: WebhookSpec): Record<string, unknown> {
  const out: Record<string, unknown> = { event: s.event, url: s.url, requestType: s.requestType, noDefaults: s.noDefaults, rejectUnauthorized: s.rejectUnauthorized, disabled: s.disabled };
  if (s.name !== null) out.name = s.name;
  if (s.deviceId !== null) out.deviceID = s.deviceId;
  if (s.body.kind !== 'default') out[s.body.kind] = s.body.template;
  if (s.query) out.query = s.query;
  if (s.headers) out.headers = s.headers;
  if (s.auth) out.auth = { username: s.auth.username, password: s.auth.password };
  if (s.responseTemplate !== null) out.responseTemplate = s.responseTemplate;
  if (s.responseTopic !== null) out.responseTopic = s.responseTopic;
  if (s.errorResponseTopic !== null) out.errorResponseTopic = s.errorResponseTopic;
  return out;
}

/** Whether an event triggers the webhook: its name starts with the prefix (case-sensitive), from the device if one is set. */
export function triggers(s: Pick<WebhookSpec, 'event' | 'deviceId' | 'disabled'>, event: { name: string; coreid: string }): boolean {
  return !s.disabled && event.name.startsWith(s.event) && (s.deviceId === null || s.deviceId === event.coreid);
}
