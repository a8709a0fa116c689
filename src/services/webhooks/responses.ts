import type { CloudEvent } from '../../bus/bus.js';
import type { WebhookRecord } from '../../repositories/webhooks.repository.js';
import { INTERNAL_SOURCE } from './matching.js';
import { templateRenderer, type EventContext } from './templates.js';

/** Particle sends a webhook's answer back in parts of this many bytes. */
export const PART_BYTES = 512;

/** Splits text into parts of at most `bytes` UTF-8 bytes, never inside a character. */
export function parts(text: string, bytes = PART_BYTES): string[] {
  const out: string[] = [];
  let current = '';
  let size = 0;
  for (const ch of text) {
    const n = Buffer.byteLength(ch);
    if (size + n > bytes) {
      out.push(current);
      current = '';
      size = 0;
    }
    current += ch;
    size += n;
  }
  if (current !== '' || out.length === 0) out.push(current);
  return out;
}

function scoped(w: WebhookRecord): Pick<CloudEvent, 'owner' | 'productId'> {
  return w.scope.kind === 'product' ? { owner: null, productId: w.scope.productId } : { owner: w.scope.owner, productId: null };
}

function event(w: WebhookRecord, name: string, data: string | null, at: string): CloudEvent {
  return { name, data, ttl: 60, published_at: at, coreid: INTERNAL_SOURCE, private: true, ...scoped(w) };
}

/** Where Particle sends a webhook's answer when the webhook names no topic. */
function defaultResponseTopic(w: WebhookRecord): string {
  return w.scope.kind === 'product' ? '{{PARTICLE_DEVICE_ID}}/hook-response/{{PARTICLE_EVENT_NAME}}' : 'hook-response/{{PARTICLE_EVENT_NAME}}';
}

/**
 * The events a delivery's attempt publishes, as Particle's (docs/webhooks.md, "What comes back"):
 * `hook-sent/<event>` once the request went, then the answer through `responseTemplate` on
 * `responseTopic` in numbered parts of 512 bytes, or the failure on `errorResponseTopic`
 * (`hook-error/<event>`), also in parts. They are in the webhook's scope (the owner's or the
 * product's stream, and devices that subscribed) and never trigger a webhook.
 */
export function responseEvents(w: WebhookRecord, e: EventContext, attempt: { sent: boolean; ok: boolean; status: number | null; body: string; error: string | null }, at: string): CloudEvent[] {
  const render = templateRenderer(e);
  const out: CloudEvent[] = [];
  if (attempt.sent) out.push(event(w, `hook-sent/${e.name}`, null, at));
  let topic: string;
  let text: string;
  if (attempt.ok) {
    text = w.spec.responseTemplate === null ? attempt.body : render(w.spec.responseTemplate, answerVariables(attempt.body));
    if (text === '') return out;
    topic = render(w.spec.responseTopic ?? defaultResponseTopic(w));
  } else {
    topic = render(w.spec.errorResponseTopic ?? 'hook-error/{{PARTICLE_EVENT_NAME}}');
    text = attempt.error ?? (attempt.body === '' ? `HTTP ${attempt.status}` : attempt.body);
  }
  parts(text).forEach((part, n) => out.push(event(w, `${topic}/${n}`, part, at)));
  return out;
}

/** A JSON answer's keys, for the response template. */
function answerVariables(body: string): Record<string, unknown> {
  try {
    const parsed = JSON.parse(body) as unknown;
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? parsed as Record<string, unknown> : {};
  } catch {
    return {};
  }
}

/** Said in the webhook's scope when the cloud disables it. */
export function disabledEvent(w: WebhookRecord, reason: string, at: string): CloudEvent {
  return event(w, `hook-disabled/${w.spec.event}`, JSON.stringify({ webhook: w.id, reason }), at);
}
