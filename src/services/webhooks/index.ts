import type { Bus, CloudEvent } from '../../bus/bus.js';
import type { Clock } from '../../platform/clock.js';
import type { Log } from '../../platform/log.js';
import type { Secrets } from '../../platform/secrets.js';
import type { DeliveryRecord, NewDelivery, WebhookRecord, WebhookScope, WebhooksRepository } from '../../repositories/webhooks.repository.js';
import { createBatcher } from '../../storage/batcher.js';
import type { Db, Tx } from '../../storage/db.js';
import type { AuditService } from '../audit.service.js';
import { destinationCheck } from './destinations.js';
import { createHosts, HOST_DEFAULTS } from './hosts.js';
import { createWebhookManagement, insertOfWebhook, newDeliveryId } from './manage.js';
import { createWebhookIndex } from './matching.js';
import { disabledEvent } from './responses.js';
import { DISABLE_AFTER_FAILING_MS } from './schedule.js';
import { createSender } from './sender.js';
import type { EventContext } from './templates.js';
import { createWorker, type DeliveryOutcome } from './worker.js';

export interface WebhookSettings {
  /** WEBHOOK_ALLOW_PRIVATE, normalised. */
  allowPrivate: readonly string[];
  leaseSeconds: number;
  concurrency: number;
  hostConcurrency: number;
  timeoutSeconds: number;
  pollMs?: number;
}

export interface WebhookMetrics {
  attempt(outcome: string, seconds: number | null): void;
}

/**
 * A node holds at most this many deliveries per slot of a host in memory, waiting to be sent
 * (1,024 at the default 32 slots, about a megabyte): enough to keep the host's slots busy while a
 * poll runs. Beyond it, when events come faster than the host takes them, they wait in the store.
 */
const HOLD_PER_SLOT = 32;

/** The bus notice that makes every node reload its webhooks. */
const CHANGED = 'webhooks.changed';

/**
 * Webhooks (docs/webhooks.md; docs/architecture.md, "Webhooks"): the index of every webhook for
 * matching events, the durable queue of deliveries written before an event is acknowledged, the
 * worker that sends them, and their management.
 */
export function createWebhooks(deps: {
  db: Db;
  repo: WebhooksRepository;
  bus: Bus;
  clock: Clock;
  secrets: Pick<Secrets, 'token'>;
  audit: AuditService;
  log: () => Log;
  settings: WebhookSettings;
  /** The template context of an event: its owner's name and the device's firmware version. */
  describe(event: DeliveryRecord['event']): Promise<Pick<EventContext, 'ownerName' | 'firmwareVersion'>>;
  metrics?: WebhookMetrics;
}) {
  const { repo, clock, bus } = deps;
  const index = createWebhookIndex();
  const check = destinationCheck(deps.settings.allowPrivate);
  const sender = createSender({ check, connectionsPerHost: deps.settings.hostConcurrency, timeoutMs: deps.settings.timeoutSeconds * 1000 });
  const hosts = createHosts({ ...HOST_DEFAULTS, concurrency: deps.settings.hostConcurrency });
  const leaseMs = deps.settings.leaseSeconds * 1000;
  let loaded: Promise<void> | undefined;

  const reload = async () => { index.replace(await repo.all()); };
  /**
   * Reads again the webhooks a notice names, each alone: a change costs every node a row, not the
   * whole table. A read that a newer one for the same webhook overtook is dropped.
   */
  const reads = new Map<string, number>();
  let readCount = 0;
  const refresh = async (ids: string[]) => {
    await Promise.all(ids.map(async (id) => {
      const mine = ++readCount;
      reads.set(id, mine);
      try {
        const w = await repo.find(id);
        if (reads.get(id) !== mine) return;
        if (w) index.put(w);
        else index.remove(id);
      } finally {
        if (reads.get(id) === mine) reads.delete(id);
      }
    }));
  };
  const noted = (work: Promise<void>) => {
    loaded = work.catch((err) => deps.log().warn({ err }, 'webhooks could not be reloaded'));
  };
  /** What this node changed, for the other nodes: it has read it already (`changed`). */
  const tell = (ids: string[]) => bus.notify(CHANGED, { ids, from: bus.nodeId });
  // A notice names the webhooks that changed; one without names (a node of an earlier version)
  // reloads them all, as does a bus that was away (the notices sent meanwhile are lost). The
  // bus brings a node its own notices too: those it has acted on already.
  const unlisten = bus.listen(CHANGED, (payload) => {
    const notice = payload as { ids?: unknown; from?: unknown } | null;
    if (notice?.from === bus.nodeId) return;
    const ids = notice?.ids;
    noted(Array.isArray(ids) && ids.every((id) => typeof id === 'string') ? refresh(ids) : reload());
  });
  const unwatch = bus.whenBack(() => noted(reload()));
  /** This node's index takes the change at once; every other node's on the notice. */
  const changed = async (id: string) => {
    await refresh([id]);
    tell([id]);
  };

  const worker = createWorker({
    repo, index, sender, hosts, clock, log: deps.log, node: bus.nodeId, leaseMs,
    concurrency: deps.settings.concurrency, pollMs: deps.settings.pollMs ?? 1000,
    holdPerHost: deps.settings.hostConcurrency * HOLD_PER_SLOT,
    async context(d) {
      const more = await deps.describe(d.event);
      return { id: d.id, name: d.event.name, data: d.event.data, coreid: d.event.coreid, published_at: d.event.published_at, productId: d.event.productId, ...more };
    },
    publish: (e) => bus.publish(e),
    attempted: (o) => void attempted(o),
  });

  /**
   * When each webhook started failing, as this node last wrote or read it, and when. A failed
   * attempt writes the webhook's row once a minute at most: each one wrote it, thousands of
   * updates of one row in an outage, while the deliveries of every webhook waited for the pool
   * (docs/benchmarks.md, "Webhooks").
   */
  const failing = new Map<string, { since: number; readAt: number }>();
  const FAILING_READ_EVERY_MS = 60_000;
  /** Webhooks whose mark this node is clearing: their index record says failing until reloaded. */
  const clearing = new Set<string>();
  /** Every node's index learns a webhook failing or failing no more: its successes then clear the mark. */
  const indexChanged = (id: string) => noted(changed(id));

  /** A webhook failing for DISABLE_AFTER_FAILING_MS, or answered 410 Gone, is disabled and says why. */
  async function attempted(o: DeliveryOutcome): Promise<void> {
    deps.metrics?.attempt(o.outcome, o.result ? o.result.latencyMs / 1000 : null);
    const w = o.webhook;
    try {
      if (o.outcome === 'delivered') {
        const known = failing.delete(w.id);
        if ((known || w.failingSince) && !clearing.has(w.id)) {
          clearing.add(w.id);
          try {
            if (await repo.clearFailing([w.id])) indexChanged(w.id);
            // What failed during the outage goes now rather than at its step of the schedule
            // (minutes, hours); the host's own bound keeps that from flooding the receiver.
            if (await repo.dueNow(w.id, clock.now()) > 0) worker.poke();
          } finally {
            clearing.delete(w.id);
          }
        }
        return;
      }
      if (o.outcome !== 'failed') return;
      const gone = o.result?.status === 410;
      let since: number;
      const known = failing.get(w.id);
      if (gone) {
        if (w.disabledReason) return;
        since = 0;
      } else if (known && clock.nowMs() - known.readAt < FAILING_READ_EVERY_MS) {
        since = known.since;
      } else {
        const marked = await repo.markFailing(w.id, clock.now());
        if (!marked || marked.disabledReason) return;
        since = marked.failingSince?.getTime() ?? clock.nowMs();
        failing.set(w.id, { since, readAt: clock.nowMs() });
        // The index's record did not know: every node learns it, so that a success anywhere clears it.
        if (!w.failingSince) indexChanged(w.id);
      }
      if (!gone && clock.nowMs() - since < DISABLE_AFTER_FAILING_MS) return;
      failing.delete(w.id);
      const reason = gone ? 'the receiver answered 410 Gone' : `every delivery failed for ${Math.round(DISABLE_AFTER_FAILING_MS / 86400_000)} days`;
      await disable(w, reason);
    } catch (err) {
      deps.log().warn({ err, webhook: w.id }, 'a webhook\'s failures could not be recorded');
    }
  }

  async function disable(w: WebhookRecord, reason: string): Promise<void> {
    await repo.update(w.id, { disabledReason: reason, updatedAt: clock.now() });
    indexChanged(w.id);
    const account = w.scope.kind === 'product' ? { kind: 'product' as const, id: String(w.scope.productId) } : { kind: w.scope.owner.kind, id: w.scope.owner.id };
    await deps.audit.record({ account, type: 'webhook.disabled', ip: null, details: { webhook_id: w.id, reason } });
    bus.publish(disabledEvent(w, reason, clock.now().toISOString()));
    deps.log().warn({ webhook: w.id, reason }, 'webhook disabled');
  }

  /** Many events' deliveries in one statement: a burst of publishes costs a few writes. */
  const writes = createBatcher<NewDelivery[]>(async (batches) => { await repo.insertDeliveries(batches.flat()); }, { maxBatch: 1000 });

  const manage = createWebhookManagement({
    repo, clock, secrets: deps.secrets, audit: deps.audit, check,
    changed,
    pending: () => worker.poke(),
  });

  return {
    manage,
    index,
    /**
     * Writes the deliveries an event makes; resolves once they are stored, so that the caller
     * acknowledges the event after (the device's PUBACK, the API's answer). Null when no webhook
     * takes the event: nothing to wait for.
     */
    enqueue(event: CloudEvent): Promise<void> | null {
      const hooks = index.match(event);
      if (hooks.length === 0) return null;
      const now = clock.now();
      const until = new Date(now.getTime() + leaseMs);
      // Held in memory and sent at once, under this node's lease; or, when its host has more
      // waiting than the node holds (`worker.holds`), written for a later poll.
      const items: NewDelivery[] = hooks.map((w) => ({
        id: newDeliveryId(deps.secrets, now.getTime()), webhookId: w.id, createdAt: now, lease: worker.holds(w) ? { node: bus.nodeId, until } : null,
        event: { name: event.name, data: event.data, coreid: event.coreid, published_at: event.published_at, productId: event.productId, owner: event.owner },
      }));
      const written = (ok: boolean): NewDelivery[] => {
        const held: NewDelivery[] = [];
        items.forEach((item, i) => {
          const w = hooks[i] as WebhookRecord;
          if (!item.lease) {
            if (ok) worker.spilled(w);
            return;
          }
          worker.written(w);
          held.push(item);
        });
        return held;
      };
      return writes.add(items).then(() => {
        const held = written(true);
        if (held.length > 0) worker.take(held.map((i) => ({ id: i.id, webhookId: i.webhookId, event: i.event, status: 'sending', attempts: 0, skipped: 0, nextAt: now, createdAt: now, finishedAt: null, resendOf: null })), until.getTime());
      }, (err: unknown) => {
        written(false);
        throw err;
      });
    },
    /** Deletes an account's or a product's webhooks and their delivery log, within its deletion (`forget` follows its commit). */
    removeAll: (scope: WebhookScope, tx: Tx): Promise<void> => repo.removeAll(scope, tx),
    /**
     * The webhooks of a deleted product or account (`removeAll`):
     * every node reads them again and finds them gone.
     */
    forget(scope: WebhookScope): void {
      const ids = index.of(scope);
      for (const id of ids) index.remove(id);
      if (ids.length > 0) tell(ids);
    },
    /** A test delivery of a made-up event to one webhook (the console's "send a test event"). */
    async test(w: WebhookRecord, data: string | null): Promise<string> {
      const now = clock.now();
      const id = newDeliveryId(deps.secrets, now.getTime());
      const event = {
        name: w.spec.event, data, coreid: w.spec.deviceId ?? 'api', published_at: now.toISOString(),
        productId: w.scope.kind === 'product' ? w.scope.productId : null, owner: w.scope.kind === 'user' ? w.scope.owner : null,
      };
      await insertOfWebhook(repo, [{ id, webhookId: w.id, event, createdAt: now, lease: null }]);
      worker.poke();
      return id;
    },
    async start(): Promise<void> {
      await reload();
      worker.start();
    },
    /** Finishes the deliveries under way (a few seconds at most) and hands the rest back to the store. */
    async stop(): Promise<void> {
      unlisten();
      unwatch();
      await loaded;
      await worker.stop();
      await sender.close();
    },
    queue: () => repo.queue(clock.now()),
    purge: () => repo.purgeFinished(new Date(clock.nowMs() - 30 * 86400_000)),
  };
}

export type Webhooks = ReturnType<typeof createWebhooks>;
