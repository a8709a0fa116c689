import { DomainError } from '../../domain/errors.js';
import { isEventName } from '../../domain/device-protocol.js';
import { buildRequest, type OutgoingRequest } from './request.js';
import { parseWebhook } from './spec.js';
import type { EventContext } from './templates.js';

/**
 * The request a webhook would make for a sample event, before it is saved (the console's preview):
 * the same parsing and templates as a delivery (spec.ts, request.ts), for a made-up event. No
 * signing secret is involved: the Standard Webhooks headers are shown with a placeholder
 * signature, and the HTTP Basic header of `auth` masked, so that a preview never shows a password.
 */
export interface SampleEvent { name?: string | null; data?: string | null; coreid?: string | null }

export type PreviewScope = { kind: 'user' } | { kind: 'product'; productId: number };

export interface Preview extends OutgoingRequest {
  /** The made-up event the templates saw. */
  event: { name: string; data: string | null; coreid: string; published_at: string };
}

/** The preview's own delivery id: the webhook-id header and PARTICLE_EVENT_ID. */
export const PREVIEW_ID = 'msg_preview';
/** A device id that is clearly no device's, for an event of a product's fleet or of any device. */
export const SAMPLE_DEVICE = '0123456789abcdef01234567';
export const MASKED = '••••••••';

const bad = (message: string) => new DomainError('invalid_request', message);

export function previewRequest(input: Record<string, unknown>, scope: PreviewScope, sample: SampleEvent, now: Date): Preview {
  const spec = parseWebhook(input, scope.kind);
  const name = sample.name ?? spec.event;
  if (!isEventName(name)) throw bad('sample.name must be an event name (1-64 characters)');
  const coreid = sample.coreid ?? spec.deviceId ?? SAMPLE_DEVICE;
  const context: EventContext = {
    id: PREVIEW_ID,
    name,
    data: sample.data ?? null,
    coreid,
    published_at: now.toISOString(),
    productId: scope.kind === 'product' ? scope.productId : null,
    // Made up as the rest: a product's device reports a firmware version and has an owner.
    firmwareVersion: scope.kind === 'product' ? 1 : null,
    ownerName: scope.kind === 'product' ? 'customer@example.com' : null,
  };
  let request: OutgoingRequest;
  try {
    request = buildRequest(spec, context);
  } catch (err) {
    // Mustache's reason for a template it cannot read, or an address the URL template renders badly.
    throw bad(`the request could not be made: ${(err as Error).message}`);
  }
  const headers: Record<string, string> = { ...request.headers };
  if (spec.auth) headers.authorization = `Basic ${MASKED}`;
  headers['webhook-id'] = PREVIEW_ID;
  headers['webhook-timestamp'] = String(Math.floor(now.getTime() / 1000));
  headers['webhook-signature'] = 'v1,<HMAC-SHA256 of the id, timestamp and body under the webhook\'s signing secret>';
  return { ...request, headers, event: { name, data: context.data, coreid, published_at: context.published_at } };
}
