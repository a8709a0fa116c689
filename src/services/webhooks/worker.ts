import type { CloudEvent } from '../../bus/bus.js';
import type { Clock } from '../../platform/clock.js';
import type { Log } from '../../platform/log.js';
import type { AttemptOutcome, DeliveryRecord, WebhookRecord, WebhooksRepository } from '../../repositories/webhooks.repository.js';
import { createBatcher } from '../../storage/batcher.js';
import type { Db } from '../../storage/db.js';
import { hostOf } from './destinations.js';
import type { Hosts } from './hosts.js';
import type { WebhookIndex } from './matching.js';
import { buildRequest, type OutgoingRequest } from './request.js';
import { responseEvents } from './responses.js';
import { MAX_ATTEMPTS, nextDelay, retryAfter } from './schedule.js';
import type { AttemptResult, Sender } from './sender.js';
import { signatureHeader } from './signing.js';
import type { EventContext } from './templates.js';

/** What the log keeps of an answer. */
export const ANSWER_EXCERPT_BYTES = 1024;

export interface DeliveryOutcome { delivery: DeliveryRecord; webhook: WebhookRecord; result: AttemptResult | null; outcome: AttemptOutcome['attempt']['outcome']; final: boolean }

export interface WorkerDeps {
  db: Db;
  repo: WebhooksRepository;
  index: WebhookIndex;
  sender: Sender;
  hosts: Hosts;
  clock: Clock;
  log: () => Log;
  node: string;
  /** How long a node holds a delivery it took. */
  leaseMs: number;
  /** Deliveries in flight on this node at most. */
  concurrency: number;
  /** How often the store is asked for due deliveries. */
  pollMs: number;
  /** The template context of a delivery's event (its owner's name, its firmware version). */
  context(d: DeliveryRecord): Promise<EventContext>;
  publish(e: CloudEvent): void;
  /** Called after each attempt is recorded (failing webhooks, metrics). */
  attempted(o: DeliveryOutcome): void;
}

const excerpt = (text: string) => (Buffer.byteLength(text) <= ANSWER_EXCERPT_BYTES ? text : `${Buffer.from(text).subarray(0, ANSWER_EXCERPT_BYTES).toString('utf8')}…`);

/**
 * Sends the deliveries this node holds (docs/architecture.md, "Webhooks"): those it wrote itself
 * (it takes them at once) and those it takes from the store when due, a retry or a delivery whose
 * node went away (`FOR UPDATE SKIP LOCKED`: each is sent by one node). Every attempt is recorded
 * with the delivery's next state in batched writes; the lease ends with it.
 */
export function createWorker(deps: WorkerDeps) {
  const { repo, clock } = deps;
  /** Held, not yet sent, with the end of their lease. */
  const ready: Array<{ d: DeliveryRecord; until: number }> = [];
  let inFlight = 0;
  let stopped = false;
  let polling = false;
  let timer: NodeJS.Timeout | undefined;
  const idle = new Set<() => void>();
  /** A delivery is sent only with this much of its lease left: its request (and time-out) ends before another node may take it. */
  const margin = Math.min(5000, deps.leaseMs / 4);

  const record = createBatcher<AttemptOutcome>((outcomes) => deps.db.transaction((tx) => repo.recordAttempts(outcomes, tx)), { maxBatch: 500 });

  function take(deliveries: DeliveryRecord[], until: number): void {
    for (const d of deliveries) ready.push({ d, until });
    pump();
  }

  function pump(): void {
    if (stopped) return;
    const now = clock.nowMs();
    for (let i = 0; i < ready.length && inFlight < deps.concurrency;) {
      const item = ready[i] as { d: DeliveryRecord; until: number };
      // A lease about to end is let go: another node (or this one's next poll) takes it again.
      if (item.until - now < margin) { ready.splice(i, 1); continue; }
      const webhook = deps.index.get(item.d.webhookId);
      if (!webhook) { ready.splice(i, 1); continue; } // deleted meanwhile: its deliveries went with it
      // Disabled meanwhile: let go; the delivery waits in the store until the webhook is enabled.
      if (webhook.disabledReason !== null || webhook.spec.disabled) { ready.splice(i, 1); continue; }
      const host = hostOf(webhook.spec.url);
      const sleeping = deps.hosts.sleepingUntil(host, now);
      if (sleeping) {
        ready.splice(i, 1);
        void skip(item.d, webhook, sleeping);
        continue;
      }
      if (!deps.hosts.hasRoom(host)) { i++; continue; }
      ready.splice(i, 1);
      inFlight += 1;
      deps.hosts.start(host);
      void deliver(item.d, webhook, host).finally(() => {
        inFlight -= 1;
        if (inFlight === 0 && ready.length === 0) for (const w of idle) w();
        pump();
      });
    }
  }

  function sign(webhook: WebhookRecord, d: DeliveryRecord, r: OutgoingRequest): OutgoingRequest {
    const now = clock.nowMs();
    const secrets = [webhook.secret];
    if (webhook.previousSecret && webhook.previousSecretUntil && webhook.previousSecretUntil.getTime() > now) secrets.push(webhook.previousSecret);
    const timestamp = Math.floor(now / 1000);
    return { ...r, headers: { ...r.headers, 'webhook-id': d.id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signatureHeader(secrets, d.id, timestamp, r.body) } };
  }

  async function deliver(d: DeliveryRecord, webhook: WebhookRecord, host: string): Promise<void> {
    let result: AttemptResult;
    let context: EventContext | undefined;
    try {
      context = await deps.context(d);
      const request = sign(webhook, d, buildRequest(webhook.spec, context));
      result = await deps.sender.send(request, webhook.spec.rejectUnauthorized);
    } catch (err) {
      // A template that does not render (or a context that cannot be read): a failed attempt, not a crash.
      result = { status: null, latencyMs: 0, body: '', retryAfter: undefined, error: `the request could not be made: ${(err as Error).message}`, refused: false };
    }
    const ok = result.status !== null && result.status >= 200 && result.status < 300;
    const sleeping = deps.hosts.finish(host, ok || result.refused, clock.nowMs());
    if (sleeping) deps.log().warn({ webhook: webhook.id, host }, 'webhook host answers mostly errors; deliveries to it wait a few seconds');
    await settle(d, webhook, result, ok ? 'delivered' : 'failed', 0);
    if (context) {
      const at = clock.now().toISOString();
      for (const e of responseEvents(webhook, context, { sent: result.status !== null, ok, status: result.status, body: result.body, error: result.error }, at)) deps.publish(e);
    }
  }

  /** Not sent: the host sleeps. Recorded, due again when it wakes, and said as Particle says it (`hook-error`). */
  async function skip(d: DeliveryRecord, webhook: WebhookRecord, until: number): Promise<void> {
    await settle(d, webhook, null, 'skipped', until);
    const context = await deps.context(d).catch(() => undefined);
    if (!context) return;
    const error = `Sleeping, too many errors from ${hostOf(webhook.spec.url)}; trying again at ${new Date(until).toISOString()}`;
    for (const e of responseEvents(webhook, context, { sent: false, ok: false, status: null, body: '', error }, clock.now().toISOString())) deps.publish(e);
  }

  /** Records an attempt and the delivery's next state: delivered, due again later, or failed for good. */
  async function settle(d: DeliveryRecord, webhook: WebhookRecord, result: AttemptResult | null, outcome: AttemptOutcome['attempt']['outcome'], wakeAt: number): Promise<void> {
    const now = clock.now();
    let state: AttemptOutcome['delivery'];
    let final = false;
    if (outcome === 'delivered') {
      state = { status: 'delivered', attempts: d.attempts + 1, skipped: d.skipped, nextAt: now, finishedAt: now };
      final = true;
    } else if (outcome === 'skipped') {
      state = { status: 'pending', attempts: d.attempts, skipped: d.skipped + 1, nextAt: new Date(wakeAt), finishedAt: null };
    } else {
      const attempts = d.attempts + 1;
      const gone = result?.status === 410;
      const delay = gone || attempts >= MAX_ATTEMPTS ? null : nextDelay(attempts, retryAfter(result?.retryAfter, now.getTime()));
      final = delay === null;
      state = final
        ? { status: 'failed', attempts, skipped: d.skipped, nextAt: now, finishedAt: now }
        : { status: 'pending', attempts, skipped: d.skipped, nextAt: new Date(now.getTime() + (delay as number)), finishedAt: null };
    }
    const attempt: AttemptOutcome['attempt'] = {
      deliveryId: d.id, webhookId: webhook.id, n: d.attempts + d.skipped + 1, at: now, outcome,
      status: result?.status ?? null, latencyMs: result?.latencyMs ?? 0,
      answer: result && result.body !== '' ? excerpt(result.body) : null,
      error: outcome === 'skipped' ? 'too many errors from this host lately; waiting a few seconds before trying it again' : result?.error ?? null,
    };
    try {
      await record.add({ attempt, delivery: state });
    } catch (err) {
      // Not recorded (store unreachable): the lease runs out and the delivery is sent again. A
      // repeat, which the receiver drops by its webhook-id, rather than a loss.
      deps.log().warn({ err, webhook: webhook.id, delivery: d.id }, 'a webhook attempt could not be recorded; it will be sent again');
      return;
    }
    deps.attempted({ delivery: { ...d, ...state }, webhook, result, outcome, final });
  }

  async function poll(): Promise<void> {
    if (stopped || polling) return;
    const room = deps.concurrency * 2 - inFlight - ready.length;
    if (room <= 0) return;
    polling = true;
    try {
      const now = clock.nowMs();
      const until = now + deps.leaseMs;
      const due = await repo.claimDue(deps.node, new Date(now), new Date(until), room);
      if (due.length > 0) take(due, until);
    } catch (err) {
      deps.log().debug({ err }, 'webhook deliveries could not be read; trying again');
    } finally {
      polling = false;
    }
  }

  return {
    /** Deliveries this node just wrote with its own lease: sent at once. */
    take,
    start(): void {
      const tick = () => {
        void poll().finally(() => { if (!stopped) timer = setTimeout(tick, deps.pollMs); });
      };
      timer = setTimeout(tick, 0);
      timer.unref?.();
    },
    /** Asks the store for due deliveries now (a resend, a webhook enabled again). */
    poke: () => void poll(),
    /** Waits (at most `ms`) for the deliveries under way, and hands back the ones not started. */
    async stop(ms = 5000): Promise<void> {
      stopped = true;
      if (timer) clearTimeout(timer);
      if (inFlight > 0) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, ms);
          idle.add(() => { clearTimeout(t); resolve(); });
        });
      }
      const left = ready.splice(0).map((r) => r.d.id);
      await repo.release(deps.node, left).catch(() => undefined);
    },
    stats: () => ({ inFlight, ready: ready.length }),
  };
}

export type Worker = ReturnType<typeof createWorker>;
