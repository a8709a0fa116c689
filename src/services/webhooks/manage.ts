import { DomainError } from '../../domain/errors.js';
import type { Clock } from '../../platform/clock.js';
import type { Secrets } from '../../platform/secrets.js';
import type { DeliveryRecord, NewDelivery, WebhookRecord, WebhookScope, WebhooksRepository } from '../../repositories/webhooks.repository.js';
import type { AuditService } from '../audit.service.js';
import { checkHost, hostOf, type DestinationCheck } from './destinations.js';
import { newSigningSecret } from './signing.js';
import { parseWebhook, type WebhookSpec } from './spec.js';
import { templateProblem, templatesIn } from './templates.js';

/** Webhooks one user or one product may have. */
export const MAX_WEBHOOKS_PER_SCOPE = 100;
/** How long the secret a rotation replaced still signs. */
export const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;
/** The delivery log's reach back. */
export const LOG_DAYS = 30;
/** Deliveries one replay makes at most. */
export const MAX_REPLAY = 10_000;

export interface Actor { account: { kind: 'user' | 'product' | 'customer'; id: string }; ip: string | null }

/**
 * Creating, changing and removing webhooks, their secrets, their delivery log, resending and
 * replaying (docs/webhooks.md). Routes decide whose webhooks a caller reaches (the scope); this
 * checks what is written.
 */
export function createWebhookManagement(deps: {
  repo: WebhooksRepository;
  clock: Clock;
  secrets: Pick<Secrets, 'token'>;
  audit: AuditService;
  check: DestinationCheck;
  /** Every node reads the webhook again (the index). */
  changed(id: string): Promise<void>;
  /** New pending deliveries were written: the worker looks for them now. */
  pending(): void;
  /** Where DNS answers from (tests); the system's resolver otherwise. */
  resolve?: Parameters<typeof checkHost>[2];
}) {
  const { repo, clock } = deps;

  async function checked(spec: WebhookSpec): Promise<WebhookSpec> {
    const templates: Array<[string, string]> = [
      ['url', spec.url],
      ...Object.entries(spec.query ?? {}).map(([k, v]) => [`query.${k}`, v] as [string, string]),
      ...Object.entries(spec.headers ?? {}).map(([k, v]) => [`headers.${k}`, v] as [string, string]),
      ...(spec.body.kind === 'default' ? [] : templatesIn(spec.body.template).map((t) => [spec.body.kind, t] as [string, string])),
      ...(['responseTemplate', 'responseTopic', 'errorResponseTopic'] as const).flatMap((k) => (spec[k] === null ? [] : [[k, spec[k] as string] as [string, string]])),
    ];
    for (const [field, t] of templates) {
      const problem = templateProblem(t);
      if (problem) throw new DomainError('invalid_request', `${field} is not a valid template: ${problem}`);
    }
    const refused = await checkHost(hostOf(spec.url), deps.check, deps.resolve);
    if (refused) throw new DomainError('invalid_request', `url: ${refused}`);
    return spec;
  }

  const audit = (actor: Actor, type: 'webhook.created' | 'webhook.updated' | 'webhook.deleted' | 'webhook.secret_rotated', w: WebhookRecord) =>
    deps.audit.record({ account: actor.account, type, ip: actor.ip, details: { webhook_id: w.id, event: w.spec.event, url_host: hostOf(w.spec.url) } });

  return {
    async create(scope: WebhookScope, input: Record<string, unknown>, actor: Actor): Promise<{ webhook: WebhookRecord; secret: string }> {
      const spec = await checked(parseWebhook(input, scope.kind));
      if (await repo.countFor(scope) >= MAX_WEBHOOKS_PER_SCOPE) throw new DomainError('invalid_request', `at most ${MAX_WEBHOOKS_PER_SCOPE} webhooks here; delete one first`);
      const now = clock.now();
      const secret = newSigningSecret();
      const webhook: WebhookRecord = {
        id: deps.secrets.token(12, 'hex'), scope, spec, secret, previousSecret: null, previousSecretUntil: null,
        disabledReason: null, failingSince: null, createdAt: now, updatedAt: now,
      };
      await repo.insert(webhook);
      await deps.changed(webhook.id);
      await audit(actor, 'webhook.created', webhook);
      return { webhook, secret };
    },

    /** An edit: the fields given replace theirs, the others stay. `disabled: false` also lifts the cloud's own disabling. */
    async update(w: WebhookRecord, input: Record<string, unknown>, actor: Actor): Promise<WebhookRecord> {
      const spec = await checked(parseWebhook(input, w.scope.kind, w.spec));
      const enable = input.disabled === false || input.disabled === 'false';
      const updated = await repo.update(w.id, { spec, updatedAt: clock.now(), ...(enable ? { disabledReason: null, failingSince: null } : {}) });
      if (!updated) throw new DomainError('not_found', 'No such webhook');
      await deps.changed(w.id);
      await audit(actor, 'webhook.updated', updated);
      if (enable) deps.pending();
      return updated;
    },

    async remove(w: WebhookRecord, actor: Actor): Promise<void> {
      if (!await repo.remove(w.id)) throw new DomainError('not_found', 'No such webhook');
      await deps.changed(w.id);
      await audit(actor, 'webhook.deleted', w);
    },

    /** A new secret, shown once; the one it replaces still signs for 24 hours. */
    async rotateSecret(w: WebhookRecord, actor: Actor): Promise<{ webhook: WebhookRecord; secret: string }> {
      const now = clock.now();
      const secret = newSigningSecret();
      const updated = await repo.update(w.id, { secret, previousSecret: w.secret, previousSecretUntil: new Date(now.getTime() + ROTATION_OVERLAP_MS), updatedAt: now });
      if (!updated) throw new DomainError('not_found', 'No such webhook');
      await deps.changed(w.id);
      await audit(actor, 'webhook.secret_rotated', updated);
      return { webhook: updated, secret };
    },

    find: (id: string) => repo.find(id),
    list: (scope: WebhookScope) => repo.list(scope),
    log: (w: WebhookRecord, options: { limit: number; before?: Date | { at: Date; id: string }; status?: DeliveryRecord['status'] }) => repo.deliveries(w.id, options),
    findDelivery: (id: string) => repo.findDelivery(id),
    counts: (w: WebhookRecord) => repo.counts(w.id, new Date(clock.nowMs() - LOG_DAYS * 86400_000)),

    /** Sends one delivery again, as a new delivery (the log keeps the first as it was). */
    async resend(w: WebhookRecord, deliveryId: string): Promise<string> {
      const d = await repo.findDelivery(deliveryId);
      if (!d || d.webhookId !== w.id) throw new DomainError('not_found', 'No such delivery of this webhook');
      const now = clock.now();
      const id = newDeliveryId(deps.secrets, now.getTime());
      await insertOfWebhook(repo, [{ id, webhookId: w.id, event: d.event, createdAt: now, lease: null, resendOf: d.id }]);
      deps.pending();
      return id;
    },

    /** Sends again every delivery made in [from, to) (an outage on the receiver's side), oldest first. */
    async replay(w: WebhookRecord, from: Date, to: Date): Promise<number> {
      if (!(from < to)) throw new DomainError('invalid_request', 'from must be before to');
      const earliest = clock.nowMs() - LOG_DAYS * 86400_000;
      if (to.getTime() < earliest) throw new DomainError('invalid_request', `the log keeps ${LOG_DAYS} days; nothing older can be replayed`);
      const found = await repo.deliveriesBetween(w.id, from, to, MAX_REPLAY + 1);
      if (found.length > MAX_REPLAY) throw new DomainError('invalid_request', `more than ${MAX_REPLAY} deliveries in that range; replay a shorter one`);
      const now = clock.now();
      const written = await insertOfWebhook(repo, found.map((d) => ({ id: newDeliveryId(deps.secrets, now.getTime()), webhookId: w.id, event: d.event, createdAt: now, lease: null, resendOf: d.id })));
      if (written > 0) deps.pending();
      return written;
    },
  };
}

export type WebhookManagement = ReturnType<typeof createWebhookManagement>;

/**
 * Writes deliveries the API asked for (a test event, a resend, a replay): every one, or 404 when
 * their webhook was deleted meanwhile (the insert leaves such deliveries out).
 */
export async function insertOfWebhook(repo: Pick<WebhooksRepository, 'insertDeliveries'>, items: NewDelivery[]): Promise<number> {
  const written = await repo.insertDeliveries(items);
  if (written < items.length) throw new DomainError('not_found', 'No such webhook');
  return written;
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * A delivery's id: the Standard Webhooks `webhook-id`, unique and the same on every attempt.
 * It starts with its creation time (milliseconds, 10 characters of Crockford's base32, as a ULID
 * does; they sort as the times do, in any collation, until the year 10889), then 16 random
 * bytes. Ids made in time order go into the end of the store's indexes on them (the deliveries'
 * key, the attempts'), where random ones went anywhere in them: a random page touched at every
 * write, which cost the store up to a third of an insert's time under a flood (docs/benchmarks.md,
 * "Webhooks").
 */
export function newDeliveryId(secrets: Pick<Secrets, 'token'>, atMs: number): string {
  let time = '';
  for (let t = Math.max(0, Math.floor(atMs)), i = 0; i < 10; i++, t = Math.floor(t / 32)) time = CROCKFORD.charAt(t % 32) + time;
  return `msg_${time}${secrets.token(16, 'base64url')}`;
}
