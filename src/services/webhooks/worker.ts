import type { CloudEvent } from '../../bus/bus.js';
import type { Clock } from '../../platform/clock.js';
import type { Log } from '../../platform/log.js';
import type { AttemptOutcome, DeliveryRecord, WebhookRecord, WebhooksRepository } from '../../repositories/webhooks.repository.js';
import { createBatcher } from '../../storage/batcher.js';
import { hostOf } from './destinations.js';
import type { Hosts } from './hosts.js';
import type { WebhookIndex } from './matching.js';
import { buildRequest, type OutgoingRequest } from './request.js';
import { responseEvents } from './responses.js';
import { MAX_ATTEMPTS, nextDelay, retryAfter } from './schedule.js';
import type { AttemptResult, Sender } from './sender.js';
import { signatureHeader } from './signing.js';
import { isoTime } from '../../platform/iso-time.js';
import type { EventContext } from './templates.js';

/** A delivery this node holds, with the end of its lease (ms). */
interface Held { d: DeliveryRecord; until: number }
/** A queue whose taken items are before `head`. */
interface Fifo { items: Held[]; head: number }

/** What the log keeps of an answer. */
export const ANSWER_EXCERPT_BYTES = 1024;

export interface DeliveryOutcome { delivery: DeliveryRecord; webhook: WebhookRecord; result: AttemptResult | null; outcome: AttemptOutcome['attempt']['outcome']; final: boolean }

export interface WorkerDeps {
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
  /**
   * Deliveries held in memory for one host, not yet sent, at most (`holds`): beyond it the node
   * writes them to the store for a later poll, so that its memory does not grow with a backlog.
   */
  holdPerHost: number;
  /** The template context of a delivery's event (its owner's name, its firmware version). */
  context(d: DeliveryRecord): Promise<EventContext>;
  publish(e: CloudEvent): void;
  /** Called after each attempt is recorded (failing webhooks, metrics). */
  attempted(o: DeliveryOutcome): void;
}

/**
 * What the log keeps of an answer: its first KB, and no NUL character, which a text column cannot
 * hold: one receiver's NUL made the write of a whole batch of attempts fail, every other
 * webhook's in it too, and so sent all of them again.
 */
const excerpt = (answer: string) => {
  const text = answer.includes('\u0000') ? answer.replaceAll('\u0000', '\uFFFD') : answer;
  return Buffer.byteLength(text) <= ANSWER_EXCERPT_BYTES ? text : `${Buffer.from(text).subarray(0, ANSWER_EXCERPT_BYTES).toString('utf8')}…`;
};

/**
 * Sends the deliveries this node holds (docs/architecture.md, "Webhooks"): those it wrote itself
 * (it takes them at once) and those it takes from the store when due, a retry or a delivery whose
 * node went away (`FOR UPDATE SKIP LOCKED`: each is sent by one node). Every attempt is recorded
 * with the delivery's next state in batched writes; the lease ends with it.
 */
export function createWorker(deps: WorkerDeps) {
  const { repo, clock } = deps;
  /**
   * Held, not yet sent, by destination host, each with the end of its lease, in arrival order.
   * By host so that a send looks only at hosts with room: one list scanned whole at every send
   * (URLs parsed again each time) made a backlog for one full host cost time quadratic in its
   * length (docs/benchmarks.md, "Webhooks").
   */
  const ready = new Map<string, Fifo>();
  let held = 0;
  /**
   * Hosts with deliveries in the store that did not fit in memory (`holds`, `spilled`), until a
   * poll that did not leave them out finds no more due: a poll is worth its query for them once
   * they have room again.
   */
  const waiting = new Set<string>();
  /**
   * Deliveries `holds` said yes to whose write is under way, per host: counted against the bound
   * until they are taken (or their write failed), since a burst's events are all asked about
   * before the first write of their batch ends.
   */
  const coming = new Map<string, number>();
  const queued = (host: string): number => {
    const q = ready.get(host);
    return q ? q.items.length - q.head : 0;
  };
  let inFlight = 0;
  let stopped = false;
  let polling = false;
  /** The last poll filled its room: the store has more due, asked for again as soon as there is room. */
  let more = false;
  let timer: NodeJS.Timeout | undefined;
  const idle = new Set<() => void>();
  /**
   * Attempts answered and being recorded. A send's slot is free once its answer is in; its record
   * goes in the next batched write meanwhile, so that a host's slots are not held through a store
   * commit (which bounded a host to its slots ÷ a commit's time: docs/benchmarks.md, "Webhooks").
   * Sends wait while this many are unrecorded: a slow store still slows sending down. Skips (a
   * sleeping host's deliveries) are recorded too but not counted: they are bounded by what this
   * node holds, and counting them made a sleeping host's backlog hold back every other host's sends.
   */
  const recording = new Set<Promise<void>>();
  let sendsRecording = 0;
  const maxRecording = deps.concurrency * 4;
  const background = (work: Promise<void>, counted: boolean) => {
    if (counted) sendsRecording += 1;
    const p = work.catch((err: unknown) => deps.log().warn({ err }, 'a webhook attempt could not be recorded')).finally(() => {
      recording.delete(p);
      if (!counted) return;
      sendsRecording -= 1;
      if (sendsRecording === maxRecording - 1) pump();
    });
    recording.add(p);
  };
  /** A delivery is sent only with this much of its lease left: its request (and time-out) ends before another node may take it. */
  const margin = Math.min(5000, deps.leaseMs / 4);
  /** Each webhook's host, parsed once per version of the webhook (the index replaces a record when it changes). */
  const hostOfWebhook = new WeakMap<WebhookRecord, string>();
  const hostFor = (w: WebhookRecord): string => {
    let host = hostOfWebhook.get(w);
    if (host === undefined) hostOfWebhook.set(w, (host = hostOf(w.spec.url)));
    return host;
  };

  const record = createBatcher<AttemptOutcome>((outcomes) => repo.recordAttempts(outcomes), { maxBatch: 500 });

  function hold(item: Held): void {
    const webhook = deps.index.get(item.d.webhookId);
    if (!webhook) return; // deleted meanwhile: its deliveries went with it
    const host = hostFor(webhook);
    let queue = ready.get(host);
    if (!queue) ready.set(host, (queue = { items: [], head: 0 }));
    queue.items.push(item);
    held += 1;
  }

  function take(deliveries: DeliveryRecord[], until: number): void {
    for (const d of deliveries) hold({ d, until });
    pump();
  }

  /**
   * Sends what the hosts have room for, host by host; a host served goes to the back, so that
   * when the node's own bound is what limits, hosts take turns.
   */
  function pump(): void {
    if (stopped) return;
    const now = clock.nowMs();
    for (const [host, queue] of [...ready]) {
      if (inFlight >= deps.concurrency || sendsRecording >= maxRecording) break;
      const sleeping = deps.hosts.sleepingUntil(host, now);
      let taken = 0;
      while (queue.head < queue.items.length && (sleeping || (inFlight < deps.concurrency && sendsRecording < maxRecording && deps.hosts.hasRoom(host)))) {
        const item = queue.items[queue.head] as Held;
        queue.items[queue.head++] = undefined as unknown as Held;
        taken += 1;
        held -= 1;
        // A lease about to end is let go: another node (or this one's next poll) takes it again.
        if (item.until - now < margin) continue;
        const webhook = deps.index.get(item.d.webhookId);
        if (!webhook) continue; // deleted meanwhile: its deliveries went with it
        // Disabled meanwhile: let go; the delivery waits in the store until the webhook is enabled.
        if (webhook.disabledReason !== null || webhook.spec.disabled) continue;
        // Its URL changed meanwhile to another host: it waits there.
        if (hostFor(webhook) !== host) { hold(item); continue; }
        if (sleeping) {
          background(skip(item.d, webhook, sleeping), false);
          continue;
        }
        inFlight += 1;
        deps.hosts.start(host);
        void deliver(item.d, webhook, host).finally(() => {
          inFlight -= 1;
          if (inFlight === 0 && held === 0) for (const w of idle) w();
          pump();
          // A backlog in the store (an outage's, a replay's, one that did not fit in memory) drains
          // at the sending rate, not a poll a second.
          if (!polling && (more || waiting.size > 0)) {
            const f = fullness();
            if (worthPolling(f)) void poll(f);
          }
        });
      }
      if (taken === 0) continue;
      ready.delete(host);
      if (queue.head === queue.items.length) continue;
      // The taken part of a long queue is dropped now and then, not at every send.
      if (queue.head > 1024 && queue.head * 2 > queue.items.length) {
        queue.items = queue.items.slice(queue.head);
        queue.head = 0;
      }
      ready.set(host, queue);
    }
  }

  /**
   * Adds the Standard Webhooks headers to a request just built for this delivery (its headers are
   * its own): set in place, after any of the webhook's own headers of the same names, where copies
   * of the request and its headers made V8 miss its store caches at every delivery (`perf`).
   */
  function sign(webhook: WebhookRecord, d: DeliveryRecord, r: OutgoingRequest): OutgoingRequest {
    const now = clock.nowMs();
    const secrets = [webhook.secret];
    if (webhook.previousSecret && webhook.previousSecretUntil && webhook.previousSecretUntil.getTime() > now) secrets.push(webhook.previousSecret);
    const timestamp = Math.floor(now / 1000);
    r.headers['webhook-id'] = d.id;
    r.headers['webhook-timestamp'] = String(timestamp);
    r.headers['webhook-signature'] = signatureHeader(secrets, d.id, timestamp, r.body);
    return r;
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
    const proven = ok && deps.hosts.isProbing(host);
    const sleeping = deps.hosts.finish(host, ok || result.refused, clock.nowMs());
    // The host answers again after a sleep: its backlog in the store is taken now, not at the next poll.
    if (proven) void poll();
    if (sleeping) deps.log().warn({ webhook: webhook.id, host }, 'webhook host answers mostly errors; deliveries to it wait a few seconds');
    background(settle(d, webhook, result, ok ? 'delivered' : 'failed', 0).then(() => {
      if (!context) return;
      const at = isoTime(clock.nowMs());
      for (const e of responseEvents(webhook, context, { sent: result.status !== null, ok, status: result.status, body: result.body, error: result.error }, at)) deps.publish(e);
    }), true);
  }

  /** Not sent: the host sleeps. Recorded, due again when it wakes, and said as Particle says it (`hook-error`). */
  async function skip(d: DeliveryRecord, webhook: WebhookRecord, until: number): Promise<void> {
    await settle(d, webhook, null, 'skipped', until);
    const context = await deps.context(d).catch(() => undefined);
    if (!context) return;
    const error = `Sleeping, too many errors from ${hostFor(webhook)}; trying again at ${new Date(until).toISOString()}`;
    for (const e of responseEvents(webhook, context, { sent: false, ok: false, status: null, body: '', error }, isoTime(clock.nowMs()))) deps.publish(e);
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

  /**
   * The webhooks whose host sleeps: the poll leaves their due deliveries in the store until it
   * wakes. Taken, each would only be skipped again, a write and a `hook-error` each: a backlog
   * (an outage's) went round at a poll's room every second, and its writes slowed every other
   * webhook's deliveries (docs/benchmarks.md, "Webhooks"). And the webhooks whose host woke but
   * has not answered 2xx since (`probing`): the poll takes one of their due deliveries at a time,
   * until one succeeds.
   */
  function webhooksOf(hosts: Set<string>): string[] {
    if (hosts.size === 0) return [];
    const ids: string[] = [];
    for (const w of deps.index.all()) if (hosts.has(hostFor(w))) ids.push(w.id);
    return ids;
  }

  /**
   * The hosts that hold their bound, and what the others hold: a poll leaves the full hosts' due
   * deliveries in the store, and its room is what the others leave. Counted with the full ones,
   * one host's backlog would keep every other host's retries in the store.
   */
  interface Fullness { full: Set<string>; open: number }
  function fullness(): Fullness {
    const full = new Set<string>();
    let open = held;
    for (const host of ready.keys()) {
      const n = queued(host);
      if (n < deps.holdPerHost) continue;
      full.add(host);
      open -= n;
    }
    return { full, open };
  }

  /**
   * Room for a poll, and something it could take: more due than the last poll's room, or the
   * backlog of a host that is neither full nor asleep (a poll would leave those out).
   */
  function worthPolling({ full, open }: Fullness): boolean {
    if (open >= deps.concurrency) return false;
    if (more) return true;
    const now = clock.nowMs();
    for (const host of waiting) if (!full.has(host) && !deps.hosts.sleepingUntil(host, now)) return true;
    return false;
  }

  /** `f`: the hosts' fullness, when the caller has just worked it out. */
  async function poll(f?: Fullness): Promise<void> {
    if (stopped || polling) return;
    const { full, open } = f ?? fullness();
    const room = deps.concurrency * 2 - inFlight - open;
    if (room <= 0) return;
    polling = true;
    try {
      const now = clock.nowMs();
      const until = now + deps.leaseMs;
      // Left out: the hosts asleep and the full ones.
      const left = deps.hosts.sleeping(now);
      for (const host of full) left.add(host);
      const due = await repo.claimDue(deps.node, new Date(now), new Date(until), room, webhooksOf(left), webhooksOf(deps.hosts.probing(now)));
      more = due.length === room;
      // Fewer than asked for: the hosts the poll did not leave out have nothing more due.
      if (!more) for (const host of waiting) if (!left.has(host)) waiting.delete(host);
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
    /**
     * Whether this node holds a new delivery for the webhook in memory: not when its host has
     * `holdPerHost` waiting. Then it is written without a lease, and a poll takes it once the
     * host's queue has room. Those wait while events keep coming faster than the host takes
     * them; sent in order, every delivery would go through the store then, each a write more,
     * when the store's time is what the node is short of (docs/webhooks.md, "When events come
     * faster than a receiver takes them").
     */
    holds(w: WebhookRecord): boolean {
      const host = hostFor(w);
      const promised = coming.get(host) ?? 0;
      if (queued(host) + promised >= deps.holdPerHost) return false;
      coming.set(host, promised + 1);
      return true;
    },
    /** The write of a delivery `holds` said yes to has ended (taken next, or failed). */
    written(w: WebhookRecord): void {
      const host = hostFor(w);
      const promised = (coming.get(host) ?? 0) - 1;
      if (promised > 0) coming.set(host, promised);
      else coming.delete(host);
    },
    /** A delivery for the webhook written for a later poll (`holds` said no). */
    spilled(w: WebhookRecord): void {
      waiting.add(hostFor(w));
    },
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
      const started = clock.nowMs();
      if (inFlight > 0) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, ms);
          idle.add(() => { clearTimeout(t); resolve(); });
        });
      }
      // The attempts answered are recorded before the store may close.
      if (recording.size > 0) {
        let t: NodeJS.Timeout | undefined;
        await Promise.race([Promise.allSettled([...recording]), new Promise<void>((resolve) => { t = setTimeout(resolve, Math.max(0, ms - (clock.nowMs() - started))); })]);
        clearTimeout(t);
      }
      const left = [...ready.values()].flatMap((q) => q.items.slice(q.head)).map((r) => r.d.id);
      ready.clear();
      held = 0;
      await repo.release(deps.node, left).catch(() => undefined);
    },
    stats: () => ({ inFlight, ready: held }),
  };
}

export type Worker = ReturnType<typeof createWorker>;
