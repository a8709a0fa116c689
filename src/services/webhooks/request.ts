import type { WebhookSpec } from './spec.js';
import { renderDeep, templateRenderer, type EventContext } from './templates.js';

/** The request a delivery makes, before signing (docs/webhooks.md, "What is sent"). */
export interface OutgoingRequest {
  method: WebhookSpec['requestType'];
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** Particle's webhook client names itself so; receivers written for Particle look for it. */
export const USER_AGENT = 'ParticleBot/1.1';

/**
 * Particle's default fields: the event, its data, the device and the time; a product's webhook
 * adds the device's owner and product firmware version, and the product.
 */
export function defaultFields(e: EventContext): Record<string, string> {
  const fields: Record<string, string> = { event: e.name, data: e.data ?? '', published_at: e.published_at, coreid: e.coreid };
  if (e.productId !== null) {
    fields.userid = e.ownerName ?? '';
    fields.fw_version = e.firmwareVersion === null ? '' : String(e.firmwareVersion);
    fields.productID = String(e.productId);
  }
  return fields;
}

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

/**
 * The request of a webhook for an event: templates rendered, Particle's default fields where
 * Particle puts them (the query string of a GET or DELETE without a template, the form of a POST
 * or PUT, merged into a `json` or `form` template) unless `noDefaults`, and HTTP Basic for `auth`.
 * A template that cannot be rendered throws: the delivery fails with that reason.
 */
export function buildRequest(spec: WebhookSpec, e: EventContext): OutgoingRequest {
  const render = templateRenderer(e);
  const defaults = spec.noDefaults ? {} : defaultFields(e);
  const url = new URL(render(spec.url));
  for (const [k, v] of Object.entries(spec.query ?? {})) url.searchParams.append(k, render(v));
  const headers: Record<string, string> = { 'user-agent': USER_AGENT };
  let body = '';
  const b = spec.body;
  if (b.kind === 'default') {
    if (spec.requestType === 'GET' || spec.requestType === 'DELETE') {
      for (const [k, v] of Object.entries(defaults)) url.searchParams.append(k, v);
    } else if (!spec.noDefaults) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = form(defaults);
    }
  } else if (b.kind === 'form') {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = form({ ...defaults, ...Object.fromEntries(Object.entries(b.template).map(([k, v]) => [k, render(v)])) });
  } else if (b.kind === 'json') {
    headers['content-type'] = 'application/json';
    if (typeof b.template === 'string') {
      body = render(b.template);
    } else {
      const rendered = renderDeep(b.template, render);
      body = JSON.stringify(Array.isArray(rendered) ? rendered : { ...defaults, ...(rendered as Record<string, unknown>) });
    }
  } else {
    body = render(b.template);
  }
  for (const [k, v] of Object.entries(spec.headers ?? {})) headers[k.toLowerCase()] = render(v);
  if (spec.auth) headers.authorization = `Basic ${Buffer.from(`${spec.auth.username}:${spec.auth.password}`).toString('base64')}`;
  return { method: spec.requestType, url: url.toString(), headers, body };
}
