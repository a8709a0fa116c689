import type { Delivery, Webhook, WebhookDetail } from '../api/webhooks.js';

/** Whether a webhook sends, and when the cloud stopped it, why (docs/webhooks.md, "Retries"). */
export function stateInWords(w: Pick<Webhook, 'disabled' | 'disabled_reason'>): string {
  if (w.disabled_reason) return `Disabled by the cloud: ${w.disabled_reason}`;
  return w.disabled ? 'Disabled' : 'Enabled';
}

/** The counts of the last 30 days: attempts by outcome, and deliveries waiting. */
export function countsInWords(c: WebhookDetail['counts']): string {
  return `${c.delivered} delivered, ${c.failed} failed, ${c.skipped} skipped, ${c.pending} pending`;
}

const STATUS: Record<Delivery['status'], string> = {
  pending: 'pending',
  sending: 'being sent',
  delivered: 'delivered',
  failed: 'failed for good',
};

export const deliveryStatus = (d: Delivery): string => STATUS[d.status];

export const when = (iso: string): string => new Date(iso).toLocaleString();

export const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;
